package coord

// Workarounds for go-zookeeper/zk v1.0.4 (our patched copy in
// third_party/go-zookeeper-zk), all in this file, each with the upstream
// issue that would make it unnecessary. Drop one when upstream fixes it.
//
//  1. No context on requests (go-zookeeper/zk#12, open): call runs every
//     request on a goroutine of its own and returns when ctx ends; an
//     abandoned non-idempotent request is undone by an orphan handler.
//  2. No chroot (samuel/go-zookeeper#32; PRs #74 and #158 unmerged): abs
//     prefixes every recipe path with the connect string's chroot.
//  3. One second of sleep before redialing once every listed server was
//     tried (conn.go connect; no upstream issue found, see
//     samuel/go-zookeeper#159 for the reconnect delay): redialAtOnce lists a
//     single server twice.
//  4. A Printf-only Logger without levels (samuel/go-zookeeper PR #61 added
//     it; no upstream issue for levels found): zkLogger picks the level by
//     substring and drops the duplicate lines of 3.
//  5. The event callback may run before zk.Connect has returned the *Conn
//     (no upstream issue found): waitConn spins until it is stored.
//  6. Watches re-registered after a reconnect fail silently
//     (samuel/go-zookeeper#83, go-zookeeper/zk#83, open): watch loops also
//     re-read after every reconnect (reconnected), and keep one armed watch
//     per znode, since go-zookeeper keeps every watch channel until it
//     fires (fired).
//  7. A request whose write to a dying connection fails gets the raw socket
//     error, not ErrConnectionClosed (no upstream issue found):
//     isSocketError counts it as connection loss.
//  8. Data race on Conn.lastZxid (samuel/go-zookeeper#260; fix in
//     go-zookeeper/zk PR #35, unmerged): patched in third_party (atomic).
//  9. No way to tell when the server last heard from the client, nor which
//     session timeout it granted (no upstream issue): third_party adds
//     Conn.LastAck (send time of the latest answered request) and
//     Conn.SessionTimeout, exposed as Client.Lease.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// call runs fn (ZooKeeper operation op: "get", "children", "exists",
// "create", "set", "delete", "multi"; reported to Config.Observer) on
// its own goroutine so that the caller returns as soon as ctx is done
// (quirk 1). Non-idempotent calls pass orphan to undo an effect nobody will
// own (a claim): orphan is called, on another goroutine,
// exactly when call returns ctx.Err(); it receives fn's result once known,
// or ctx.Err() if fn was never started.
func call[T any](ctx context.Context, c *Client, op string, fn func() (T, error), orphan func(T, error)) (T, error) {
	var zero T
	if obs := c.observer; obs != nil {
		inner := fn
		fn = func() (T, error) {
			start := time.Now()
			v, err := inner()
			obs(op, time.Since(start), err)
			return v, err
		}
	}
	if err := ctx.Err(); err != nil {
		if orphan != nil {
			go orphan(zero, err)
		}
		return zero, err
	}
	if c.isClosed() {
		return zero, ErrClosed
	}
	if ctx.Done() == nil {
		v, err := fn()
		return v, c.mapErr(err)
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, c.mapErr(r.err)
	case <-ctx.Done():
		if orphan != nil {
			go func() {
				r := <-ch
				orphan(r.v, c.mapErr(r.err))
			}()
		}
		return zero, ctx.Err()
	}
}

// abs applies the chroot to a recipe path (quirk 2).
func (c *Client) abs(p string) string {
	if p == "/" {
		if c.chroot != "" {
			return c.chroot
		}
		return "/"
	}
	return c.chroot + p
}

// redialAtOnce returns the server list to hand go-zookeeper (quirk 3): it
// sleeps 1s before redialing once it has tried every listed server since
// its last success; with one server that is every reconnect, which eats
// most of a short session timeout after a mere connection drop. Listing it
// twice makes the first redial immediate.
func redialAtOnce(hosts []string) []string {
	if len(hosts) == 1 {
		return append(hosts, hosts[0])
	}
	return hosts
}

