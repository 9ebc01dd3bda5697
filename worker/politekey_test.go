package worker

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// sharedServer is several HTTP servers on 127.0.0.1 (one port each: several
// hosts by the host key, one by the domain key, which drops the port and
// keeps an IP address whole) that record, across all of them, when each
// request arrived and how many were in flight at once.
type sharedServer struct {
	srvs  []*httptest.Server
	bases []string // each server's URL as the crawl names it

	mu          sync.Mutex
	arrivals    []time.Time // of page requests (not robots.txt)
	inFlight    int
	maxInFlight int
	robots      map[int]string // server -> its robots.txt; none: 404
}

// newSharedServer starts n servers of pages /p/0../p/<pages-1>, each page
// linking to the next two pages on every server; each response takes hold.
// name(i) is the host name server i is known by (it listens on 127.0.0.1).
func newSharedServer(t *testing.T, n, pages int, hold time.Duration, name func(i int) string) *sharedServer {
	s := &sharedServer{}
	for i := range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			if robots, ok := s.robots[i]; ok && r.URL.Path == "/robots.txt" {
				s.mu.Unlock()
				w.Write([]byte(robots))
				return
			}
			if r.URL.Path != "/robots.txt" {
				s.arrivals = append(s.arrivals, time.Now())
			}
			s.inFlight++
			s.maxInFlight = max(s.maxInFlight, s.inFlight)
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				s.inFlight--
				s.mu.Unlock()
			}()
			time.Sleep(hold)
			var i int
			if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil {
				http.NotFound(w, r) // robots.txt, sitemap.xml
				return
			}
			w.Header().Set("Content-Type", "text/html")
			var b strings.Builder
			b.WriteString("<html><body>")
			for _, base := range s.bases {
				for j := i + 1; j <= i+2 && j < pages; j++ {
					fmt.Fprintf(&b, `<a href="%s/p/%d">p</a>`, base, j)
				}
			}
			b.WriteString("</body></html>")
			w.Write([]byte(b.String()))
		}))
		t.Cleanup(srv.Close)
		s.srvs = append(s.srvs, srv)
		s.bases = append(s.bases, strings.Replace(srv.URL, "127.0.0.1", name(i), 1))
	}
	return s
}

func (s *sharedServer) seeds() []string {
	var out []string
	for _, base := range s.bases {
		out = append(out, base+"/p/0")
	}
	return out
}

func loopback(int) string { return "127.0.0.1" }

// Under politeness_key=domain, three hosts of one domain key (127.0.0.1 on
// three ports) crawled by 3 workers together never get more than
// per_host_max_in_flight requests at once nor more than per_host_rate_per_s,
// measured at the servers; the same crawl under the default host key gives
// each host its own budget (the control: the servers do see overlap then).
func TestPolitenessKeyDomainSharesOneBudget(t *testing.T) {
	t.Parallel() // waits on rate limits, not on the CPU: run beside the other long waits
	zk := testenv.ZooKeeper(t)
	crawlSharesOneBudget(t, zk.Addr(), frontier.KeyDomain, loopback)

	// The control: the same web under the default host key.
	cfg := polkeyConfig()
	cfg.PerHostRatePerS = 0
	ctl := newSharedServer(t, 3, 6, 50*time.Millisecond, loopback)
	h := newCrawl(t, zk.Addr(), "polkey-host", cfg, frontier.Layout{Shards: 16, Spread: 1}, ctl.seeds())
	h.runWorkers(3, 90*time.Second)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if ctl.maxInFlight < 2 {
		t.Errorf("host key: at most %d request in flight over three hosts, want their budgets to overlap (the test would measure nothing)", ctl.maxInFlight)
	}
}

// Under politeness_key=ip, hosts named localhost and 127.0.0.1 (one
// address, different ports too) share one budget: two hosts on one IP.
func TestPolitenessKeyIPSharesOneBudget(t *testing.T) {
	t.Parallel() // waits on rate limits, not on the CPU: run beside the other long waits
	zk := testenv.ZooKeeper(t)
	crawlSharesOneBudget(t, zk.Addr(), frontier.KeyIP, func(i int) string {
		if i%2 == 0 {
			return "localhost"
		}
		return "127.0.0.1"
	})
}

