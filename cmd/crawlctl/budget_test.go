package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
)

// A crawl whose only remaining URLs are held by max_pages_per_host (keep)
// is done for both the worker's --exit-when-done and crawlctl status,
// which shows the host at its budget and the held URLs.
func TestStatusHostBudgetHeldIsDone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := 1; i < 20; i++ {
				fmt.Fprintf(w, `<a href="/p/%d">x</a>`, i)
			}
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxPagesPerHost = 5
	cfg.HostBudgetAction = config.HostBudgetKeep
	cfg.Sitemaps, cfg.PageRequisites = false, false
	c := newCrawl(t, "budget", cfg, 2, []string{srv.URL + "/"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", true); err != nil {
		t.Fatalf("worker: %v", err)
	}
	d := c.status()
	if !d.Done || d.State != "done" || d.Queue.Backlog != 15 || d.Queue.Held != 15 || d.Queue.HostsAtBudget != 1 {
		t.Fatalf("status: state %q done=%v queue %+v; want done with 15 URLs held for 1 host", d.State, d.Done, d.Queue)
	}
	r := c.ctl("status", "--rate-window", "0")
	if r.err != nil || !strings.Contains(r.stdout, "host budget: 1 hosts at max_pages_per_host, 15 of the backlog's URLs held for them") {
		t.Fatalf("status text lacks the host budget line: %v", r)
	}
}
