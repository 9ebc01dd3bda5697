package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBlockedAddr(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.255.255.254", "::1", "0.0.0.0", "::", "0.1.2.3",
		"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd12:3456::1",
		"169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0",
		"224.0.0.1", "239.255.255.250", "ff02::1", "ff05::2",
		"100.64.0.1", "100.127.255.255", "255.255.255.255", "240.0.0.1", "198.18.0.1", "192.0.0.8",
		"::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::808:808", "64:ff9b:1:ffff::1",
		"fec0::1", "::127.0.0.1",
	}
	public := []string{"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "192.169.0.1", "2606:4700::1111", "::ffff:1.1.1.1", "64:ff9b::808:808"}
	for _, s := range blocked {
		if b, reason := BlockedAddr(netip.MustParseAddr(s)); !b || reason == "" {
			t.Errorf("BlockedAddr(%s) = %v, %q; want blocked", s, b, reason)
		}
	}
	for _, s := range public {
		if b, reason := BlockedAddr(netip.MustParseAddr(s)); b {
			t.Errorf("BlockedAddr(%s) = blocked (%s); want allowed", s, reason)
		}
	}
	if b, _ := BlockedAddr(netip.Addr{}); !b {
		t.Error("invalid address not blocked")
	}
}

// countingServer is a loopback server that counts its requests.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestSSRFGuardLoopback(t *testing.T) {
	srv, hits := countingServer(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]

	guarded := newFetcher(t, Options{})
	for _, u := range []string{
		srv.URL + "/",                   // 127.0.0.1 literal
		"http://localhost" + port + "/", // a name resolving to loopback: checked at dial time
		"http://0.0.0.0" + port + "/",   // reaches the local host on Linux
	} {
		_, err := guarded.Fetch(context.Background(), u)
		if Code(err) != CodeBlockedByUser || !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s: err %v (code %d), want code %d and ErrBlockedAddress", u, err, Code(err), CodeBlockedByUser)
		}
		if Retryable(Code(err)) {
			t.Errorf("%s: blocked fetch is retryable", u)
		}
		if err != nil && !strings.Contains(err.Error(), "allow_private_networks") {
			t.Errorf("%s: error %q does not name the setting allow_private_networks", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server received %d requests through the guard", n)
	}

	allowed := newFetcher(t, Options{AllowPrivateNetworks: true})
	for _, u := range []string{srv.URL + "/", "http://localhost" + port + "/"} {
		res, err := allowed.Fetch(context.Background(), u)
		if err != nil || res.Status != 200 {
			t.Errorf("%s with private networks allowed: %v", u, err)
		}
	}
}

func TestSSRFGuardPooledConnectionAfterDisallow(t *testing.T) {
	srv, hits := countingServer(t)
	f := newFetcher(t, Options{AllowPrivateNetworks: true})
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	o := f.Options()
	o.AllowPrivateNetworks = false
	f.SetOptions(o)
	for i := 0; i < 3; i++ {
		_, err := f.Fetch(context.Background(), srv.URL)
		if Code(err) != CodeBlockedByUser {
			t.Fatalf("after disallow: err %v (code %d), want %d", err, Code(err), CodeBlockedByUser)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want 1 (only the one before the switch)", n)
	}
}

// A connection busy while private networks are disallowed goes back to the
// pool afterwards; the next fetch must still refuse it (GotConn re-check).
func TestSSRFGuardConnectionInUseDuringSwitch(t *testing.T) {
	var hits atomic.Int32
	inHandler := make(chan struct{})
	proceed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/slow" {
			close(inHandler)
			<-proceed
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	f := newFetcher(t, Options{AllowPrivateNetworks: true})
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(context.Background(), srv.URL+"/slow")
		done <- err
	}()
	<-inHandler
	o := f.Options()
	o.AllowPrivateNetworks = false
	f.SetOptions(o) // the busy connection is not idle, so it is not closed here
	// A fetch now needs a new connection, which the dial-time guard refuses.
	// (It also clears the transport's "close newly idle connections" flag
	// that SetOptions' CloseIdleConnections set, so the busy connection
	// really goes back to the pool below.)
	if _, err := f.Fetch(context.Background(), srv.URL+"/meanwhile"); Code(err) != CodeBlockedByUser {
		t.Fatalf("meanwhile: err %v (code %d), want %d", err, Code(err), CodeBlockedByUser)
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the transport put the connection back in the pool
	_, err := f.Fetch(context.Background(), srv.URL+"/next")
	if Code(err) != CodeBlockedByUser {
		t.Fatalf("err %v (code %d), want %d", err, Code(err), CodeBlockedByUser)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}
}
