package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
)

// A URL whose server always answers 500 ends as a dead letter after
// max_attempts; requeue-failed (by --all, then by name) puts it back with
// its attempts reset, and a worker fetches it again.
func TestRequeueFailed(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r) // no robots.txt: everything allowed (RFC 9309 section 2.3.1.3)
			return
		}
		hits.Add(1)
		http.Error(w, "always broken", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxAttempts = 2
	cfg.RetryBackoffMS = 0
	c := newCrawl(t, "deadletters", cfg, 4, []string{srv.URL + "/broken.html"})

	crawlUntilDone := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := <-c.startWorker(ctx, "w1", true); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	crawlUntilDone()
	if n := hits.Load(); n != 2 {
		t.Fatalf("server hit %d times; want max_attempts = 2", n)
	}
	d := c.status()
	if d.Failed != 1 || !d.Done || d.State != "done" {
		t.Fatalf("status after the crawl: failed %d, done %v, state %q; want 1 dead letter and done", d.Failed, d.Done, d.State)
	}

	r := c.ctl("requeue-failed", "--list")
	if r.err != nil || !strings.Contains(r.stdout, srv.URL+"/broken.html") || !strings.Contains(r.stdout, "HTTP 500") || !strings.Contains(r.stdout, "1 dead letters") {
		t.Fatalf("requeue-failed --list: %v", r)
	}
	r = c.ctl("requeue-failed", "--all")
	if r.err != nil || !strings.Contains(r.stdout, "1 requeued") {
		t.Fatalf("requeue-failed --all: %v", r)
	}
	it := onlyQueuedItem(t, c)
	if it.URL != srv.URL+"/broken.html" || it.Attempts != 0 || !it.NotBefore.IsZero() {
		t.Errorf("requeued item %+v; want attempts 0 and no not_before", it)
	}
	if d := c.status(); d.Failed != 0 || d.Queue.Queued != 1 || d.Done {
		t.Errorf("status after requeue: failed %d, queued %d, done %v", d.Failed, d.Queue.Queued, d.Done)
	}

	// Fetched again (twice more), dead again; requeue it by name.
	crawlUntilDone()
	if n := hits.Load(); n != 4 {
		t.Errorf("server hit %d times after the requeue; want 4", n)
	}
	failed, err := c.queue.Failed(context.Background())
	if err != nil || len(failed) != 1 {
		t.Fatalf("dead letters %v, %v; want 1", failed, err)
	}
	r = c.ctl("requeue-failed", failed[0], "s000-u-0000099999")
	if r.err != nil || !strings.Contains(r.stdout, "requeued "+failed[0]) || !strings.Contains(r.stdout, "1 requeued, 1 not found") {
		t.Errorf("requeue-failed NAME: %v", r)
	}
	if it := onlyQueuedItem(t, c); it.Attempts != 0 {
		t.Errorf("requeued by name: %+v", it)
	}
	if r = c.ctl("requeue-failed", failed[0]); r.err == nil || !strings.Contains(r.stderr, "no such dead letter") {
		t.Errorf("requeue of a name already requeued: want an error, got %v", r)
	}
}

// onlyQueuedItem returns the crawl's one queued item.
func onlyQueuedItem(t *testing.T, c *crawl) frontier.Item {
	t.Helper()
	ctx := context.Background()
	var found []frontier.Item
	for s := range c.queue.Shards() {
		names, _, err := c.queue.Items(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			data, err := c.queue.Get(ctx, s, n)
			if err != nil {
				t.Fatal(err)
			}
			it, err := frontier.DecodeItem(data)
			if err != nil {
				t.Fatalf("queued item %s: %v", n, err)
			}
			found = append(found, it)
		}
	}
	if len(found) != 1 {
		t.Fatalf("queued items %+v; want exactly 1", found)
	}
	return found[0]
}
