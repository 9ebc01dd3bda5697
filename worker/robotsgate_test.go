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

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// hostLog is a loopback site that records when each request arrived and
// how many were in flight at once.
type hostLog struct {
	mu          sync.Mutex
	starts      []time.Time
	paths       []string
	inFlight    int
	maxInFlight int
}

func (h *hostLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.starts = append(h.starts, time.Now())
		h.paths = append(h.paths, r.URL.Path)
		h.inFlight++
		h.maxInFlight = max(h.maxInFlight, h.inFlight)
		h.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // long enough for an overlap to show
		next.ServeHTTP(w, r)
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	})
}

// Every request to a host goes through its politeness slot: robots.txt
// (each redirect hop), the robots.txt read for a seed's sitemaps (also with
// obey_robots off), sitemaps and pages. At 4 requests/s, burst 1 and one
// request in flight, no two requests the server sees are closer than
// 250 ms, and none overlap.
func TestRobotsAndSitemapsGoThroughPoliteness(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	for _, obey := range []bool{true, false} {
		t.Run(fmt.Sprintf("obey_robots=%v", obey), func(t *testing.T) {
			log := &hostLog{}
			mux := http.NewServeMux()
			mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/robots-moved.txt", http.StatusMovedPermanently)
			})
			mux.HandleFunc("/robots-moved.txt", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprint(w, "User-agent: *\nAllow: /\nSitemap: /map.xml\n")
			})
			mux.HandleFunc("/map.xml", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/xml")
				fmt.Fprint(w, `<urlset><url><loc>/s1</loc></url><url><loc>/s2</loc></url></urlset>`)
			})
			mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if r.URL.Path == "/" {
					fmt.Fprint(w, `<a href="/p1">1</a><a href="/p2">2</a>`)
				}
			})
			srv := httptest.NewServer(log.wrap(mux))
			t.Cleanup(srv.Close)
			cfg := testConfig()
			cfg.ObeyRobots, cfg.Sitemaps, cfg.PageRequisites = obey, true, false
			cfg.PerHostRatePerS, cfg.PerHostBurst, cfg.PerHostMaxInFlight = 4, 1, 1
			c := newCrawl(t, zk.Addr(), fmt.Sprintf("robotsgate%v", obey), cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
			c.runWorkers(1, 60*time.Second)

			log.mu.Lock()
			defer log.mu.Unlock()
			order := make([]int, len(log.starts))
			for i := range order {
				order[i] = i
			}
			sort.Slice(order, func(a, b int) bool { return log.starts[order[a]].Before(log.starts[order[b]]) })
			var seen []string
			for _, i := range order {
				seen = append(seen, fmt.Sprintf("%s@%s", log.paths[i], log.starts[i].Format("05.000")))
			}
			t.Logf("requests: %s", strings.Join(seen, " "))
			for _, want := range []string{"/robots.txt", "/robots-moved.txt", "/map.xml", "/s1", "/p1"} {
				if !strings.Contains(strings.Join(seen, " "), want+"@") {
					t.Errorf("%s was never requested", want)
				}
			}
			const interval, slack = 250 * time.Millisecond, arrivalJitter
			for k := 1; k < len(order); k++ {
				prev, cur := order[k-1], order[k]
				if gap := log.starts[cur].Sub(log.starts[prev]); gap < interval-slack {
					t.Errorf("%s came %v after %s; the rate allows one request per %v", log.paths[cur], gap, log.paths[prev], interval)
				}
			}
			if log.maxInFlight > 1 {
				t.Errorf("%d requests in flight at once; per_host_max_in_flight is 1", log.maxInFlight)
			}
		})
	}
}
