package coord

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// defaultSessionTimeout is the session timeout requested when
// Config.SessionTimeout is zero. The server clamps it to
// [2*tickTime, 20*tickTime].
const defaultSessionTimeout = 10 * time.Second

// Config configures Connect, as etcd's clientv3.Config configures
// clientv3.New. Every field is optional: the zero Config connects over
// plain TCP without credentials, asks for a 10 s session timeout and logs
// to slog.Default().
type Config struct {
	// SessionTimeout is the requested session timeout (0: 10 s; negative:
	// ErrInvalidArgument). The server clamps it to [minSessionTimeout,
	// maxSessionTimeout], by default [2*tickTime, 20*tickTime];
	// Client.Lease reports the granted one. A session survives a
	// connection loss shorter than the granted timeout.
	SessionTimeout time.Duration

	// Username and Password, when set, authenticate the session with
	// ZooKeeper's digest scheme, credentials "USER:PASSWORD"
	// (zk.Conn.AddAuth, resent by go-zookeeper after every reconnect before
	// any other request; go-zookeeper has no SASL client), and make every
	// znode the client creates carry a creator-only ACL (scheme "auth", all
	// permissions for the session's identity), so that a crawl created with
	// credentials cannot be read or changed by a client without them
	// (ZooKeeper Programmer's Guide, "ZooKeeper access control using ACLs",
	// "Builtin ACL Schemes"). Both empty: no authentication, and znodes are
	// world:anyone with all permissions. Connect's errors (wrapping
	// ErrInvalidArgument): only one of them set, or a Username holding ':';
	// the password never appears in an error.
	Username, Password string

	// TLS, when not nil, makes Connect speak TLS to each server, verifying
	// its certificate against TLS.RootCAs and, unless TLS.ServerName is
	// set, the host name or IP address of that server in the connect string
	// (TLS 1.2 at least). Use it with the servers' secureClientPort
	// (ZooKeeper Administrator's Guide, "Quorum TLS" and "Client-Server
	// mutual authentication"; server side: Netty connection factory and
	// ssl.keyStore). nil: plain TCP.
	TLS *tls.Config

	// Logger receives coord's and go-zookeeper's log output (nil:
	// slog.Default()). go-zookeeper's routine messages (connected,
	// authenticated) go out at Debug, its failures at Info: they are
	// expected during connection loss and handled by coord.
	Logger *slog.Logger

	// Observer, when not nil, receives the duration and outcome of every
	// ZooKeeper request the Client makes (op: "get", "children", "exists",
	// "create", "set", "delete", "multi", "auth" (at Connect, with
	// Username)) and of every recipe step ("queue_claim",
	// "queue_complete", "queue_retry" (Claim.Reschedule), "queue_fail",
	// "queue_release", "group_step", "backlog_post"). It is called on the
	// request's goroutine and must be quick; metrics use it.
	Observer func(op string, d time.Duration, err error)

	// Owner is the worker id this client writes into the claims and
	// session fence markers it creates (shown by Queue.Claims as
	// ClaimInfo.Owner; default "").
	Owner string
}

// Client is a ZooKeeper client with session tracking. It wraps one
// *zk.Conn (go-zookeeper) and is safe for concurrent use.
type Client struct {
	conn    *zk.Conn
	connPtr atomic.Pointer[zk.Conn] // set right after zk.Connect returns; read by the event callback
	log     *slog.Logger
	chroot  string
	timeout time.Duration
	owner   string // Config.Owner
	clock   serverClock
	// observer is Config.Observer, nil when none.
	observer func(op string, d time.Duration, err error)
	// auth is the Config.Username authentication, nil when none; see acl.
	auth *auth

	mu            sync.Mutex
	state         State
	lastSessionID int64
	granted       time.Duration // session timeout granted at the latest handshake, as last logged
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
// concurrency.Session: a handle whose context is cancelled when that
// session ends. Ephemeral znodes created under it live exactly as long as
// it; the recipes bound to it (claims, fenced commits, Member) act only while
// it lives.
type Session struct {
	c      *Client
	id     int64
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// newSession returns the handle of session id of c.
func newSession(c *Client, id int64) *Session {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Session{c: c, id: id, ctx: ctx, cancel: cancel}
}

// Ctx returns a context cancelled when this session ends, as etcd's
// concurrency.Session.Ctx: when the server expired it (context.Cause then
// wraps ErrSessionExpired) or the client was closed (ErrClosed). A mere
// connection loss does not cancel it (the session may survive it). Derive
// the context of work that must stop with the session from it.
func (s *Session) Ctx() context.Context { return s.ctx }

// String returns the session id in ZooKeeper's hex notation, e.g.
// "0x1000a2b3c4d0000".
func (s *Session) String() string { return sessionHex(s.id) }

func (s *Session) alive() bool { return s.ctx.Err() == nil }

// done is Ctx().Done().
func (s *Session) done() <-chan struct{} { return s.ctx.Done() }

// end ends the session with err (ErrSessionExpired or ErrClosed); only the
// first call counts.
func (s *Session) end(err error) { s.cancel(err) }

// expired returns the error of a call that found s ended.
func (s *Session) expired(where string) error {
	return fmt.Errorf("%s: session %s: %w", where, s, ErrSessionExpired)
}

// Connect opens a ZooKeeper client and waits until the first session is
// established or ctx is done.
//
// servers is a ZooKeeper connect string, "host:port,host:port[/chroot]"
// (ZooKeeper Programmer's Guide, "Connecting"). go-zookeeper has no chroot
// support, so coord applies the chroot itself to every path the recipes use
// and creates the chroot znode if it is missing; paths
// in raw zk.Event values are absolute (with the chroot).
//
// cfg's zero fields take their defaults (see Config).
//
// Errors: ErrInvalidArgument for a malformed connect string, a negative
// session timeout or bad credentials (see Config.Username); ctx's error,
// naming the servers and the last dial error, when no session was
// established in time.
func Connect(ctx context.Context, servers string, cfg Config) (*Client, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = defaultSessionTimeout
	}
	if cfg.SessionTimeout < 0 {
		return nil, fmt.Errorf("coord: Connect: session timeout %v: must not be negative: %w", cfg.SessionTimeout, ErrInvalidArgument)
	}
	a, err := digestAuth(cfg.Username, cfg.Password)
	if err != nil {
		return nil, err
	}
	hosts, chroot, err := parseServers(servers)
	if err != nil {
		return nil, err
	}
	c := &Client{
		log:         cfg.Logger.With("component", "coord"),
		chroot:      chroot,
		timeout:     cfg.SessionTimeout,
		owner:       cfg.Owner,
		observer:    cfg.Observer,
		auth:        a,
		state:       StateDisconnected,
		sessWait:    make(chan struct{}),
		reconnectCh: make(chan struct{}),
		subs:        make(map[chan StateChange]struct{}),
		closedCh:    make(chan struct{}),
	}
	conn, err := c.dial(hosts, cfg)
	if err != nil {
		return nil, fmt.Errorf("coord: Connect %q: %w", servers, err)
	}
	c.conn = conn
	c.connPtr.Store(conn)
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("coord: Connect %q: %w", servers, err)
	}
	return c, nil
}

