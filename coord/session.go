package coord

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultSessionTimeout is the session timeout requested when
// WithSessionTimeout is not given. The server clamps it to
// [2*tickTime, 20*tickTime].
const DefaultSessionTimeout = 10 * time.Second

// Option configures Connect.
type Option func(*options)

type options struct {
	timeout time.Duration
	logger  *slog.Logger
	dialer  zk.Dialer
	retry   RetryPolicy
	observe Observer
	auth    *Auth
}

// Observer receives the duration and outcome of every ZooKeeper request a
// Client makes (op: "get", "children", "exists", "create", "set", "delete",
// "multi") and of every queue recipe step ("queue_put", "queue_claim",
// "queue_complete", "queue_retry", "queue_fail", "queue_release"). It is
// called on the request's goroutine and must be quick; metrics use it.
type Observer func(op string, d time.Duration, err error)

// WithObserver installs an Observer (default none).
func WithObserver(f Observer) Option {
	return func(o *options) { o.observe = f }
}

// WithSessionTimeout sets the requested session timeout (default 10s). The
// server negotiates it into [2*tickTime, 20*tickTime]; a session survives a
// connection loss that lasts less than the timeout.
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithLogger routes coord's and go-zookeeper's log output to l (default
// slog.Default()). go-zookeeper's routine messages (connected,
// authenticated) go out at Debug, its failures at Info: they are expected
// during connection loss and handled by coord.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithDialer sets the dialer go-zookeeper uses for each server connection
// (default net.DialTimeout). Tests use it to route through a proxy;
// TLSDialer gives one that speaks TLS.
func WithDialer(d zk.Dialer) Option {
	return func(o *options) { o.dialer = d }
}

// WithRetryPolicy sets the retry policy the recipes use for idempotent
// operations after connection loss (default DefaultRetryPolicy).
func WithRetryPolicy(p RetryPolicy) Option {
	return func(o *options) { o.retry = p.normalized() }
}

// Client is a ZooKeeper client with session tracking. It wraps one
// *zk.Conn (go-zookeeper) and is safe for concurrent use.
type Client struct {
	conn    *zk.Conn
	connPtr atomic.Pointer[zk.Conn] // set right after zk.Connect returns; read by the event callback
	log     *slog.Logger
	chroot  string
	timeout time.Duration
	retry   RetryPolicy
	servers string
	// observer is the WithObserver hook, nil when none.
	observer Observer
	// auth is the WithAuth authentication, nil when none; see ACL.
	auth *Auth

	mu            sync.Mutex
	state         State
	lastSessionID int64
	cur           *Session      // live session, nil while none
	sessWait      chan struct{} // closed (and replaced) when a new session becomes current
	reconnectCh   chan struct{} // closed (and replaced) on each transition to Connected
	subs          map[chan StateChange]struct{}
	closed        bool
	closedCh      chan struct{}

	// held maps a claim path to the *Session of the in-process claim on it,
	// so that two goroutines sharing this Client never both take one item
	// (a NodeExists whose ephemeralOwner is our own session is otherwise
	// indistinguishable from our own create that was lost to connection loss).
	held sync.Map

	// lastDial is the error of the latest failed server connection attempt,
	// named in Connect's error when no session could be established.
	lastDial atomic.Pointer[error]
}

// Session is one ZooKeeper session of a Client, in the style of etcd's
// concurrency.Session: a handle whose Done channel is closed when that
// session ends. Ephemeral znodes created under it live exactly as long as it.
type Session struct {
	c       *Client
	id      int64
	started time.Time
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error
}

// ID returns the ZooKeeper session id (the ephemeralOwner of the session's
// ephemeral znodes).
func (s *Session) ID() int64 { return s.id }

// Done returns a channel closed when this session expires or the client is
// closed. It is not closed by a mere connection loss (the session may
// survive it).
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session is live, ErrSessionExpired after the
// server expired it, ErrClosed after Client.Close.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// String returns the session id in ZooKeeper's hex notation, e.g.
// "0x1000a2b3c4d0000".
func (s *Session) String() string { return sessionHex(s.id) }

// Client returns the client the session belongs to.
func (s *Session) Client() *Client { return s.c }

// Started returns when the client first observed the session.
func (s *Session) Started() time.Time { return s.started }

func (s *Session) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *Session) end(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	})
}

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }

