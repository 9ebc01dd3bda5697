package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// TestListAndDelete: list shows every crawl with its workers and queue;
// delete refuses a crawl with a live worker unless --force, and removes
// every znode of the crawl (seen-set included) but no other crawl's.
func TestListAndDelete(t *testing.T) {
	a := newCrawl(t, "lista", testConfig(), 4, []string{"http://a.example/1", "http://a.example/2"})
	b := newCrawl(t, "listb", testConfig(), 4, []string{"http://b.example/"})

	r := a.ctl("list")
	if r.err != nil {
		t.Fatalf("list: %v", r)
	}
	for _, want := range []string{"NAME", a.name, b.name} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		// No worker has drained the seeds yet: they wait in one post.
		if f := strings.Fields(l); len(f) >= 6 && f[0] == a.name && (f[1] != "0" || f[2] != "0" || f[3] != "1") {
			t.Errorf("row of %s = %q, want 0 workers, 0 queued, 1 post", a.name, l)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := a.startWorker(ctx, "w1", false)
	eventually(t, 10*time.Second, "w1 live", func() (bool, string) { return len(a.workers()) == 1, "" })
	r = a.ctl("delete", a.name)
	if r.err == nil || !strings.Contains(r.err.Error(), "1 live worker(s) (w1)") || !strings.Contains(r.err.Error(), "--force") {
		t.Fatalf("delete with a live worker: %v", r)
	}
	cancel()
	<-done

	r = a.ctl("delete")
	if r.err == nil || !strings.Contains(r.err.Error(), "exactly one crawl NAME") {
		t.Fatalf("delete without NAME: %v", r)
	}
	r = a.ctl("delete", a.name)
	if r.err != nil || !strings.Contains(r.stdout, "crawl "+a.name+" deleted") {
		t.Fatalf("delete: %v", r)
	}
	if _, _, err := coord.Store(a.client, a.root).Read(context.Background()); err == nil {
		t.Errorf("%s still exists after delete", a.root)
	}
	if _, _, err := coord.Store(b.client, b.root).Read(context.Background()); err != nil {
		t.Errorf("the other crawl %s: %v", b.root, err)
	}
	r = a.ctl("delete", a.name)
	if r.err == nil || !strings.Contains(r.err.Error(), "crawlctl list") {
		t.Fatalf("delete of a missing crawl: %v", r)
	}
}
