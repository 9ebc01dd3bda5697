package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
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

// The claim holder's link to ZooKeeper is black-holed for 12 s while it
// fetches a page that takes 6 s; the server grants a 4 s session timeout
// (testenv's maximum). It must cancel that fetch before its session can
// expire and another worker takes the host over: the site never sees 2
// requests at once (per_host_max_in_flight 1). Asked 4 s, and asked 10 s:
// the cut-off must follow the granted timeout, not the asked one (before,
// asked 10 s gave a 6.7 s cut-off and 2 requests at once about 4 s after
// the partition).
func TestBlackholedWorkerStopsFetching(t *testing.T) {
	t.Parallel() // waits on timeouts and slow pages, not on the CPU: run beside the other long waits
	for _, asked := range []time.Duration{4 * time.Second, 10 * time.Second} {
		t.Run(fmt.Sprintf("asked=%v", asked), func(t *testing.T) {
			t.Parallel()
			testBlackholedWorkerStopsFetching(t, asked)
		})
	}
}

func testBlackholedWorkerStopsFetching(t *testing.T, asked time.Duration) {
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
			o.SessionTimeout = asked
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
		held, err := c.queue.Claims(ctx)
		if err != nil {
			continue
		}
		for _, cl := range held {
			holder = cl.Owner
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

// A process paused (SIGSTOP, a long GC) for longer than the cut-off limit
// resumes with fetch goroutines that may run before the disconnection
// guard's timer: the fetch itself must check that ZooKeeper answered
// recently. Here the guard does not run at all (the pipeline alone) and the
// client's link is black-holed past the cut-off: the item is released, not
// fetched. Before, it was fetched.
func TestStaleWorkerFetchesNothing(t *testing.T) {
	t.Parallel()
	zks := testenv.ZooKeeper(t)
	p := newPipeline(t, testConfig(), map[string]memPage{"http://a.example/": {status: 200, mime: "text/plain", body: "x"}})
	proxy := testenv.ProxyFor(t, zks.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := coord.Connect(ctx, proxy.Addr(), coord.Config{SessionTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p.w.client = client

	// A fresh answer first: on a loaded machine the last ping's answer can
	// be older than the cut-off (2/3 of the 2 s session) at any moment.
	for ctx.Err() == nil && time.Since(leaseHeard(client)) > 200*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	p.run(t, frontier.Item{URL: "http://a.example/"}, nil)
	if calls := p.calls.get(); !slices.Contains(calls, "fetch http://a.example/") {
		t.Fatalf("with ZooKeeper answering, calls = %v; want a fetch", calls)
	}
	p.calls.list = nil
	proxy.Blackhole()
	defer proxy.Heal()
	for time.Since(leaseHeard(client)) < cutOffLimit(leaseTimeout(client))+100*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	p.run(t, frontier.Item{URL: "http://a.example/"}, nil)
	calls := p.calls.get()
	if slices.Contains(calls, "fetch http://a.example/") || !slices.Contains(calls, "release") {
		t.Errorf("ZooKeeper silent for %v (cut-off %v): calls = %v; want a release and no fetch",
			time.Since(leaseHeard(client)).Round(time.Millisecond), cutOffLimit(leaseTimeout(client)), calls)
	}
}

// Each suspension of the claim loops waits for the session to be
// confirmed: with the session alive and the server answering, the wait
// returns at once, however often it runs. It holds no state subscription
// (coord's TestSubscribeEndsWithItsContext covers that a subscription ends
// with its context).
func TestAwaitSessionConfirmedReturnsForALiveSession(t *testing.T) {
	t.Parallel()
	zks := testenv.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := coord.Connect(ctx, zks.Addr(), coord.Config{SessionTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sess, err := client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{client: client, log: testLogger(t)}
	for i := range 100 {
		if !w.awaitSessionConfirmed(ctx, sess, time.Time{}) {
			t.Fatalf("suspension %d: session not confirmed", i+1)
		}
	}
}

// One-way partition: the worker's packets to ZooKeeper are dropped while
// the server's still arrive, watch events included (here from 30 watches
// on the worker's client, fired one after another by another client). The
// server hears nothing and will expire the session 4 s after it last did;
// the worker must cancel its 8 s fetch before that. Before, the events
// counted as word from the server and kept the connection "Connected": the
// fetch ran on past the session's expiry.
func TestOneWayPartitionedWorkerStopsFetching(t *testing.T) {
	t.Parallel()
	zks := testenv.ZooKeeper(t)
	site := newSlowSite(t, 8*time.Second)
	cfg := testConfig()
	cfg.PerHostRatePerS = 0
	cfg.PerHostMaxInFlight = 1
	cfg.FetchTimeoutMS = 20000
	c := newCrawl(t, zks.Addr(), "oneway", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{site.srv.URL + "/a"})
	proxy := testenv.ProxyFor(t, zks.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w, err := New(ctx, Options{
		Servers: proxy.Addr() + "," + proxy.Addr(), Crawl: c.name, OutDir: t.TempDir(), ID: "w1",
		SessionTimeout: 4 * time.Second, QuietPeriod: time.Second, HeartbeatInterval: 500 * time.Millisecond,
		StopTimeout: time.Second, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		proxy.Heal()
		stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("worker did not stop")
		}
	}()
	const watched = 30
	roots := make([]string, watched)
	for i := range roots {
		roots[i] = fmt.Sprintf("/oneway-watch/r%d", i)
		select { // the first list: the watch is armed
		case <-coord.WatchMembers(ctx, w.client, roots[i]):
		case <-ctx.Done():
			t.Fatal("no member list")
		}
	}
	for {
		if a, _, _ := site.stats(); a > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no fetch started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	heard := leaseHeard(w.client)
	proxy.HalfOpen()
	partitioned := time.Now()
	go func() { // a watch event every 150 ms for 4.5 s
		for i, root := range roots {
			select {
			case <-ctx.Done():
				return
			case <-time.After(150 * time.Millisecond):
			}
			_, _ = coord.Join(ctx, sess, root, fmt.Sprintf("m%d", i), nil)
		}
	}()
	expiry := heard.Add(4 * time.Second) // the earliest the server may expire the session
	for {
		if a, _, _ := site.stats(); a == 0 {
			break
		}
		if time.Since(partitioned) > 10*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := time.Now()
	t.Logf("fetch ended %v after the partition began, %v after the last answered request was sent",
		stopped.Sub(partitioned).Round(time.Millisecond), stopped.Sub(heard).Round(time.Millisecond))
	if !stopped.Before(expiry) {
		t.Errorf("the fetch ran until %v after the last answered request, past the session's earliest expiry (4 s)",
			stopped.Sub(heard).Round(time.Millisecond))
	}
}