// Connect opens a ZooKeeper client and waits until the first session is
// established or ctx is done.
//
// servers is a ZooKeeper connect string, "host:port,host:port[/chroot]"
// (ZooKeeper Programmer's Guide, "Connecting"). go-zookeeper has no chroot
// support, so coord applies the chroot itself to every path the recipes use
// and creates the chroot znode if it is missing; paths seen through Conn()
// and in raw zk.Event values are absolute (with the chroot).
//
// Errors: ErrInvalidArgument for a malformed connect string; ctx's error,
// naming the servers, when no session was established in time.
func Connect(ctx context.Context, servers string, opts ...Option) (*Client, error) {
	o := options{timeout: DefaultSessionTimeout, logger: slog.Default(), dialer: net.DialTimeout, retry: DefaultRetryPolicy}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.dialer == nil {
		o.dialer = net.DialTimeout
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("coord: Connect: session timeout %v: must be positive: %w", o.timeout, ErrInvalidArgument)
	}
	hosts, chroot, err := parseServers(servers)
	if err != nil {
		return nil, err
	}
	c := &Client{
		log:         o.logger.With("component", "coord"),
		chroot:      chroot,
		timeout:     o.timeout,
		retry:       o.retry,
		observer:    o.observe,
		auth:        o.auth,
		servers:     servers,
		state:       StateDisconnected,
		sessWait:    make(chan struct{}),
		reconnectCh: make(chan struct{}),
		subs:        make(map[chan StateChange]struct{}),
		closedCh:    make(chan struct{}),
	}
	dial := o.dialer
	recordingDial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := dial(network, address, timeout)
		if err != nil {
			c.lastDial.Store(&err)
		}
		return conn, err
	}
	if len(hosts) == 1 {
		// go-zookeeper sleeps 1s before redialing once it has tried every
		// listed server since its last success; with one server that is every
		// reconnect, which eats most of a short session timeout after a mere
		// connection drop. Listing it twice makes the first redial immediate.
		hosts = append(hosts, hosts[0])
	}
	conn, _, err := zk.Connect(hosts, o.timeout,
		zk.WithLogger(&zkLogger{l: o.logger.With("component", "go-zookeeper")}),
		zk.WithLogInfo(true),
		zk.WithDialer(recordingDial),
		zk.WithEventCallback(c.onEvent),
	)
	if err != nil {
		return nil, fmt.Errorf("coord: Connect %q: %w", servers, err)
	}
	c.conn = conn
	c.connPtr.Store(conn)

	if _, err := c.Session(ctx); err != nil {
		c.Close()
		if last := c.lastDial.Load(); last != nil {
			return nil, fmt.Errorf("coord: Connect %q: no session established (last attempt: %v): %w", servers, *last, err)
		}
		return nil, fmt.Errorf("coord: Connect %q: no session established: %w", servers, err)
	}
	if c.auth != nil {
		// Before any other request; go-zookeeper resends it on reconnect.
		_, err := call(ctx, c, "auth", func() (struct{}, error) {
			return struct{}{}, conn.AddAuth(c.auth.Scheme, c.auth.Credentials)
		}, nil)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("coord: Connect %q: authenticating with scheme %s: %w", servers, c.auth.Scheme, err)
		}
	}
	if chroot != "" {
		if err := c.ensurePath(ctx, chroot); err != nil {
			c.Close()
			return nil, fmt.Errorf("coord: Connect %q: create chroot %q: %w", servers, chroot, err)
		}
	}
	return c, nil
}

// parseServers splits a connect string into host:port list and chroot.
func parseServers(s string) ([]string, string, error) {
	hostPart, chroot := s, ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hostPart, chroot = s[:i], s[i:]
	}
	if chroot == "/" {
		chroot = ""
	}
	if chroot != "" {
		if err := validatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("coord: connect string %q: chroot: %w", s, err)
		}
	}
	var hosts []string
	for _, h := range strings.Split(hostPart, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, "", fmt.Errorf("coord: connect string %q: server %q: want host:port: %w", s, h, ErrInvalidArgument)
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, "", fmt.Errorf("coord: connect string %q: no servers: %w", s, ErrInvalidArgument)
	}
	return hosts, chroot, nil
}

