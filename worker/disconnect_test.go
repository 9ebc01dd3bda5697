package worker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// slowSite serves pages that take delay each and records the most requests
// it ever served at once.
type slowSite struct {
	srv            *httptest.Server
	mu             sync.Mutex
	active, maxAct int
	started        int
}

func newSlowSite(t *testing.T, delay time.Duration) *slowSite {
	s := &slowSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.active++
		s.started++
		s.maxAct = max(s.maxAct, s.active)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.active--
			s.mu.Unlock()
		}()
		select {
		case <-time.After(delay):
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("slow"))
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *slowSite) stats() (active, maxActive, started int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active, s.maxAct, s.started
}

// Issue 10 item 3: the claim holder's link to ZooKeeper is black-holed for
// 12 s with a 4 s session timeout while it fetches a page that takes 6 s.
// It must cancel that fetch before its session can expire and another worker
// takes the host over: the site never sees 2 requests at once
// (per_host_max_in_flight 1). Before: 2 at once (the cut-off worker kept
// fetching after its session had expired).
func TestBlackholedWorkerStopsFetching(t *testing.T) {
	t.Parallel() // waits on timeouts and slow pages, not on the CPU: run beside the other long waits
	zks := testenv.ZooKeeper(t)
	site := newSlowSite(t, 6*time.Second)
	var seeds []string
	for _, p := range []string{"/a", "/b", "/c", "/d"} {
		seeds = append(seeds, site.srv.URL+p)
	}
	cfg := testConfig()
	cfg.PerHostRatePerS = 0
	cfg.PerHostMaxInFlight = 1
	cfg.FetchTimeoutMS = 20000
	c := newCrawl(t, zks.Addr(), "blackhole", cfg, frontier.Layout{Shards: 2, Spread: 1}, seeds)
	proxies := map[string]*testenv.Proxy{"w1": testenv.ProxyFor(t, zks.Addr()), "w2": testenv.ProxyFor(t, zks.Addr())}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var dones []<-chan error
	for _, id := range []string{"w1", "w2"} {
		p := proxies[id]
		dones = append(dones, c.startWorker(ctx, id, func(o *Options) {
			o.Servers = p.Addr() + "," + p.Addr()
			o.SessionTimeout = 4 * time.Second
			o.QuietPeriod = 3 * time.Second
		}))
	}
	// Wait until a fetch is in progress, and cut off its claimer.
	var holder string
	for holder == "" {
		if ctx.Err() != nil {
			t.Fatal("no fetch started")
		}
		time.Sleep(100 * time.Millisecond)
		if a, _, _ := site.stats(); a == 0 {
			continue
		}
		st, err := c.queue.Stats(ctx)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			for _, cl := range s.Claims {
				holder = cl.Owner
			}
		}
	}
	holder, _, _ = strings.Cut(holder, "@")
	p, ok := proxies[holder]
	if !ok {
		t.Fatalf("claim owner %q is not w1 or w2", holder)
	}
	t.Logf("black-holing %s for 12 s", holder)
	p.Blackhole()
	time.Sleep(12 * time.Second)
	p.Heal()
	for i, d := range dones {
		if err := <-d; err != nil {
			t.Errorf("w%d: %v", i+1, err)
		}
	}
	_, maxAct, started := site.stats()
	if maxAct > 1 {
		t.Errorf("the site saw %d requests at once, want at most 1 (per_host_max_in_flight 1)", maxAct)
	}
	final, _ := finalStatus(c.logs())
	for _, s := range seeds {
		u, _ := frontier.Normalize(s)
		if final[u] != 200 {
			t.Errorf("%s: final status %d, want 200", u, final[u])
		}
	}
	t.Logf("%d requests, at most %d at once", started, maxAct)
}
