package worker

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// testConfig is a fast, loopback-permitting crawl config.
func testConfig() config.Config {
	c := config.Default()
	c.AllowPrivateNetworks = true
	c.PerHostRatePerS = 0
	c.PerHostMaxInFlight = 2
	c.WorkerConcurrency = 16
	c.RetryBackoffMS = 100
	c.FetchTimeoutMS = 5000
	c.MaxBodyBytes = 1 << 20
	return c
}

// A plain web crawled by 3 workers: exactly the ground-truth set, each URL
// logged once with status 200 and stored once in the WARC files.
func TestCrawlFetchesGroundTruthExactly(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 7, Hosts: 6, PagesPerHost: 40, LinksPerPage: 5, CrossHostShare: 0.3})
	cfg := testConfig()
	cfg.MaxDepth = -1
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	c := newCrawl(t, zk.Addr(), "plain", cfg, frontier.Layout{Shards: 16, Spread: 2}, web.Seeds())
	c.runWorkers(3, 90*time.Second)

	final, lines := finalStatus(c.logs())
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("crawl differs from the ground truth (%d URLs expected, %d logged):\n%s", len(truth), len(final), firstN(bad, 20))
	}
	for u, n := range lines {
		if n != 1 {
			t.Errorf("%s logged %d times, want once (no worker died)", u, n)
		}
	}
	robots := 0
	for u, n := range c.warcResponses() {
		if strings.HasSuffix(u, "/robots.txt") {
			robots++ // fetched by each worker that needs it, once per cache TTL
			continue
		}
		if n != 1 {
			t.Errorf("%s has %d WARC response records, want 1", u, n)
		}
	}
	if robots == 0 {
		t.Error("no robots.txt response in the WARC files")
	}
	st, err := c.queue.Pending(t.Context())
	if err != nil || st.Queued != 0 || st.Claimed != 0 {
		t.Fatalf("after the crawl: %+v, %v; want nothing queued or claimed", st, err)
	}
}

// The special pages: robots rules, depth, redirects (chain and loop), 404,
// 500-then-200 retry, non-HTML, oversized page, nofollow, meta robots, base
// href, and the calendar trap bounded by max_depth.
func TestCrawlSpecialPages(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{
		Seed: 3, Hosts: 2, PagesPerHost: 12, LinksPerPage: 3, Features: true,
		RobotsDisallow: []string{"/private/"}, SlowDelay: 300 * time.Millisecond, LargeBytes: 2 << 20,
	})
	cfg := testConfig()
	cfg.MaxDepth = 5
	cfg.PerHostMaxInFlight = 1
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: 5, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	// Spread 1 keeps each host's URLs in one FIFO shard, so the recorded
	// depths equal the breadth-first ground truth up to max_depth.
	c := newCrawl(t, zk.Addr(), "special", cfg, frontier.Layout{Shards: 8, Spread: 1}, web.Seeds())
	c.runWorkers(2, 90*time.Second)

	entries := c.logs()
	final, _ := finalStatus(entries)
	// A prefetched claim may be fetched before an earlier one of its host,
	// so a URL can first be found one hop deeper than breadth-first order
	// gives; at max_depth it is then not enqueued (docs/design.md, "Depth,
	// scope and the seen-set"). Every URL above max_depth must be exact.
	var bad []string
	edge := 0
	for _, d := range diffTruth(truth, final) {
		var u string
		if _, err := fmt.Sscanf(d, "missing %s", &u); err == nil && truth[u].Depth == cfg.MaxDepth {
			edge++
			continue
		}
		bad = append(bad, d)
	}
	if len(bad) > 0 {
		t.Fatalf("crawl differs from the ground truth (%d expected, %d logged):\n%s", len(truth), len(final), firstN(bad, 30))
	}
	if edge > len(truth)/5 {
		t.Fatalf("%d of %d URLs at max_depth missing: far more than reordering explains", edge, len(truth))
	}
	t.Logf("%d URLs at max_depth %d not reached (found one hop deeper first)", edge, cfg.MaxDepth)
	sawRobots := false
	for _, e := range entries {
		if e.Status == fetch.CodeRobotsPrecluded {
			sawRobots = true
		}
	}
	if !sawRobots {
		t.Errorf("no URL was logged as robots-precluded (%d)", fetch.CodeRobotsPrecluded)
	}
}