// start waits for the client's first session, then authenticates it
// (Config.Username) and creates the chroot znode.
func (c *Client) start(ctx context.Context) error {
	if _, err := c.Session(ctx); err != nil {
		if last := c.lastDial.Load(); last != nil {
			return fmt.Errorf("no session established (last attempt: %v): %w", *last, err)
		}
		return fmt.Errorf("no session established: %w", err)
	}
	if c.auth != nil {
		// Before any other request; go-zookeeper resends it on reconnect.
		_, err := call(ctx, c, "auth", func() (struct{}, error) {
			return struct{}{}, c.conn.AddAuth(c.auth.scheme, c.auth.credentials)
		}, nil)
		if err != nil {
			return fmt.Errorf("authenticating with scheme %s: %w", c.auth.scheme, err)
		}
	}
	if c.chroot != "" {
		if err := c.ensurePath(ctx, c.chroot); err != nil {
			return fmt.Errorf("create chroot %q: %w", c.chroot, err)
		}
	}
	return nil
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
	var id int64
	if ev.State == zk.StateHasSession {
		id = c.waitConn().SessionID()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		if c.cur != nil && c.cur.id != id {
			// go-zookeeper opened a new session after the old one expired
			// without us seeing StateExpired: report the expiry.
			c.expireLocked("zookeeper session expired (new session opened)", "new_session", sessionHex(id))
		}
		if c.cur == nil {
			c.cur = newSession(c, id)
			close(c.sessWait)
			c.sessWait = make(chan struct{})
			c.log.Info("zookeeper session established", "session", c.cur.String())
		}
		c.noteGrantedLocked()
		c.setStateLocked(StateConnected, id)
	case zk.StateExpired:
		if c.cur != nil {
			c.expireLocked("zookeeper session expired")
		}
	case zk.StateDisconnected:
		if c.state == StateConnected {
			c.setStateLocked(StateDisconnected, c.lastSessionID)
		}
	}
}

// noteGrantedLocked logs, once per change, a session timeout granted by the
// server that differs from the one asked for. c.mu must be held.
func (c *Client) noteGrantedLocked() {
	granted := c.waitConn().SessionTimeout()
	if granted == 0 || granted == c.granted {
		return
	}
	c.granted = granted
	if granted != c.timeout {
		c.log.Warn("zookeeper granted another session timeout than asked; the server expires the session after the granted one",
			"asked", c.timeout, "granted", granted, "session", sessionHex(c.waitConn().SessionID()))
	}
}

// expireLocked ends the current session as expired, logs msg with attrs
// and publishes StateExpired. c.mu must be held and c.cur set.
func (c *Client) expireLocked(msg string, attrs ...any) {
	old := c.cur
	c.cur = nil
	old.end(ErrSessionExpired)
	c.log.Warn(msg, append([]any{"session", old.String()}, attrs...)...)
	c.setStateLocked(StateExpired, old.id)
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

// Close ends the session (the server deletes its ephemeral znodes at once)
// and closes the connection. The current Session's context is cancelled
// with ErrClosed, and Subscribe channels receive StateClosed and close. It waits
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
