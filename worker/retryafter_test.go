package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A host answers its first page request with 429 and Retry-After: 3: no
// request of that host (robots.txt, either page) reaches it within 3 s of
// the 429, measured at the server, and both pages are then fetched (200).
func TestRetryAfterHoldsTheHost(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	type arrival struct {
		at   time.Time
		path string
	}
	var (
		mu       sync.Mutex
		arrivals []arrival
		refused  time.Time // when the 429 was sent
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		arrivals = append(arrivals, arrival{now, r.URL.Path})
		first := refused.IsZero() && r.URL.Path != "/robots.txt"
		if first {
			refused = now
		}
		mu.Unlock()
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case first:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><title>ok</title></html>")
		}
	}))
	t.Cleanup(srv.Close)

	cfg := testConfig() // unlimited rate, retry_backoff_ms 100: only the hold delays the retry
	cfg.PerHostMaxInFlight = 1
	cfg.Sitemaps = false
	c := newCrawl(t, zk.Addr(), "retryafter", cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{srv.URL + "/", srv.URL + "/x"})
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", func(o *Options) { o.Metrics = m }); err != nil {
		t.Fatal(err)
	}
	if n, _ := metricValue(t, reg, "zkcrawl_retry_after_total", nil); n != 1 {
		t.Errorf("zkcrawl_retry_after_total = %v, want 1", n)
	}

	mu.Lock()
	defer mu.Unlock()
	if refused.IsZero() {
		t.Fatal("no page request reached the server")
	}
	after := 0
	for _, a := range arrivals {
		if a.at.After(refused) {
			after++
			if gap := a.at.Sub(refused); gap < 3*time.Second {
				t.Errorf("%s arrived %v after the 429 with Retry-After: 3", a.path, gap)
			}
		}
	}
	if after == 0 {
		t.Error("no request after the 429")
	}
	final, _ := finalStatus(c.logs())
	for _, u := range []string{srv.URL + "/", srv.URL + "/x"} {
		if final[u] != http.StatusOK {
			t.Errorf("%s: final status %d, want 200 (log: %v)", u, final[u], final)
		}
	}
}

// A 503 robots.txt with Retry-After holds its URL's key (robotsFetched),
// a year's Retry-After is cut to max_retry_after_s, and a retried item's
// not_before is not earlier than the hold's end.
func TestRetryAfterRobotsAndNotBefore(t *testing.T) {
	p, err := fetch.NewPoliteness(fetch.PolitenessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetMaxHold(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	w := &Worker{log: testLogger(t)}
	w.polite = p
	robots := &fetch.Result{URL: "http://a.example/robots.txt", Status: 503, Header: http.Header{"Retry-After": {"31536000"}}}
	start := time.Now()
	w.robotsFetched(robots)
	key := w.keyOfURL(robots.URL)
	held := p.HeldUntil(key)
	if key == "" || held.Sub(start) < 10*time.Second || held.Sub(start) > 11*time.Second {
		t.Fatalf("key %q held for %v after a year's Retry-After, want the 10s cap", key, held.Sub(start))
	}
	if nb := w.retryNotBefore(start.Add(time.Second), key); nb.Before(held.Add(-100 * time.Millisecond)) {
		t.Fatalf("retry not_before %v before the hold's end %v", nb, held)
	}
	if at := start.Add(time.Minute); !w.retryNotBefore(at, key).Equal(at) {
		t.Fatal("a later retry time was moved")
	}
	if at := start.Add(time.Second); !w.retryNotBefore(at, "other:80").Equal(at) {
		t.Fatal("a key not held moved the retry time")
	}
	// A garbage Retry-After is ignored: only the backoff holds (1 s from a fresh key).
	w.answered("b.example:80", &fetch.Result{URL: "http://b.example/", Status: 429, Header: http.Header{"Retry-After": {"soon"}}})
	if d := time.Until(p.HeldUntil("b.example:80")); d < 900*time.Millisecond || d > 1100*time.Millisecond {
		t.Fatalf("a garbage Retry-After held for %v, want the 1s backoff", d)
	}
}
