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
	srvs []*httptest.Server

	mu          sync.Mutex
	arrivals    []time.Time
	inFlight    int
	maxInFlight int
}

// newSharedServer starts n servers of pages /p/0../p/<pages-1>, each page
// linking to the next two pages on every server; each response takes hold.
func newSharedServer(t *testing.T, n, pages int, hold time.Duration) *sharedServer {
	s := &sharedServer{}
	for range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.arrivals = append(s.arrivals, time.Now())
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
			for _, other := range s.srvs {
				for j := i + 1; j <= i+2 && j < pages; j++ {
					fmt.Fprintf(&b, `<a href="%s/p/%d">p</a>`, other.URL, j)
				}
			}
			b.WriteString("</body></html>")
			w.Write([]byte(b.String()))
		}))
		t.Cleanup(srv.Close)
		s.srvs = append(s.srvs, srv)
	}
	return s
}

func (s *sharedServer) seeds() []string {
	var out []string
	for _, srv := range s.srvs {
		out = append(out, srv.URL+"/p/0")
	}
	return out
}

// Under politeness_key=domain, three hosts of one domain key (127.0.0.1 on
// three ports) crawled by 3 workers together never get more than
// per_host_max_in_flight requests at once nor more than per_host_rate_per_s,
// measured at the servers; the same crawl under the default host key gives
// each host its own budget (the control: the servers do see overlap then).
func TestPolitenessKeyDomainSharesOneBudget(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	const pages, rate = 6, 10
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.Scope = config.ScopeAny
	cfg.PerHostRatePerS = rate
	cfg.PerHostBurst = 1
	cfg.PerHostMaxInFlight = 1

	srv := newSharedServer(t, 3, pages, 20*time.Millisecond)
	c := newCrawl(t, zk.Addr(), "polkey-domain", cfg, frontier.Layout{Shards: 16, Spread: 1, PolitenessKey: frontier.KeyDomain}, srv.seeds())
	c.runWorkers(3, 90*time.Second)

	if got, want := len(c.warcResponses()), 3*pages; got < want {
		t.Fatalf("%d pages stored, want %d", got, want)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.maxInFlight > cfg.PerHostMaxInFlight {
		t.Errorf("%d requests in flight at once to one domain key, want at most per_host_max_in_flight %d", srv.maxInFlight, cfg.PerHostMaxInFlight)
	}
	times := append([]time.Time(nil), srv.arrivals...)
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	const interval, slack = time.Second / rate, 2 * time.Millisecond
	for k := 1; k <= 5; k++ {
		for i := 0; i+k < len(times); i++ {
			if span := times[i+k].Sub(times[i]); span < time.Duration(k)*interval-slack {
				t.Errorf("requests %d..%d to the three hosts of one domain span only %v, want >= %v (rate %d/s)", i, i+k, span, time.Duration(k)*interval, rate)
			}
		}
	}
	t.Logf("domain key: %d requests, at most %d in flight, over %v", len(times), srv.maxInFlight, times[len(times)-1].Sub(times[0]))

	// The control: the same web under the default host key.
	cfg.PerHostRatePerS = 0
	ctl := newSharedServer(t, 3, pages, 50*time.Millisecond)
	h := newCrawl(t, zk.Addr(), "polkey-host", cfg, frontier.Layout{Shards: 16, Spread: 1}, ctl.seeds())
	h.runWorkers(3, 90*time.Second)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if ctl.maxInFlight < 2 {
		t.Errorf("host key: at most %d request in flight over three hosts, want their budgets to overlap (the test would measure nothing)", ctl.maxInFlight)
	}
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
