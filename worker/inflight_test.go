package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// slowHosts is a wide, slow web on loopback: hosts servers (one port each,
// so one politeness key each), every response after latency, with the
// start and end of every request recorded per host.
type slowHosts struct {
	mu       sync.Mutex
	starts   map[string][]time.Time // host -> request starts
	ends     map[string][]time.Time // host -> request ends
	inFlight map[string]int
	overlap  []string // hosts that had two requests at once
	servers  []*httptest.Server
}

func newSlowHosts(t *testing.T, hosts int, latency time.Duration) *slowHosts {
	t.Helper()
	s := &slowHosts{starts: map[string][]time.Time{}, ends: map[string][]time.Time{}, inFlight: map[string]int{}}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.starts[r.Host] = append(s.starts[r.Host], time.Now())
		if s.inFlight[r.Host]++; s.inFlight[r.Host] > 1 {
			s.overlap = append(s.overlap, r.Host)
		}
		s.mu.Unlock()
		time.Sleep(latency)
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(rw, "page %s\n", r.URL.Path)
		s.mu.Lock()
		s.inFlight[r.Host]--
		s.ends[r.Host] = append(s.ends[r.Host], time.Now())
		s.mu.Unlock()
	})
	for range hosts {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		s.servers = append(s.servers, srv)
	}
	return s
}

// seeds returns pages URLs per host.
func (s *slowHosts) seeds(pages int) []string {
	var out []string
	for _, srv := range s.servers {
		for p := range pages {
			out = append(out, fmt.Sprintf("%s/p%d", srv.URL, p))
		}
	}
	return out
}

// A wide, slow web: 200 hosts answering after 200 ms, 1 request/s each, 2
// pages per host, one worker with worker_concurrency 4. The politeness
// bound is one interval plus one response (1.2 s): the second page of
// every host waits one second from the send of its first (burst 1, one in
// flight). Items waiting for their host's turn hold a claim, not a request
// slot, so the worker keeps as many requests in flight as the hosts need
// (all 200 at the start) and the crawl ends near the bound; with
// worker_concurrency as a cap on items held it took 400 x 0.2 s / 4 = 20 s
// and more. The rate and the one-request-per-host cap hold at the server.
func TestInFlightFollowsDemandOnAWideSlowWeb(t *testing.T) {
	const hosts, pages, latency = 200, 2, 200 * time.Millisecond
	zk := testenv.ZooKeeper(t)
	web := newSlowHosts(t, hosts, latency)
	cfg := testConfig()
	cfg.PerHostRatePerS = 1
	cfg.PerHostBurst = 1
	cfg.PerHostMaxInFlight = 1
	cfg.WorkerConcurrency = 4
	cfg.ObeyRobots = false
	cfg.Sitemaps = false
	cfg.MaxDepth = 0
	c := newCrawl(t, zk.Addr(), "inflight-wide", cfg, frontier.DefaultLayout, web.seeds(pages))
	// The longest session timeout the test ZooKeeper grants (20 ticks of
	// 200 ms): 400 claims and completions in a second or two must not trip
	// the disconnection guard on a loaded machine (a tripped guard abandons
	// the items in flight, which are then fetched again).
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", func(o *Options) { o.SessionTimeout = 4 * time.Second }); err != nil || ctx.Err() != nil {
		t.Fatalf("worker: %v (context: %v)", err, ctx.Err())
	}

	if logs := c.logs(); len(logs) != hosts*pages {
		paths := map[string]int{}
		for _, e := range logs {
			u, _ := url.Parse(e.URL)
			paths[fmt.Sprintf("%s %d", u.Path, e.Status)]++
		}
		t.Logf("paths: %v", paths)
		t.Fatalf("%d crawl log lines, want %d", len(logs), hosts*pages)
	}
	web.mu.Lock()
	defer web.mu.Unlock()
	if len(web.overlap) > 0 {
		t.Errorf("hosts with two requests at once (per_host_max_in_flight 1): %v", web.overlap)
	}
	var first, last time.Time
	for host, starts := range web.starts {
		ends := web.ends[host]
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
		if len(starts) != pages {
			t.Errorf("host %s: %d requests, want %d", host, len(starts), pages)
			continue
		}
		for i := 1; i < len(starts); i++ {
			// Start to start at least the interval, as the server sees the
			// starts (strict politeness counts it from the send).
			if gap := starts[i].Sub(starts[i-1]); gap < time.Second-arrivalJitter {
				t.Errorf("host %s: request %d started %v after the previous one, want >= 1s (rate 1/s)", host, i, gap)
			}
		}
		if first.IsZero() || starts[0].Before(first) {
			first = starts[0]
		}
		if e := ends[len(ends)-1]; e.After(last) {
			last = e
		}
	}
	makespan := last.Sub(first)
	var hist [2][20]int // request starts by page, in 250 ms bins from the first
	for _, starts := range web.starts {
		for i, st := range starts[:min(len(starts), 2)] {
			hist[i][min(int(st.Sub(first)/(250*time.Millisecond)), 19)]++
		}
	}
	t.Logf("request starts per 250 ms, first pages: %v; second pages: %v", hist[0], hist[1])
	bound := time.Second + latency
	t.Logf("%d hosts x %d pages, %v latency, 1 request/s: first request to last response %v (politeness bound %v, %.2fx); request budget %d",
		hosts, pages, latency, makespan.Round(time.Millisecond), bound, float64(makespan)/float64(bound), RequestBudget(cfg))
	// With worker_concurrency capping the items held, 400 fetches of
	// 200 ms through 4 slots cannot take less than 20 s. Here the claim and
	// completion writes, not the politeness bound, set the pace on a loaded
	// two-core machine under -race (3-8 s seen), hence the margin.
	if limit := 10 * time.Second; makespan > limit {
		t.Errorf("makespan %v > %v (politeness bound %v): requests wait for slots", makespan, limit, bound)
	}
}

