package testenv

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// proxyEchoServer is a real TCP echo server on loopback, closed by t.Cleanup.
func proxyEchoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func proxyDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// proxyExpectEcho writes msg and expects it back within 2 s.
func proxyExpectEcho(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if msg != "" {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatalf("write %q: %v", msg, err)
		}
	}
	proxyExpectRead(t, c, msg)
}

func proxyExpectRead(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
		t.Fatalf("read = %q, %v; want %q", buf, err, want)
	}
}

// proxyExpectSilence asserts that nothing arrives on c for a short while and
// that c is still open (a read timeout, not EOF).
func proxyExpectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through blackhole = %q, %v; want a timeout", buf[:n], err)
	}
}

func TestProxyBlackholeHeal(t *testing.T) {
	t.Parallel()
	p := ProxyFor(t, proxyEchoServer(t))
	c1 := proxyDial(t, p.Addr())
	proxyExpectEcho(t, c1, "ping")

	p.Blackhole()
	if !p.Blackholed() {
		t.Fatal("Blackholed() = false after Blackhole")
	}
	if _, err := c1.Write([]byte("held1")); err != nil {
		t.Fatalf("write while blackholed: %v", err)
	}
	proxyExpectSilence(t, c1)
	// New connections are accepted and black-holed too.
	c2 := proxyDial(t, p.Addr())
	if _, err := c2.Write([]byte("held2")); err != nil {
		t.Fatalf("write on new conn while blackholed: %v", err)
	}
	proxyExpectSilence(t, c2)

	// Held bytes arrive after Heal, like TCP retransmission after a
	// partition ends; traffic then flows as before.
	p.Heal()
	proxyExpectRead(t, c1, "held1")
	proxyExpectRead(t, c2, "held2")
	proxyExpectEcho(t, c1, "again")
	proxyExpectEcho(t, c2, "again")
}

// TestProxyHalfOpen: while half-open, what the client sends is dropped
// (the target reads nothing) and what the target sends still arrives; Heal
// cuts the connection that lost bytes, and new connections flow again.
func TestProxyHalfOpen(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan string, 16) // what the target read
	push := make(chan string)    // what the target sends on its newest connection
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					got <- string(buf[:n])
				}
			}()
			go func() {
				for m := range push {
					if _, err := c.Write([]byte(m)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := ProxyFor(t, ln.Addr().String())
	c1 := proxyDial(t, p.Addr())
	if _, err := c1.Write([]byte("up1")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != "up1" {
		t.Fatalf("target read %q, want up1", m)
	}
	p.HalfOpen()
	if _, err := c1.Write([]byte("lost")); err != nil {
		t.Fatalf("write while half-open: %v", err)
	}
	push <- "down"
	proxyExpectRead(t, c1, "down")
	select {
	case m := <-got:
		t.Fatalf("target read %q through a half-open proxy; want nothing", m)
	case <-time.After(300 * time.Millisecond):
	}
	p.Heal()
	_ = c1.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c1.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read after Heal = %d bytes, nil; want the holed connection cut", n)
	}
	c2 := proxyDial(t, p.Addr())
	if _, err := c2.Write([]byte("up2")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "up2" {
			t.Fatalf("target read %q after Heal, want up2", m)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("nothing arrived at the target after Heal")
	}
}

func TestProxyCutAllAndClose(t *testing.T) {
	t.Parallel()
	p := ProxyFor(t, proxyEchoServer(t))
	c1 := proxyDial(t, p.Addr())
	proxyExpectEcho(t, c1, "ping")

	p.CutAll()
	_ = c1.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c1.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read after CutAll = %d bytes, nil; want the connection closed", n)
	}
	c2 := proxyDial(t, p.Addr())
	proxyExpectEcho(t, c2, "after cut")

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if p.Conns() != 0 {
		t.Errorf("Conns() after Close = %d, want 0", p.Conns())
	}
	// The proxied connection is gone. (Dialing the old address proves
	// nothing: another test's listener may take the freed port at once.)
	c2.SetDeadline(time.Now().Add(time.Second))
	if _, err := c2.Write([]byte("x")); err == nil {
		if _, err := c2.Read(make([]byte, 1)); err == nil {
			t.Error("a proxied connection still works after Close")
		}
	}
}

func TestProxyRejectsBadTarget(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"no-port", "192.0.2.1:80", "example.com:80"} {
		if p, err := NewProxy(target); err == nil {
			p.Close()
			t.Errorf("NewProxy(%q) succeeded", target)
		}
	}
	if err := ExpireSession(t.Context(), nil, time.Second); err == nil {
		t.Error("ExpireSession(nil proxy) succeeded")
	}
}

// TestExpireSession expires a real ZooKeeper session from outside the
// client: the client sees StateExpired, gets a new session id, and its
// ephemeral znode is gone.
func TestExpireSession(t *testing.T) {
	t.Parallel()
	s := ZooKeeper(t)
	p := ProxyFor(t, s.Addr())
	conn, events := zkConnect(t, []string{p.Addr()}, testSessionTimeout)
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create ephemeral /eph: %v", err)
	}
	oldID := conn.SessionID()

	if err := ExpireSession(t.Context(), p, testSessionTimeout); err != nil {
		t.Fatalf("ExpireSession: %v", err)
	}
	zkWaitState(t, events, zk.StateExpired, 10*time.Second)
	zkWaitState(t, events, zk.StateHasSession, 10*time.Second)
	if id := conn.SessionID(); id == oldID || id == 0 {
		t.Fatalf("SessionID() after expiry = %#x, want a new id (old %#x)", id, oldID)
	}
	ok, _, err := conn.Exists("/eph")
	if err != nil || ok {
		t.Fatalf("exists /eph after expiry = %v, %v; want false", ok, err)
	}
}

// TestCutAllSessionSurvives cuts the connection briefly: the client
// reconnects within the session timeout and keeps its session.
func TestCutAllSessionSurvives(t *testing.T) {
	t.Parallel()
	s := ZooKeeper(t)
	p := ProxyFor(t, s.Addr())
	// The proxy address is listed twice: go-zookeeper sleeps 1 s before
	// retrying once it has tried every address, which is close to the
	// 1.5 s session timeout; with two entries it redials at once.
	conn, events := zkConnect(t, []string{p.Addr(), p.Addr()}, testSessionTimeout)
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create ephemeral /eph: %v", err)
	}
	oldID := conn.SessionID()

	p.CutAll()
	zkWaitState(t, events, zk.StateDisconnected, 5*time.Second)
	zkWaitState(t, events, zk.StateHasSession, 5*time.Second)
	if id := conn.SessionID(); id != oldID {
		t.Fatalf("SessionID() after CutAll = %#x, want the same %#x", id, oldID)
	}
	// Check from a second, direct client that the ephemeral node survived
	// and still belongs to the first session.
	direct, _ := zkConnect(t, []string{s.Addr()}, testSessionTimeout)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var st *zk.Stat
	err := zkRetry(ctx, func() error {
		ok, stat, err := direct.Exists("/eph")
		if err == nil && !ok {
			return errors.New("/eph is gone")
		}
		st = stat
		return err
	})
	if err != nil {
		t.Fatalf("exists /eph after CutAll: %v", err)
	}
	if st.EphemeralOwner != oldID {
		t.Fatalf("/eph owner = %#x, want session %#x", st.EphemeralOwner, oldID)
	}
}
