package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyDialTimeout bounds the proxy's connect to its target.
const proxyDialTimeout = 5 * time.Second

// Proxy is a TCP proxy on 127.0.0.1 in front of one loopback target (for
// example a ZooKeeper client port) that can partition its clients from the
// target on demand, to test connection loss and session expiry from outside
// the client, as they happen in production. Point the client at Addr()
// instead of the target.
//
// Hand-written (about 200 lines) because the available TCP proxies for
// tests (e.g. Shopify's toxiproxy) run as separate servers with an HTTP
// API; this one needs neither.
//
// Methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	log    *slog.Logger
	wg     sync.WaitGroup

	mu         sync.Mutex
	open       chan struct{} // closed while traffic flows; replaced by Blackhole
	blackholed bool
	halfOpen   bool          // client->server bytes dropped (HalfOpen)
	whole      chan struct{} // closed while client->server traffic flows; replaced by HalfOpen
	conns      map[*proxyConn]struct{}
	closed     bool
}

// proxyConn is one client connection and its upstream connection.
type proxyConn struct {
	client net.Conn
	server net.Conn // nil until dialed; guarded by Proxy.mu
	// gap is set once HalfOpen dropped some of the client's bytes; the
	// stream to the server has a hole, so Heal cuts the connection.
	gap atomic.Bool
	// ctx is cancelled when the connection is closed (cut, ended, or
	// proxy closed); it also cancels a dial in progress.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// NewProxy listens on a free 127.0.0.1 port and forwards every accepted
// connection to target ("host:port"; the host must be a loopback address or
// "localhost", since tests never send traffic elsewhere). Traffic flows
// until Blackhole. Call Close when done. Errors name the target and the
// reason.
func NewProxy(target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("testenv: proxy target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("testenv: proxy target %q: host must be a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testenv: proxy for %q: listen: %w", target, err)
	}
	open, whole := make(chan struct{}), make(chan struct{})
	close(open)
	close(whole)
	p := &Proxy{
		target: target,
		ln:     ln,
		log:    slog.Default().With("proxy", ln.Addr().String(), "target", target),
		open:   open,
		whole:  whole,
		conns:  make(map[*proxyConn]struct{}),
	}
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// ProxyFor is NewProxy for a test or benchmark: it calls t.Fatal on error
// and registers Close with t.Cleanup.
func ProxyFor(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Addr returns the proxy's listening address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Blackhole partitions clients from the target: existing connections stop
// forwarding bytes in both directions, and do not pass on a close from
// either side, but stay open; new connections are accepted but not
// forwarded (the proxy does not even dial the target). Bytes already read
// are held, not dropped, and delivered after Heal, as TCP retransmission
// would deliver them after a partition ends. Blackholing twice is a no-op.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.blackholed {
		p.open = make(chan struct{})
		p.blackholed = true
		p.log.Debug("proxy blackholed")
	}
}

// HalfOpen partitions one way: the bytes clients send are read and dropped
// (lost, as by a one-way network partition or a firewall dropping one
// direction), a close from a client is not passed on, while everything the
// target sends, a close included, is still delivered. A ZooKeeper server
// behind it hears nothing from its clients and expires their sessions,
// while the clients keep receiving its watch events. New connections are
// dialed as usual (the target sees a connection but no bytes). Healing cuts
// every connection that lost bytes, since its stream to the target has a
// hole. HalfOpen on a half-open proxy is a no-op; a Blackhole meanwhile
// still stops both directions.
func (p *Proxy) HalfOpen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.halfOpen {
		p.whole = make(chan struct{})
		p.halfOpen = true
		p.log.Debug("proxy half-open: client bytes dropped")
	}
}

// Heal ends a Blackhole and a HalfOpen: held bytes and closes are
// delivered and traffic flows again; connections that lost bytes while
// half-open are cut. Healing a flowing proxy is a no-op.
func (p *Proxy) Heal() {
	p.mu.Lock()
	if p.blackholed {
		close(p.open)
		p.blackholed = false
		p.log.Debug("proxy healed")
	}
	var holed []*proxyConn
	if p.halfOpen {
		close(p.whole)
		p.halfOpen = false
		for c := range p.conns {
			if c.gap.Load() {
				holed = append(holed, c)
			}
		}
		p.log.Debug("proxy whole again", "cut", len(holed))
	}
	p.mu.Unlock()
	for _, c := range holed {
		p.closeConn(c)
	}
}