// The automatic request budget: bounded by descriptors (one per request,
// half of those after fdReserve) and memory (every
// body at max_body_bytes in half the RAM), never above autoMaxInFlight nor
// below worker_concurrency; an explicit max_in_flight wins.
func TestRequestBudget(t *testing.T) {
	cfg := config.Default()
	cfg.MaxBodyBytes = 1 << 20
	cases := []struct {
		name        string
		nofile, ram uint64
		floor, want int
	}{
		{"few descriptors", 1024, 64 << 30, 32, (1024 - fdReserve) / 2},
		{"descriptors bound", 3000, 64 << 30, 32, (3000 - fdReserve) / 2},
		{"memory bound", 1 << 20, 256 << 20, 32, 128},
		{"cap", 1 << 20, 1 << 40, 32, autoMaxInFlight},
		{"worker_concurrency floor", 300, 1 << 30, 32, 32},
		{"unknown limits", 0, 0, 1, (defaultNofile - fdReserve) / 2},
	}
	for _, tc := range cases {
		cfg.WorkerConcurrency = tc.floor
		if got := autoBudget(cfg, tc.nofile, tc.ram); got != tc.want {
			t.Errorf("%s: autoBudget(nofile %d, ram %d) = %d, want %d", tc.name, tc.nofile, tc.ram, got, tc.want)
		}
	}
	cfg.MaxInFlight = 7
	if got := RequestBudget(cfg); got != 7 {
		t.Errorf("RequestBudget with max_in_flight 7 = %d", got)
	}
	if got := claimCap(cfg); got != 7*config.ClaimsPerRequest {
		t.Errorf("claimCap with max_in_flight 7 = %d, want %d", got, 7*config.ClaimsPerRequest)
	}
}

// The keep-alive pool under a per-host rate: the descriptors the request
// budget leaves after fdReserve, within memory (idleConnBytes each in a
// sixteenth of RAM) and fetch.MaxIdleConns; never below 1. Without a rate
// also within the budget and unratedIdleConns.
func TestIdlePool(t *testing.T) {
	cases := []struct {
		name        string
		budget      int
		nofile, ram uint64
		rated       bool
		want        int
	}{
		{"descriptors bound", 4096, 9000, 64 << 30, true, 9000 - fdReserve - 4096},
		{"cap", 4096, 1 << 20, 64 << 30, true, fetch.MaxIdleConns},
		{"memory bound", 100, 1 << 20, 256 << 20, true, 256},
		{"budget takes every descriptor", 5000, 3000, 64 << 30, true, 1},
		{"unknown limits", 384, 0, 0, true, defaultNofile - fdReserve - 384},
		{"no rate: unratedIdleConns", 4096, 1 << 20, 64 << 30, false, unratedIdleConns},
		{"no rate: the budget", 300, 1 << 20, 64 << 30, false, 300},
	}
	for _, tc := range cases {
		if got := idlePool(tc.budget, tc.nofile, tc.ram, tc.rated); got != tc.want {
			t.Errorf("%s: idlePool(budget %d, nofile %d, ram %d, rated %v) = %d, want %d", tc.name, tc.budget, tc.nofile, tc.ram, tc.rated, got, tc.want)
		}
	}
}

// A claim cap under the takers' count (max_in_flight 2: 16 claim slots for
// 256 takers over 16 shards) still crawls every page: takers waiting for
// items of empty shards hold no claim slot, so the shards that have items
// get them (with slots taken before Take, the first takers held them all
// and the crawl waited for ever).
func TestSmallClaimCapCrawlsEveryShard(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 3, Hosts: 5, PagesPerHost: 12, LinksPerPage: 3, CrossHostShare: 0.2})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.MaxInFlight = 2
	cfg.WorkerConcurrency = 1
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	c := newCrawl(t, zk.Addr(), "smallcap", cfg, frontier.Layout{Shards: 16, Spread: 1}, web.Seeds())
	c.runWorkers(1, 60*time.Second)
	final, _ := finalStatus(c.logs())
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("crawl differs from the ground truth (%d URLs expected, %d logged):\n%s", len(truth), len(final), firstN(bad, 20))
	}
}
