package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// siteServer serves a site of pages pages on loopback: "/" links to /p/1
// .. /p/<pages-1>, which have no links. It counts the page requests
// (robots.txt aside).
func siteServer(t *testing.T, pages int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := 1; i < pages; i++ {
				fmt.Fprintf(w, `<a href="/p/%d">x</a>`, i)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// budgetCrawl creates a crawl of a 50-page host (big) and an 8-page host
// (small) with max_pages_per_host 10 and action.
func budgetCrawl(t *testing.T, zkAddr, name, action string) (c *crawlEnv, cfg config.Config, big, small *httptest.Server, bigHits *atomic.Int64) {
	t.Helper()
	big, bigHits = siteServer(t, 50)
	small, _ = siteServer(t, 8)
	cfg = testConfig()
	cfg.MaxPagesPerHost = 10
	cfg.HostBudgetAction = action
	cfg.Sitemaps, cfg.PageRequisites = false, false
	c = newCrawl(t, zkAddr, name, cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{big.URL + "/", small.URL + "/"})
	return c, cfg, big, small, bigHits
}

// pagesOf counts the crawl log lines of srv's pages.
func pagesOf(c *crawlEnv, srv *httptest.Server) int {
	n := 0
	for _, e := range c.logs() {
		if strings.HasPrefix(e.URL, srv.URL+"/") {
			n++
		}
	}
	return n
}

// runBudgetCrawl runs worker w1 of a budgetCrawl until it is done, checks
// that exactly the budget of the big host and all of the small one were
// fetched, and returns w1's last status and the frontier's pending counts.
func runBudgetCrawl(t *testing.T, c *crawlEnv, big, small *httptest.Server, bigHits *atomic.Int64) (Status, frontier.Pending) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	status := watchStatus(ctx, c, "w1")
	if err := <-c.startWorker(ctx, "w1", nil); err != nil {
		t.Fatalf("worker: %v", err)
	}
	if n, m := pagesOf(c, big), pagesOf(c, small); n != 10 || m != 8 || bigHits.Load() != 10 {
		t.Fatalf("fetched %d pages of the big host (%d requests) and %d of the small one; want 10 (the budget) and all 8", n, bigHits.Load(), m)
	}
	p, err := c.front.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return status(), p
}

// watchStatus polls worker id's status node every 100 ms until ctx ends and
// returns a function giving the last status read.
func watchStatus(ctx context.Context, c *crawlEnv, id string) func() Status {
	var mu sync.Mutex
	var last Status
	go func() {
		for ctx.Err() == nil {
			if _, data, err := coord.Members(ctx, c.client, c.root); err == nil && data[id] != nil {
				var st Status
				if json.Unmarshal(data[id], &st) == nil {
					mu.Lock()
					last = st
					mu.Unlock()
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() Status {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// A host over max_pages_per_host with host_budget_action keep: exactly 10
// of its 50 pages are fetched while the other host is crawled fully; the
// crawl is done with the rest held in the backlog (exit-when-done agrees
// with frontier.Pending), the status node shows the host at budget, a new
// worker fetches none beyond the budget (the counts are durable), a
// raised budget resumes the held URLs and a switch to drop drops them.
func TestHostBudgetKeep(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	c, cfg, big, small, bigHits := budgetCrawl(t, zk.Addr(), "budget-keep", config.HostBudgetKeep)
	st, p := runBudgetCrawl(t, c, big, small, bigHits)
	if !p.Empty() || p.Backlog != 40 || p.Held != 40 {
		t.Fatalf("pending %+v; want done with the 40 other pages of the big host held", p)
	}
	if st.HostsAtBudget != 1 || st.HeldByBudget != 40 || st.Dropped[frontier.DropHostBudget] != 0 {
		t.Errorf("last status: %d hosts at budget, %d held, dropped %v; want 1, 40 and nothing for host_budget", st.HostsAtBudget, st.HeldByBudget, st.Dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Durable: a new worker loads the counts and fetches nothing.
	if err := <-c.startWorker(ctx, "w2", nil); err != nil {
		t.Fatal(err)
	}
	if n := pagesOf(c, big); n != 10 || bigHits.Load() != 10 {
		t.Fatalf("a worker started after the budget was reached fetched %d more pages of the host", n-10)
	}

	// A raised budget resumes the held URLs: 5 more, then done again.
	cfg.MaxPagesPerHost = 15
	c.setConfig(cfg)
	if err := <-c.startWorker(ctx, "w3", nil); err != nil {
		t.Fatal(err)
	}
	if n := pagesOf(c, big); n != 15 {
		t.Fatalf("after raising the budget to 15: %d pages of the host, want 15", n)
	}

	// Switched to drop: the next worker's steps drop the 35 held URLs.
	cfg.HostBudgetAction = config.HostBudgetDrop
	c.setConfig(cfg)
	status4 := watchStatus(ctx, c, "w4")
	if err := <-c.startWorker(ctx, "w4", nil); err != nil {
		t.Fatal(err)
	}
	p, err := c.front.Pending(context.Background())
	if st := status4(); err != nil || p.Backlog != 0 || st.Dropped[frontier.DropHostBudget] != 35 || pagesOf(c, big) != 15 {
		t.Fatalf("after switching to drop: pending %+v (%v), dropped %v, %d pages; want the 35 held URLs dropped", p, err, st.Dropped, pagesOf(c, big))
	}
}

// host_budget_action drop: the host's remaining backlog and new links are
// dropped and counted (host_budget), the crawl finishes with the backlog
// empty.
func TestHostBudgetDrop(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	c, _, big, small, bigHits := budgetCrawl(t, zk.Addr(), "budget-drop", config.HostBudgetDrop)
	st, p := runBudgetCrawl(t, c, big, small, bigHits)
	if !p.Empty() || p.Backlog != 0 || p.Held != 0 {
		t.Fatalf("pending %+v; want everything done, nothing held", p)
	}
	if st.Dropped[frontier.DropHostBudget] != 40 || st.HostsAtBudget != 1 || st.HeldByBudget != 0 {
		t.Errorf("last status: dropped %v, %d hosts at budget, %d held; want host_budget 40, 1 host, 0 held", st.Dropped, st.HostsAtBudget, st.HeldByBudget)
	}
}

// The budget holds across a worker stopped in the middle of the host's
// pages: the count is written with the moves, so the next worker fetches
// exactly what is left of the budget.
func TestHostBudgetSurvivesRestart(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	big, bigHits := siteServer(t, 50)
	cfg := testConfig()
	cfg.MaxPagesPerHost = 10
	cfg.PerHostRatePerS = 10 // 10 pages take about a second: time to stop in the middle
	cfg.PerHostMaxInFlight = 1
	cfg.Sitemaps, cfg.PageRequisites = false, false
	c := newCrawl(t, zk.Addr(), "budget-restart", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{big.URL + "/"})
	ctx1, stop := context.WithCancel(context.Background())
	done := c.startWorker(ctx1, "w1", func(o *Options) { o.ExitWhenDone = false })
	deadline := time.Now().Add(30 * time.Second)
	for bigHits.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first := pagesOf(c, big)
	if first < 5 || first >= 10 {
		t.Fatalf("the first worker fetched %d pages before it stopped; want 5..9", first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w2", nil); err != nil {
		t.Fatal(err)
	}
	if n := pagesOf(c, big); n != 10 || bigHits.Load() != 10 {
		t.Fatalf("%d pages (%d requests) of the host after the restart (%d by the first worker); want the budget, 10", n, bigHits.Load(), first)
	}
}