// Under politeness_key=domain, three hosts of one key whose robots.txt
// files state Crawl-delays of 300 ms, 100 ms and none get their pages
// 300 ms apart, the strictest, whichever robots.txt was read last.
func TestPolitenessKeyStrictestCrawlDelay(t *testing.T) {
	t.Parallel() // waits on Crawl-delays, not on the CPU
	zk := testenv.ZooKeeper(t)
	const pages = 4
	cfg := polkeyConfig()
	cfg.PerHostRatePerS = 0 // Crawl-delay alone spaces the requests
	srv := newSharedServer(t, 3, pages, 0, loopback)
	srv.mu.Lock()
	srv.robots = map[int]string{0: "User-agent: *\nCrawl-delay: 0.3\n", 1: "User-agent: *\nCrawl-delay: 0.1\n"}
	srv.mu.Unlock()
	c := newCrawl(t, zk.Addr(), "polkey-delay", cfg, frontier.Layout{Shards: 16, Spread: 1, PolitenessKey: frontier.KeyDomain}, srv.seeds())
	c.runWorkers(3, 90*time.Second)

	if got, want := len(c.warcResponses()), 3*pages; got < want {
		t.Fatalf("%d pages stored, want %d", got, want)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	times := append([]time.Time(nil), srv.arrivals...)
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	const want, slack = 300 * time.Millisecond, arrivalJitter
	// The first request of each host may come before its robots.txt was
	// read (the key's delay is known only from the robots.txt files read
	// so far): judge the gaps after the third page request.
	for i := 3; i+1 < len(times); i++ {
		if gap := times[i+1].Sub(times[i]); gap < want-slack {
			t.Errorf("page requests %d and %d to one domain key %v apart, want >= %v (the strictest Crawl-delay)", i, i+1, gap, want)
		}
	}
	t.Logf("%d page requests over %v", len(times), times[len(times)-1].Sub(times[0]))
}

func polkeyConfig() config.Config {
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.Scope = config.ScopeAny
	cfg.PerHostRatePerS = 10
	cfg.PerHostBurst = 1
	cfg.PerHostMaxInFlight = 1
	return cfg
}

// crawlSharesOneBudget crawls three servers whose hosts share one key of
// kind with 3 workers, and checks at the servers that together they never
// got more than per_host_max_in_flight requests at once nor more than
// per_host_rate_per_s.
func crawlSharesOneBudget(t *testing.T, zkAddr, kind string, name func(int) string) {
	const pages = 6
	cfg := polkeyConfig()
	srv := newSharedServer(t, 3, pages, 20*time.Millisecond, name)
	c := newCrawl(t, zkAddr, "polkey-"+kind, cfg, frontier.Layout{Shards: 16, Spread: 1, PolitenessKey: kind}, srv.seeds())
	c.runWorkers(3, 90*time.Second)

	if got, want := len(c.warcResponses()), 3*pages; got < want {
		t.Fatalf("%d pages stored, want %d", got, want)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.maxInFlight > cfg.PerHostMaxInFlight {
		t.Errorf("%d requests in flight at once to one %s key, want at most per_host_max_in_flight %d", srv.maxInFlight, kind, cfg.PerHostMaxInFlight)
	}
	times := append([]time.Time(nil), srv.arrivals...)
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	interval, slack := time.Duration(float64(time.Second)/cfg.PerHostRatePerS), arrivalJitter
	for k := 1; k <= 5; k++ {
		for i := 0; i+k < len(times); i++ {
			if span := times[i+k].Sub(times[i]); span < time.Duration(k)*interval-slack {
				t.Errorf("requests %d..%d to the three hosts of one %s key span only %v, want >= %v (rate %v/s)", i, i+k, kind, span, time.Duration(k)*interval, cfg.PerHostRatePerS)
			}
		}
	}
	t.Logf("%s key: %d requests, at most %d in flight, over %v", kind, len(times), srv.maxInFlight, times[len(times)-1].Sub(times[0]))
}

// A worker shows a config naming another politeness key than the crawl's
// as config_error and keeps its config; one naming the crawl's own key is
// applied.
func TestPolitenessKeyFixedAtCreation(t *testing.T) {
	cfg := testConfig()
	w := newWorker(Options{ID: "w1", Logger: testLogger(t)}, "/zkcrawl/polkey-fixed")
	w.layout = frontier.Layout{Shards: 4, Spread: 1, PolitenessKey: frontier.KeyDomain}
	host := cfg
	host.PolitenessKey = config.PolitenessHost
	w.applyConfig(host.Encode(), 2)
	if msg := *w.cfgErr.Load(); !strings.Contains(msg, `politeness_key "host": fixed when the crawl was created, this crawl uses "domain"`) {
		t.Errorf("config naming host on a domain crawl: config_error %q", msg)
	}
	if w.live.Load() != nil {
		t.Errorf("the rejected config was applied")
	}
	dom := cfg
	dom.PolitenessKey = config.PolitenessDomain
	w.applyConfig(dom.Encode(), 3)
	if msg := *w.cfgErr.Load(); msg != "" {
		t.Errorf("config naming the crawl's own key: config_error %q", msg)
	}
	if live := w.live.Load(); live == nil || live.version != 3 {
		t.Errorf("the crawl's own key was not applied: %+v", live)
	}
}