// onEvent is go-zookeeper's event callback. It runs on go-zookeeper's
// connection goroutine, so it must not block: it only updates state and
// closes channels.
func (c *Client) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		conn := c.waitConn()
		id := conn.SessionID()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		if c.cur != nil && c.cur.id != id {
			// go-zookeeper opened a new session after the old one expired
			// without us seeing StateExpired: report the expiry.
			old := c.cur
			c.cur = nil
			old.end(ErrSessionExpired)
			c.log.Warn("zookeeper session expired (new session opened)", "session", old.String(), "new_session", sessionHex(id))
			c.setStateLocked(StateExpired, old.id)
		}
		if c.cur == nil {
			c.cur = &Session{c: c, id: id, started: time.Now(), done: make(chan struct{})}
			close(c.sessWait)
			c.sessWait = make(chan struct{})
			c.log.Info("zookeeper session established", "session", c.cur.String())
		}
		c.setStateLocked(StateConnected, id)
	case zk.StateExpired:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		if c.cur != nil {
			old := c.cur
			c.cur = nil
			old.end(ErrSessionExpired)
			c.log.Warn("zookeeper session expired", "session", old.String())
			c.setStateLocked(StateExpired, old.id)
		}
	case zk.StateDisconnected:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		if c.state == StateConnected {
			c.setStateLocked(StateDisconnected, c.lastSessionID)
		}
	}
}

// waitConn returns the *zk.Conn. The event callback can in principle run
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

// Session returns the current live session, waiting for one while the
// client has none (after an expiry, until go-zookeeper has opened the next).
// After expiry a later call returns the new session.
//
// Errors: ErrClosed after Close; ctx's error when ctx is done first.
func (c *Client) Session(ctx context.Context) (*Session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if s := c.cur; s != nil && s.alive() {
			c.mu.Unlock()
			return s, nil
		}
		w := c.sessWait
		c.mu.Unlock()
		select {
		case <-w:
		case <-c.closedCh:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// currentSession returns the live session or nil, without waiting.
func (c *Client) currentSession() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur.alive() {
		return c.cur
	}
	return nil
}

// liveSession returns the current session if its id is id and it is live.
func (c *Client) liveSession(id int64) *Session {
	if s := c.currentSession(); s != nil && s.id == id {
		return s
	}
	return nil
}

// Conn returns the underlying go-zookeeper connection, for operations coord
// does not wrap. Paths given to it are absolute: the chroot is not applied.
func (c *Client) Conn() *zk.Conn { return c.conn }

// Chroot returns the chroot of the connect string ("" if none).
func (c *Client) Chroot() string { return c.chroot }

// SessionTimeout returns the session timeout requested at Connect.
func (c *Client) SessionTimeout() time.Duration { return c.timeout }

// Logger returns the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// Done returns a channel closed when the client is closed.
func (c *Client) Done() <-chan struct{} { return c.closedCh }

// Close ends the session (the server deletes its ephemeral znodes at once)
// and closes the connection. The current Session's Done channel closes with
// ErrClosed, and Subscribe channels receive StateClosed and close. It waits
// at most about one second for the server (go-zookeeper's close timeout).
// Calling Close more than once is safe.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if c.cur != nil {
		c.cur.end(ErrClosed)
		c.cur = nil
	}
	c.setStateLocked(StateClosed, c.lastSessionID)
	for ch := range c.subs {
		delete(c.subs, ch)
		close(ch)
	}
	close(c.closedCh)
	c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
	}
}

func (c *Client) isClosed() bool {
	select {
	case <-c.closedCh:
		return true
	default:
		return false
	}
}

// zkLogger adapts slog to go-zookeeper's Printf-style Logger. A message
// equal to the previous one within dupWindow is logged at Debug only: with
// a single server Connect lists it twice (see there), so each reconnect
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
