package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// A URL whose server always answers 500 ends as a dead letter
// (max_attempts 1); requeue-failed --all puts it back and a worker fetches
// it again. A dead letter with attempts and a retry time, requeued by name,
// comes back with both reset.
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
	cfg.MaxAttempts = 1
	broken := srv.URL + "/broken.html"
	c := newCrawl(t, "deadletters", cfg, 4, []string{broken})

	crawlUntilDone := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := <-c.startWorker(ctx, "w1", true); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	crawlUntilDone()
	if n := hits.Load(); n != 1 {
		t.Fatalf("server hit %d times; want max_attempts = 1", n)
	}
	d := c.status()
	if d.Failed != 1 || !d.Done || d.State != "done" {
		t.Fatalf("status after the crawl: failed %d, done %v, state %q; want 1 dead letter and done", d.Failed, d.Done, d.State)
	}

	r := c.ctl("requeue-failed", "--list")
	if r.err != nil || !strings.Contains(r.stdout, broken) || !strings.Contains(r.stdout, "HTTP 500") || !strings.Contains(r.stdout, "1 dead letters") {
		t.Fatalf("requeue-failed --list: %v", r)
	}
	r = c.ctl("requeue-failed", "--all")
	if r.err != nil || !strings.Contains(r.stdout, "requeued ") || !strings.Contains(r.stdout, "1 requeued") {
		t.Fatalf("requeue-failed --all: %v", r)
	}
	if it := onlyQueuedItem(t, c); it.URL != broken || it.Attempts != 0 {
		t.Errorf("requeued item %+v", it)
	}
	if d := c.status(); d.Failed != 0 || d.Queue.Queued != 1 || d.Done {
		t.Errorf("status after requeue: failed %d, queued %d, done %v", d.Failed, d.Queue.Queued, d.Done)
	}
	crawlUntilDone()
	if n := hits.Load(); n != 2 {
		t.Errorf("server hit %d times after the requeue; want 2 (fetched again)", n)
	}
	if d := c.status(); d.Failed != 1 || !d.Done {
		t.Errorf("after the second crawl: failed %d, done %v; want the dead letter back", d.Failed, d.Done)
	}

	// A dead letter that had retries: made by hand the way a worker makes
	// it (claim, then Fail with the record), with attempts 2 and not_before.
	name := makeDeadLetter(t, c, frontier.Item{URL: srv.URL + "/other.html", Depth: 1, Via: broken, Attempts: 2, NotBefore: time.Now().Add(time.Hour)})
	r = c.ctl("requeue-failed", name, "s000-u-0000099999")
	if r.err != nil || !strings.Contains(r.stdout, "requeued "+name) || !strings.Contains(r.stdout, "1 requeued, 1 not found") {
		t.Errorf("requeue-failed NAME: %v", r)
	}
	it := onlyQueuedItem(t, c)
	if it.URL != srv.URL+"/other.html" || it.Attempts != 0 || !it.NotBefore.IsZero() || it.Depth != 1 || it.Via != broken {
		t.Errorf("requeued by name: %+v; want attempts 0, no not_before, depth and via kept", it)
	}
	if r = c.ctl("requeue-failed", name); r.err == nil || !strings.Contains(r.stderr, "no such dead letter") {
		t.Errorf("requeue of a name already requeued: want an error, got %v", r)
	}
}

// makeDeadLetter enqueues it, claims it and fails it with the worker's
// dead-letter record; it returns the dead letter's name.
func makeDeadLetter(t *testing.T, c *crawl, it frontier.Item) string {
	t.Helper()
	ctx := context.Background()
	// Straight into the ready window, as the group's owner moves it.
	front, err := frontier.Open(ctx, c.client, c.root)
	if err != nil {
		t.Fatal(err)
	}
	shard := front.Layout().Shard(it.URL)
	data, err := frontier.Item{URL: it.URL}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	record, err := frontier.Item{URL: it.URL}.Record()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	grp, err := front.Backlog().Open(ctx, sess, front.Layout().Group(it.URL))
	if err != nil {
		t.Fatal(err)
	}
	res, err := grp.Apply(ctx, frontier.Step{Accept: [][]byte{record}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := grp.Apply(ctx, frontier.Step{Move: []frontier.Move{{Ref: res.Accepted[0], Shard: shard, Data: data}}}); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	claim, err := c.queue.Take(tctx, sess, shard, nil)
	if err != nil {
		t.Fatal(err)
	}
	item, err := it.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(map[string]any{"item": json.RawMessage(item), "last_error": "made by hand (HTTP 503)", "failed_at": time.Now().UTC()})
	if _, err := claim.Fail(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	return coord.ShardName(shard) + "-" + claim.Name()
}

// onlyQueuedItem returns the crawl's one queued item.
func onlyQueuedItem(t *testing.T, c *crawl) frontier.Item {
	t.Helper()
	ctx := context.Background()
	var found []frontier.Item
	for s := range c.queue.Shards() {
		names, err := c.queue.ReadyNames(ctx, s)
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