// dial starts go-zookeeper's connection to hosts (redialAtOnce applied)
// with our logger (quirk 4), the dialer (recording the last dial error for
// Connect's message) and the session event callback. It returns at once;
// the session is established in the background.
func (c *Client) dial(hosts []string, cfg Config) (*zk.Conn, error) {
	dialer := zk.Dialer(net.DialTimeout)
	if cfg.TLS != nil {
		dialer = tlsDialer(cfg.TLS)
	}
	recordingDial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := dialer(network, address, timeout)
		if err != nil {
			c.lastDial.Store(&err)
		}
		return conn, err
	}
	conn, _, err := zk.Connect(redialAtOnce(hosts), cfg.SessionTimeout,
		zk.WithLogger(&zkLogger{l: cfg.Logger.With("component", "go-zookeeper")}),
		zk.WithLogInfo(true),
		zk.WithDialer(recordingDial),
		zk.WithEventCallback(c.onEvent),
	)
	return conn, err
}

// waitConn returns the *zk.Conn (quirk 5). The event callback can run
// before zk.Connect has returned it to us; zk.Connect returns right after
// starting its goroutine, so this waits at most microseconds.
func (c *Client) waitConn() *zk.Conn {
	for {
		if conn := c.connPtr.Load(); conn != nil {
			return conn
		}
		runtime.Gosched()
		time.Sleep(50 * time.Microsecond)
	}
}

// zkLogger adapts slog to go-zookeeper's Printf-style Logger (quirk 4). A
// message equal to the previous one within dupWindow is logged at Debug
// only: with a single server listed twice (redialAtOnce), each reconnect
// attempt would otherwise print its failure twice.
type zkLogger struct {
	l *slog.Logger

	mu   sync.Mutex
	last string
	at   time.Time
}

// dupWindow is how close together two equal go-zookeeper messages must be
// for the second to count as the same attempt.
const dupWindow = 250 * time.Millisecond

// Printf logs one go-zookeeper message: failures at Info, the rest at Debug.
func (z *zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	lvl := slog.LevelDebug
	lower := strings.ToLower(msg)
	if (strings.Contains(lower, "fail") || strings.Contains(lower, "error") || strings.Contains(lower, "expired")) &&
		!strings.Contains(lower, "terminated: <nil>") {
		lvl = slog.LevelInfo
	}
	now := time.Now()
	z.mu.Lock()
	if msg == z.last && now.Sub(z.at) < dupWindow {
		lvl = slog.LevelDebug
	}
	z.last, z.at = msg, now
	z.mu.Unlock()
	z.l.Log(context.Background(), lvl, msg)
}

// reconnected returns a channel closed at the next transition to
// StateConnected (a new connection, with the same or a new session). Watch
// loops use it to re-read after every reconnect instead of trusting that
// go-zookeeper re-registered their watches (quirk 6).
func (c *Client) reconnected() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconnectCh
}

// fired reports, without blocking, whether a watch channel has delivered
// (go-zookeeper closes it after its one event). A watch that has not fired
// still stands, so a loop re-reading after a reconnect sets no second one
// (quirk 6).
func fired(ev <-chan zk.Event) bool {
	select {
	case <-ev:
		return true
	default:
		return false
	}
}

// isSocketError reports whether err is a raw socket error that
// go-zookeeper hands a request whose write to a dying connection failed
// (quirk 7): whether the server got the request is unknown, as after
// zk.ErrConnectionClosed.
func isSocketError(err error) bool {
	if errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// Lease is the server's side of this client's session as the client knows
// it: the session cannot expire before heard + timeout.
//
// heard is the latest moment at which a ZooKeeper server is known to have
// heard this client: when the latest request that a server answered was sent
// (a request's reply, a ping's reply (go-zookeeper pings every third of the
// session timeout) or the session handshake; quirk 9). Watch events do not
// count: under a one-way partition they keep arriving while the server
// hears nothing. It carries a monotonic clock reading, so time.Since(heard)
// is immune to wall-clock steps; the zero time before the first session.
//
// timeout is the session timeout the server granted at the latest handshake
// (ZooKeeper clamps the asked one, Config.SessionTimeout, to
// [minSessionTimeout, maxSessionTimeout], by default [2, 20] x tickTime:
// ZooKeeper Administrator's Guide), or the asked one before the first
// session. It can change at each reconnect (another server may clamp
// differently); the server expires the session this long after it last heard
// from the client.
func (c *Client) Lease() (heard time.Time, timeout time.Duration) {
	return c.conn.LastAck(), c.grantedTimeout()
}

// grantedTimeout is Lease's timeout.
func (c *Client) grantedTimeout() time.Duration {
	if d := c.conn.SessionTimeout(); d > 0 {
		return d
	}
	return c.timeout
}
