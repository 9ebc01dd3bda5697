package coord_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A brief connection loss keeps the session; a partition longer than the
// session timeout expires it, which Session.Done, Session.Err, State and
// Subscribe report, and the client goes on with a new session.
func TestSessionLossAndExpiry(t *testing.T) {
	t.Parallel()
	p, c := proxied(t, zkAddr(t), coord.Config{})
	ctx := testenv.Context(t, 60*time.Second)

	states := c.Subscribe(ctx)
	if first := <-states; first.State != coord.StateConnected {
		t.Fatalf("first state = %v, want Connected", first.State)
	}
	s1, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}

	p.CutAll()
	testenv.Eventually(t, 10*time.Second, "reconnect after CutAll", func() bool { return c.State() == coord.StateConnected && p.Conns() > 0 })
	if s2, err := c.Session(ctx); err != nil || s2 != s1 {
		t.Fatalf("after connection loss: session %v (err %v), want the same %v", s2, err, s1)
	}
	select {
	case <-s1.Ctx().Done():
		t.Fatal("session ended on mere connection loss")
	default:
	}

	if err := testenv.ExpireSession(ctx, p, testSessionTimeout); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s1.Ctx().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after expiry")
	}
	if !errors.Is(context.Cause(s1.Ctx()), coord.ErrSessionExpired) {
		t.Fatalf("Err() = %v, want ErrSessionExpired", context.Cause(s1.Ctx()))
	}
	s3, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s3.ID() == s1.ID() {
		t.Fatalf("new session has the old id %s", s3)
	}
	// The state stream showed Disconnected, Expired and Connected again.
	want := map[coord.State]bool{coord.StateDisconnected: false, coord.StateExpired: false}
	deadline := time.After(5 * time.Second)
	for !want[coord.StateDisconnected] || !want[coord.StateExpired] {
		select {
		case ch := <-states:
			if _, ok := want[ch.State]; ok {
				want[ch.State] = true
			}
		case <-deadline:
			t.Fatalf("state changes seen: %v", want)
		}
	}
	c.Close()
	select {
	case <-s3.Ctx().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after Close")
	}
	if !errors.Is(context.Cause(s3.Ctx()), coord.ErrClosed) {
		t.Fatalf("Err() after Close = %v", context.Cause(s3.Ctx()))
	}
	if _, err := c.Session(ctx); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("Session after Close: %v", err)
	}
}

// go-zookeeper's calls take no context; coord's return promptly when the
// context ends even while the server is unreachable.
func TestContextCancelIsPrompt(t *testing.T) {
	t.Parallel()
	p, c := proxied(t, zkAddr(t), coord.Config{})
	cfg := coord.Store(c, testRoot(t)+"/config")
	p.Blackhole()
	defer p.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := cfg.Read(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read during partition: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Read returned after %v", d)
	}
}

func TestConnectChroot(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c := connect(t, zkAddr(t)+root)
	cfg := coord.Store(c, "/config")
	ctx := testenv.Context(t, 20*time.Second)
	if _, err := cfg.Write(ctx, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	raw := connect(t, zkAddr(t))
	data, _, err := coord.Store(raw, root+"/config").Read(ctx)
	if err != nil || string(data) != "x" {
		t.Fatalf("chrooted write not at %s/config: %q, %v", root, data, err)
	}
	if _, err := coord.Connect(ctx, "nohostport", coord.Config{}); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("bad connect string: %v", err)
	}
	if _, err := coord.Connect(ctx, zkAddr(t), coord.Config{SessionTimeout: -time.Second}); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("negative session timeout: %v", err)
	}
}

// Every connection-loss error a call returns wraps ErrConnectionLoss,
// keeping go-zookeeper's error in the chain, and is wrapped only once;
// other errors are not connection loss.
func TestConnectionLossIsSentinel(t *testing.T) {
	t.Parallel()
	c := connect(t, zkAddr(t))
	for _, raw := range []error{zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionMoved,
		fmt.Errorf("write tcp: %w", syscall.EPIPE), io.EOF} {
		err := c.MapErr(raw)
		if !errors.Is(err, coord.ErrConnectionLoss) || !errors.Is(err, raw) || !coord.IsConnectionLoss(err) {
			t.Errorf("mapErr(%v) = %v; want it to wrap ErrConnectionLoss and the original", raw, err)
		}
		if again := c.MapErr(err); again.Error() != err.Error() {
			t.Errorf("mapErr twice = %v; want %v", again, err)
		}
	}
	for _, raw := range []error{zk.ErrNoNode, zk.ErrBadVersion, zk.ErrSessionExpired} {
		if err := c.MapErr(raw); errors.Is(err, coord.ErrConnectionLoss) {
			t.Errorf("mapErr(%v) = %v; not connection loss", raw, err)
		}
	}
}

// A Subscribe channel ends with its context: it is closed, and the client
// keeps nothing of it (100 ended subscriptions leave the count where it
// was).
func TestSubscribeEndsWithItsContext(t *testing.T) {
	t.Parallel()
	c := connect(t, zkAddr(t))
	before := c.Subscriptions()
	for i := range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		ch := c.Subscribe(ctx)
		cancel()
		deadline := time.After(5 * time.Second)
		for open := true; open; {
			select {
			case _, open = <-ch: // the current state, then closed
			case <-deadline:
				t.Fatalf("subscription %d: not closed 5 s after its context ended", i+1)
			}
		}
	}
	if after := c.Subscriptions(); after != before {
		t.Errorf("after 100 ended subscriptions: %d open, want %d", after, before)
	}
}