// Politeness across the cluster: 3 workers, 10 requests/s per host; the
// spacing measured at the server never beats the rate, including while the
// workers join and shard ownership moves.
func TestCrawlPolitenessHoldsAcrossWorkers(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 11, Hosts: 3, PagesPerHost: 25, LinksPerPage: 4})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 10
	cfg.PerHostBurst = 1
	cfg.PerHostMaxInFlight = 1
	c := newCrawl(t, zk.Addr(), "polite", cfg, frontier.Layout{Shards: 16, Spread: 2}, web.Seeds())
	c.runWorkers(3, 90*time.Second)

	const interval = 100 * time.Millisecond
	// With burst 1 and one request in flight the interval runs from one
	// request's arrival at the server to the start of the next
	// (fetch.Politeness.Reached), so a slow dial cannot squeeze the
	// server-side spacing.
	const slack = arrivalJitter
	byHost := map[string][]time.Time{}
	who := map[time.Time]string{} // request time -> the worker that logged its URL
	byURL := map[string]string{}
	for _, e := range c.logs() {
		byURL[e.URL] += fmt.Sprintf("%s@%s(%dms) ", e.Worker, e.TS.Format("05.000"), e.DurationMS)
	}
	for _, r := range web.Requests() {
		if r.Path == "/robots.txt" {
			continue // rate-limited too (TestRobotsAndSitemapsGoThroughPoliteness); left out here
		}
		byHost[r.Host] = append(byHost[r.Host], r.Time)
		who[r.Time] = r.Path + "[" + r.Time.Format("05.000") + "]=" + byURL["http://"+r.Host+r.Path]
	}
	defer func() {
		if t.Failed() {
			for _, r := range web.Requests() {
				t.Logf("%s %s %s %s", r.Time.Format("05.000000"), r.Host, r.Path, byURL["http://"+r.Host+r.Path])
			}
		}
	}()
	for host, times := range byHost {
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		if len(times) < 20 {
			t.Fatalf("host %s: only %d requests", host, len(times))
		}
		for k := 1; k <= 10; k++ {
			for i := 0; i+k < len(times); i++ {
				if span := times[i+k].Sub(times[i]); span < time.Duration(k)*interval-slack {
					t.Errorf("host %s: requests %d..%d (by %s..%s) span only %v, want >= %v (rate 10/s)", host, i, i+k, who[times[i]], who[times[i+k]], span, time.Duration(k)*interval)
				}
			}
		}
	}
}

// robots.txt Crawl-delay is stricter than the configured rate here, so it
// wins: requests to the host are at least the delay apart.
func TestCrawlDelayWinsOverAFasterRate(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 2, Hosts: 1, PagesPerHost: 8, LinksPerPage: 2, CrawlDelay: 300 * time.Millisecond})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 20
	cfg.PerHostMaxInFlight = 1
	c := newCrawl(t, zk.Addr(), "delay", cfg, frontier.Layout{Shards: 4, Spread: 2}, web.Seeds())
	c.runWorkers(2, 60*time.Second)
	var times []time.Time
	for _, r := range web.Requests() {
		if r.Path != "/robots.txt" {
			times = append(times, r.Time)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	if len(times) < 8 {
		t.Fatalf("%d requests, want >= 8", len(times))
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 270*time.Millisecond {
			t.Errorf("requests %d and %d only %v apart; Crawl-delay is 300ms", i-1, i, gap)
		}
	}
}

// A live config change: the per-host rate is raised mid-crawl and every
// worker applies it within a second, as the spacing measured at the server
// shows (5/s before: >= 200 ms apart; 25/s after: about 40 ms apart).
func TestLiveRateChangeShowsAtTheServer(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 4, Hosts: 2, PagesPerHost: 60, LinksPerPage: 4})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 5
	cfg.PerHostMaxInFlight = 1
	c := newCrawl(t, zk.Addr(), "live", cfg, frontier.Layout{Shards: 8, Spread: 2}, web.Seeds())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d1 := c.startWorker(ctx, "w1", nil)
	d2 := c.startWorker(ctx, "w2", nil)
	// 3 s: a host's first page waits one interval after its robots.txt
	// fetch, and after a handoff one more (issue 10 item 4), so 2 s left
	// too few gaps at 5/s to judge.
	time.Sleep(3 * time.Second)
	changed := time.Now()
	cfg.PerHostRatePerS = 25
	c.setConfig(cfg)
	for i, d := range []<-chan error{d1, d2} {
		if err := <-d; err != nil {
			t.Fatalf("worker w%d: %v", i+1, err)
		}
	}
	byHost := map[string][]time.Time{}
	for _, r := range web.Requests() {
		if r.Path != "/robots.txt" {
			byHost[r.Host] = append(byHost[r.Host], r.Time)
		}
	}
	for host, times := range byHost {
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		var before, after []time.Duration
		for i := 1; i < len(times); i++ {
			gap := times[i].Sub(times[i-1])
			switch {
			case times[i].Before(changed):
				before = append(before, gap)
			case times[i-1].After(changed.Add(time.Second)):
				after = append(after, gap)
			}
		}
		if len(before) < 3 || len(after) < 10 {
			t.Fatalf("host %s: %d gaps before the change, %d after it; the crawl ended too soon", host, len(before), len(after))
		}
		for _, g := range before {
			if g < 200*time.Millisecond-arrivalJitter {
				t.Errorf("host %s: gap %v before the change, rate 5/s allows >= 200ms", host, g)
			}
		}
		// The sends are 40 ms apart; an arrival may come up to
		// arrivalJitter late, shortening one gap and lengthening the next.
		slices.Sort(after)
		if med := after[len(after)/2]; med > 80*time.Millisecond || med < 38*time.Millisecond || after[0] < 40*time.Millisecond-arrivalJitter {
			t.Errorf("host %s: after the change the gaps are %v (median %v), want about 40ms (25/s) and never under it", host, after, med)
		}
	}
}
