package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// trapServer serves an endless crawler trap: every page links to 200 new
// unique URLs made by link(page, i).
func trapServer(t *testing.T, link func(page string, i int) string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		b.WriteString("<html><body>")
		for i := range 200 {
			fmt.Fprintf(&b, `<a href="%s">x</a>`, link(r.URL.Path, i))
		}
		b.WriteString("</body></html>")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Crawler traps are bounded by the quotas of docs/design.md "Quotas": what
// the crawl holds in ZooKeeper never passes them, the links over them are
// counted by reason in the worker's status node, and the crawl goes on
// fetching what it holds.
func TestQuotasBoundCrawlerTraps(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	randomPath := func(n int) string {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rand.IntN(len(alphabet))]
		}
		return string(b)
	}
	cases := []struct {
		name     string
		link     func(page string, i int) string
		tune     func(*config.Config)
		reason   string
		bound    func(p frontier.Pending) bool // what ZooKeeper may hold at any time
		minPages int
	}{
		{
			name:     "per host",
			link:     func(page string, i int) string { return fmt.Sprintf("%s/%d", strings.TrimSuffix(page, "/"), i) },
			tune:     func(c *config.Config) { c.MaxQueuedPerHost = 50 },
			reason:   frontier.DropPerHost,
			bound:    func(p frontier.Pending) bool { return p.Ready+p.Backlog <= 50 },
			minPages: 20,
		},
		{
			name:     "long URLs",
			link:     func(page string, i int) string { return "/l/" + strings.Repeat("a", 300) + fmt.Sprint(rand.Int()) },
			tune:     func(c *config.Config) { c.MaxURLLength = 200 },
			reason:   frontier.DropURLLength,
			bound:    func(p frontier.Pending) bool { return p.Ready+p.Backlog <= 1 },
			minPages: 1, // every link is dropped: only the seed is fetched
		},
		{
			name: "a new host per link",
			link: func(page string, i int) string { return fmt.Sprintf("http://x%d.trap.invalid/", rand.Int()) },
			tune: func(c *config.Config) {
				c.Scope = config.ScopeAny
				c.MaxQueuedTotal = 100
				c.MaxAttempts = 1
			},
			reason:   frontier.DropTotal,
			bound:    func(p frontier.Pending) bool { return p.Ready+p.Backlog <= 100 },
			minPages: 20,
		},
		{
			name: "random incompressible URLs",
			link: func(page string, i int) string { return "/r/" + randomPath(1500) },
			tune: func(c *config.Config) {
				c.MaxFrontierBytes = 1 << 20 // 256 KiB per group of 4
			},
			reason:   frontier.DropBytes,
			bound:    func(p frontier.Pending) bool { return p.Ready+p.Backlog <= (1<<20)/1500 },
			minPages: 5,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := trapServer(t, tc.link)
			cfg := testConfig()
			cfg.MaxDepth = -1
			cfg.Sitemaps, cfg.PageRequisites = false, false // links only: the bounds count them
			// Under a rate (ready window 4 x in-flight + 1, in-flight + 1
			// claims a key): Pending's ready-then-backlog read counts an
			// item completed between its two reads and the record admitted
			// in its place, and the faster a host's items turn over (16 x
			// window, 4 x claims without a rate) the more such reads in a
			// row go over by one or two.
			cfg.PerHostRatePerS = 50
			tc.tune(&cfg)
			name := strings.ReplaceAll("trap "+tc.name, " ", "-")
			c := newCrawl(t, zk.Addr(), name, cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{srv.URL + "/"})
			// Until the quota has bitten and the crawl went on past it (or a
			// generous deadline on a loaded machine); at least 2 s.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			started := time.Now()
			done := c.startWorker(ctx, "w1", func(o *Options) { o.ExitWhenDone = false })
			worst := frontier.Pending{}
			var st Status
			over := 0 // consecutive reads over the bound
			for ctx.Err() == nil {
				p, err := c.front.Pending(context.Background())
				if err == nil {
					// Pending reads the ready items, then the backlog: an
					// item completed in between and a record admitted in
					// its place are both counted. Such a read is off by a
					// few for an instant; a quota overrun stays.
					if !tc.bound(p) {
						if over++; over < 3 {
							continue
						}
						t.Errorf("ZooKeeper holds %+v, over the quota, in %d reads in a row", p, over)
						cancel()
						break
					}
					over = 0
					if p.Ready+p.Backlog > worst.Ready+worst.Backlog {
						worst = p
					}
				}
				if _, data, err := coord.Members(context.Background(), c.client, c.root); err == nil && data["w1"] != nil {
					_ = json.Unmarshal(data["w1"], &st)
				}
				if time.Since(started) > 2*time.Second && st.Dropped[tc.reason] > 0 && st.Pages >= int64(tc.minPages) {
					cancel()
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := <-done; err != nil {
				t.Fatalf("worker: %v", err)
			}
			pages := len(c.logs())
			t.Logf("%s: at most %d ready + %d backlog; %d pages fetched; dropped %v", tc.name, worst.Ready, worst.Backlog, pages, st.Dropped)
			if st.Dropped[tc.reason] == 0 {
				t.Errorf("no link dropped for %s; status dropped %v", tc.reason, st.Dropped)
			}
			if pages < tc.minPages {
				t.Errorf("only %d pages fetched: the crawl must go on with what it holds", pages)
			}
		})
	}
}

// A site of dead links cannot fill R/failed: past max_dead_letters a URL
// that fails for good is logged in the crawl log and counted, not kept.
func TestDeadLetterCap(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			for i := range 30 {
				fmt.Fprintf(w, `<a href="/dead/%d">x</a>`, i)
			}
		default:
			http.Error(w, "gone wrong", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxAttempts = 1
	cfg.MaxDeadLetters = 5
	cfg.Sitemaps, cfg.PageRequisites = false, false
	c := newCrawl(t, zk.Addr(), "deadcap", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
	c.runWorkers(1, 60*time.Second)
	failed, err := c.queue.Failed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, e := range c.logs() {
		if e.Status == 500 {
			lines++
		}
	}
	if len(failed) != 5 || lines != 30 {
		t.Fatalf("%d dead letters and %d crawl log lines of status 500; want 5 (the cap) and 30", len(failed), lines)
	}
}

// max_pages is counted durably (R/totals): a worker started after the cap
// was reached by another, now gone, fetches nothing (issue 10 item 12).
func TestMaxPagesSurvivesRestart(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := range 200 {
				fmt.Fprintf(w, `<a href="/p/%d">x</a>`, i)
			}
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxPages = 10
	cfg.PerHostMaxInFlight = 1
	cfg.Sitemaps, cfg.PageRequisites = false, false
	c := newCrawl(t, zk.Addr(), "maxpages", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
	c.runWorkers(1, 60*time.Second)
	first := len(c.logs())
	if first < 10 || first >= 200 {
		t.Fatalf("first worker logged %d lines; want the cap of 10 plus at most a heartbeat's overshoot", first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w9", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(c.logs()); n != first {
		t.Fatalf("a worker started after the cap fetched %d more pages; want none", n-first)
	}
}