// Blackholed reports whether the proxy is partitioned (see Blackhole).
func (p *Proxy) Blackholed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackholed
}

// CutAll closes every current connection, both the client and the target
// side, at once: a brief connection loss. New connections are accepted as
// usual, so a ZooKeeper client reconnects and keeps its session if it gets
// back within the session timeout. Note go-zookeeper/zk (v1.0.4) sleeps 1 s
// before retrying once it has tried every address it was given, so with a
// single proxy address use a session timeout well above 1 s (or list the
// proxy address twice) for the session to survive reliably.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		p.closeConn(c)
	}
	p.log.Debug("proxy cut all connections", "count", len(conns))
}

// Conns returns the number of client connections currently open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CutAll()
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("testenv: close proxy %s: %w", p.Addr(), err)
	}
	return nil
}

// ExpireSession expires the ZooKeeper sessions of every client connected
// through p: it blackholes p for 2*sessionTimeout + 500 ms, long enough for
// the server to expire a session of that (negotiated) timeout, then heals.
// The client learns of the expiry when it reconnects after the heal
// (go-zookeeper/zk reports zk.StateExpired and opens a new session). If ctx
// ends first, it heals and returns ctx.Err(). sessionTimeout must be
// positive.
func ExpireSession(ctx context.Context, p *Proxy, sessionTimeout time.Duration) error {
	if p == nil {
		return errors.New("testenv: ExpireSession: proxy is nil")
	}
	if sessionTimeout <= 0 {
		return fmt.Errorf("testenv: ExpireSession: sessionTimeout=%v: must be positive", sessionTimeout)
	}
	p.Blackhole()
	defer p.Heal()
	t := time.NewTimer(2*sessionTimeout + 500*time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gate returns a channel that is closed while traffic may flow.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

// upstream returns whether client->server bytes are dropped now (HalfOpen)
// and a channel closed when that ends.
func (p *Proxy) upstream() (dropping bool, whole <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.halfOpen, p.whole
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.log.Warn("proxy accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		pc := &proxyConn{client: c, ctx: ctx, cancel: cancel}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		p.conns[pc] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.serve(pc) })
	}
}

// closeConn closes both sides of c once.
func (p *Proxy) closeConn(c *proxyConn) {
	c.once.Do(func() {
		c.cancel()
		_ = c.client.Close()
		p.mu.Lock()
		if c.server != nil {
			_ = c.server.Close()
		}
		p.mu.Unlock()
	})
}

// serve dials the target once traffic may flow and pumps bytes both ways
// until either side ends or the connection is cut.
func (p *Proxy) serve(c *proxyConn) {
	defer func() {
		p.closeConn(c)
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	select {
	case <-p.gate():
	case <-c.ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, proxyDialTimeout)
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		p.log.Debug("proxy dial failed", "err", err)
		return
	}
	p.mu.Lock()
	select {
	case <-c.ctx.Done(): // cut while dialing
		p.mu.Unlock()
		_ = server.Close()
		return
	default:
	}
	c.server = server
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { p.pump(c, server, c.client, true) })
	wg.Go(func() { p.pump(c, c.client, server, false) })
	wg.Wait()
}

// pump copies src to dst, waiting at the gate before delivering each chunk
// and before delivering the end of the stream, so a blackholed connection
// neither forwards bytes nor closes. In the client->server direction (up)
// of a half-open proxy, chunks are dropped and the end of the stream is
// held until the proxy is whole again. When src ends, both sides are
// closed.
func (p *Proxy) pump(c *proxyConn, dst, src net.Conn, up bool) {
	defer p.closeConn(c)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		select {
		case <-p.gate():
		case <-c.ctx.Done():
			return
		}
		if dropping, whole := p.upstream(); up && dropping {
			if n > 0 {
				c.gap.Store(true)
			}
			if rerr == nil {
				continue
			}
			select { // hold the client's close until Heal (which cuts c)
			case <-whole:
			case <-c.ctx.Done():
			}
			return
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}
