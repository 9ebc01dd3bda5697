package fetch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolBoundsConnectionsPerHost: with MaxConnsPerHost 2, ten fetches
// at once to one host open at most two connections, and all succeed (the
// others wait for a pooled connection); a change of bounds swaps the pool
// and fetches go on.
func TestPoolBoundsConnectionsPerHost(t *testing.T) {
	var open, peak atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(30 * time.Millisecond)
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	f := New(Options{AllowPrivateNetworks: true, MaxConnsPerHost: 2, MaxIdleConns: 4})
	defer f.Close()
	run := func() {
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				if res, err := f.Fetch(context.Background(), srv.URL+"/"); err != nil || res.Status != 200 {
					t.Errorf("fetch %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	}
	run()
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d connections to one host at once, want at most MaxConnsPerHost 2", p)
	}
	if o := f.Options(); o.MaxConnsPerHost != 2 || o.MaxIdleConns != 4 {
		t.Fatalf("options %+v", o)
	}
	f.SetOptions(Options{AllowPrivateNetworks: true, MaxConnsPerHost: 3})
	if o := f.Options(); o.MaxIdleConns != MaxIdleConns {
		t.Fatalf("MaxIdleConns %d, want the default %d", o.MaxIdleConns, MaxIdleConns)
	}
	run()
}
