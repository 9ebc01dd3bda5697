package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
)

// The pipeline alone (docs/design.md, "The worker pipeline", 4): process
// with in-memory seams (seams.go), no ZooKeeper and no network. Each fake
// notes what was asked of it in one shared list, so the tests check the
// order the design promises: WARC records, then links, then the crawl log
// line, then the claim's end. robots.txt and sitemaps go through the real
// parts in the end-to-end tests (crawl_test.go).

// calls is the ordered list of what the fakes were asked to do.
type calls struct {
	mu   sync.Mutex
	list []string
}

func (c *calls) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, fmt.Sprintf(format, args...))
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

// memPage is a canned answer of memFetcher: a response, or err.
type memPage struct {
	status   int
	mime     string
	body     string
	redirect string
	err      error
}

// memFetcher is a pageFetcher answering from pages; an unknown URL is a
// connection failure.
type memFetcher struct {
	calls *calls
	pages map[string]memPage
}

func (f *memFetcher) FetchIf(ctx context.Context, rawURL string, _ fetch.Conditions) (*fetch.Result, error) {
	f.calls.add("fetch %s", rawURL)
	p, ok := f.pages[rawURL]
	if !ok {
		p.err = fmt.Errorf("connect to %s: %w", rawURL, context.DeadlineExceeded)
	}
	if p.err != nil {
		return nil, p.err
	}
	head := fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Type: %s\r\n\r\n", p.status, p.mime)
	return &fetch.Result{
		URL: rawURL, Status: p.status, Header: http.Header{"Content-Type": {p.mime}},
		RawRequest: []byte("GET / HTTP/1.1\r\n\r\n"), RawResponseHeader: []byte(head), RawResponse: []byte(head + p.body),
		Body: []byte(p.body), ContentType: p.mime, MIME: p.mime, RemoteIP: "192.0.2.1", Started: time.Now(), Redirect: p.redirect,
	}, nil
}

// memStore is an exchangeStore in memory; writeErr and recordErr make its
// calls fail.
type memStore struct {
	calls               *calls
	mu                  sync.Mutex
	exchanges           []storage.Exchange
	lines               []storage.LogEntry
	writeErr, recordErr error
}

func (s *memStore) WriteExchange(ex storage.Exchange) (storage.ResponseInfo, error) {
	s.calls.add("warc %s", ex.TargetURI)
	if s.writeErr != nil {
		return storage.ResponseInfo{}, s.writeErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exchanges = append(s.exchanges, ex)
	return storage.ResponseInfo{File: "mem.warc.gz", Offset: int64(len(s.exchanges)), PayloadDigest: storage.Digest(ex.Body)}, nil
}

func (s *memStore) Record(ctx context.Context, e storage.LogEntry) error {
	s.calls.add("log %d", e.Status)
	if s.recordErr != nil {
		return s.recordErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, e)
	return nil
}

// memLinks is a linkSink keeping what it was given; err makes it fail.
type memLinks struct {
	calls *calls
	mu    sync.Mutex
	items []frontier.Item
	err   error
}

func (l *memLinks) Enqueue(ctx context.Context, items []frontier.Item) (frontier.EnqueueResult, error) {
	l.calls.add("enqueue %d", len(items))
	if l.err != nil {
		return frontier.EnqueueResult{}, l.err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, items...)
	return frontier.EnqueueResult{Posted: len(items)}, nil
}

// memClaim is an itemClaim whose finishers note their call and return
// errs[op] (nil when absent).
type memClaim struct {
	calls *calls
	data  []byte
	errs  map[string]error
	// what Reschedule and Fail were given
	retried, failed []byte
}

func (c *memClaim) Shard() int   { return claimShard }
func (c *memClaim) Name() string { return "u-0000000007" }
func (c *memClaim) Data() []byte { return c.data }
func (c *memClaim) Complete(ctx context.Context) error {
	c.calls.add("complete")
	return c.errs["complete"]
}
func (c *memClaim) Reschedule(ctx context.Context, data []byte) error {
	c.calls.add("retry")
	c.retried = data
	return c.errs["retry"]
}
func (c *memClaim) Fail(ctx context.Context, data []byte, max int64) (bool, error) {
	c.calls.add("fail")
	c.failed = data
	return c.errs["fail"] == nil, c.errs["fail"]
}
func (c *memClaim) Release(ctx context.Context) error {
	c.calls.add("release")
	return c.errs["release"]
}

// claimShard is the shard of every memClaim.
const claimShard = 3

// pipeline is a worker whose seams are in memory.
type pipeline struct {
	w     *Worker
	calls *calls
	store *memStore
	links *memLinks
	owner *memOwner
	// fetchedAt is how many seam calls had been made when the last run
	// first called process's fetched (its host claim slot freed); -1: never.
	fetchedAt int
}

// memOwner records the ready items the pipeline reports finished, per
// group (the groupOwner seam).
type memOwner struct {
	freed map[int][]string
}

func (o *memOwner) Run(context.Context, *coord.Session, int) {}
func (o *memOwner) Finished(g, shard int, name string) {
	o.freed[g] = append(o.freed[g], coord.ShardName(shard)+"/"+name)
}
func (o *memOwner) Totals() frontier.OwnerTotals { return frontier.OwnerTotals{} }
func (o *memOwner) Resync(int)                   {}

// newPipeline returns a worker with cfg in force whose fetches answer from
// pages. No dead-letter cap (counting R/failed would ask ZooKeeper), no
// robots.txt and no sitemaps (they would go to the network).
func newPipeline(t *testing.T, cfg config.Config, pages map[string]memPage) *pipeline {
	t.Helper()
	cfg.ObeyRobots, cfg.Sitemaps, cfg.MaxDeadLetters = false, false, 0
	w := newWorker(Options{ID: "p1", Logger: testLogger(t)}, "/zkcrawl/pipeline")
	w.layout = frontier.DefaultLayout
	c := &calls{}
	p := &pipeline{w: w, calls: c, store: &memStore{calls: c}, links: &memLinks{calls: c}, owner: &memOwner{freed: map[int][]string{}}}
	w.fetcher, w.store, w.links, w.owner = &memFetcher{calls: c, pages: pages}, p.store, p.links, p.owner
	w.applyConfig(cfg.Encode(), 1)
	if w.current() == nil {
		t.Fatalf("config rejected: %s", *w.cfgErr.Load())
	}
	return p
}

// run processes it under a fresh claim and returns the claim.
func (p *pipeline) run(t *testing.T, it frontier.Item, errs map[string]error) *memClaim {
	t.Helper()
	data, err := it.Encode()
	if err != nil {
		t.Fatal(err)
	}
	claim := &memClaim{calls: p.calls, data: data, errs: errs}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.fetchedAt = -1
	p.w.process(ctx, claim, it, p.w.layout.Key(it.URL), time.Now(), func() {
		if p.fetchedAt < 0 {
			p.fetchedAt = len(p.calls.get())
		}
	})
	return claim
}

func (p *pipeline) wantCalls(t *testing.T, want ...string) {
	t.Helper()
	if got := p.calls.get(); !slices.Equal(got, want) {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

const pipelinePage = "http://a.example/p"

// A 2xx HTML page: stored, its in-scope links and requisites enqueued, then
// logged, then completed, and its group's manager told the ready slot is
// free.
func TestProcessPage(t *testing.T) {
	p := newPipeline(t, config.Default(), map[string]memPage{pipelinePage: {status: 200, mime: "text/html",
		body: `<a href="/b">b</a> <a href="http://other.example/">out of scope</a> <a rel="nofollow" href="/n">n</a> <img src="/i.png">`}})
	p.run(t, frontier.Item{URL: pipelinePage, Depth: 1, Via: "http://a.example/", Hops: "L"}, nil)
	p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "enqueue 2", "log 200", "complete")
	if p.fetchedAt != 1 {
		t.Errorf("host claim slot freed after %d seam calls, want 1 (right after the fetch, before the WARC write)", p.fetchedAt)
	}

	var got []string
	for _, it := range p.links.items {
		got = append(got, fmt.Sprintf("%s %d %s via %s", it.URL, it.Depth, it.Hops, it.Via))
	}
	slices.Sort(got)
	want := []string{"http://a.example/b 2 LL via " + pipelinePage, "http://a.example/i.png 1 LE via " + pipelinePage}
	if !slices.Equal(got, want) {
		t.Errorf("enqueued %q, want %q", got, want)
	}
	line := p.store.lines[0]
	if line.URL != pipelinePage || line.Attempt != 1 || line.Hops != "L" || line.WARCFile != "mem.warc.gz" ||
		line.Digest != storage.Digest(p.store.exchanges[0].Body) || line.Bytes != int64(len(p.store.exchanges[0].Body)) || line.ConfigVersion != 1 {
		t.Errorf("crawl log line %+v", line)
	}
	if ex := p.store.exchanges[0]; ex.IP != "192.0.2.1" || !strings.HasPrefix(string(ex.RawResponse), "HTTP/1.1 200") {
		t.Errorf("stored exchange %+v", ex)
	}
	if pages := p.w.counters.pages.Load(); pages != 1 {
		t.Errorf("pages = %d, want 1", pages)
	}
	freed := p.owner.freed[frontier.DefaultLayout.GroupOf(claimShard)] // the group of the claim's shard
	if !slices.Equal(freed, []string{"s003/u-0000000007"}) {
		t.Errorf("group manager told %q, want the item's ready slot", freed)
	}
}

// A redirect: stored and logged; its target is enqueued at the same depth
// with hop R.
func TestProcessRedirect(t *testing.T) {
	p := newPipeline(t, config.Default(), map[string]memPage{pipelinePage: {status: 301, mime: "text/html", redirect: "http://a.example/q"}})
	p.run(t, frontier.Item{URL: pipelinePage, Depth: 1, Hops: "L"}, nil)
	p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "enqueue 1", "log 301", "complete")
	if it := p.links.items[0]; it.URL != "http://a.example/q" || it.Depth != 1 || it.Hops != "LR" {
		t.Errorf("redirect target %+v", it)
	}
}

// A 503 with attempts left: stored and logged, then put back with one more
// attempt and a not_before in the future; the progress line counts a 5xx.
func TestProcessServerErrorRetries(t *testing.T) {
	cfg := config.Default()
	cfg.MaxAttempts = 3
	p := newPipeline(t, cfg, map[string]memPage{pipelinePage: {status: 503, mime: "text/plain", body: "busy"}})
	claim := p.run(t, frontier.Item{URL: pipelinePage, Depth: 1}, nil)
	p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "log 503", "retry")
	next, err := frontier.DecodeItem(claim.retried)
	if err != nil || next.Attempts != 1 || !next.NotBefore.After(time.Now()) || next.URL != pipelinePage {
		t.Errorf("retried as %+v, %v; want attempts 1 and a not_before ahead", next, err)
	}
	if got := p.w.progress.errorClasses(); got != "5xx=1" {
		t.Errorf("progress error classes %q, want 5xx=1", got)
	}
	if errs := p.w.counters.errors.Load(); errs != 1 {
		t.Errorf("errors = %d, want 1", errs)
	}
}

// No response at the last attempt: logged with the fetch code, then moved
// to the dead letters with the reason; no WARC record.
func TestProcessLastAttemptDeadLetters(t *testing.T) {
	cfg := config.Default()
	cfg.MaxAttempts = 2
	p := newPipeline(t, cfg, nil) // every URL: connection timeout
	claim := p.run(t, frontier.Item{URL: pipelinePage, Depth: 1, Attempts: 1}, nil)
	p.wantCalls(t, "fetch "+pipelinePage, fmt.Sprintf("log %d", fetch.CodeTimeout), "fail")
	var rec struct {
		Item      frontier.Item `json:"item"`
		LastError string        `json:"last_error"`
	}
	if err := json.Unmarshal(claim.failed, &rec); err != nil || rec.Item.URL != pipelinePage || !strings.Contains(rec.LastError, "(timeout)") {
		t.Errorf("dead letter %s, %v", claim.failed, err)
	}
	if p.w.progress.deadLetters != 1 || p.w.counters.pages.Load() != 1 {
		t.Errorf("dead letters %d, pages %d; want 1 and 1", p.w.progress.deadLetters, p.w.counters.pages.Load())
	}
}

// Whatever fails before the item's outputs and links are durable leaves the
// item queued, its attempts unchanged: the claim is released, never
// completed, retried or failed.
func TestProcessReleasesWhatIsNotDurable(t *testing.T) {
	page := map[string]memPage{pipelinePage: {status: 200, mime: "text/html", body: `<a href="/b">b</a>`}}
	t.Run("warc write fails", func(t *testing.T) {
		p := newPipeline(t, config.Default(), page)
		p.store.writeErr = errors.New("no space left on device")
		p.run(t, frontier.Item{URL: pipelinePage}, nil)
		p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "release")
		if p.w.outputError() == "" || p.w.outputsWritable() {
			t.Error("a failed WARC write did not stop claiming")
		}
	})
	t.Run("links not posted", func(t *testing.T) {
		p := newPipeline(t, config.Default(), page)
		p.links.err = coord.ErrSessionExpired
		p.run(t, frontier.Item{URL: pipelinePage}, nil)
		p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "enqueue 1", "release")
	})
	t.Run("log line not synced", func(t *testing.T) {
		p := newPipeline(t, config.Default(), page)
		p.store.recordErr = errors.New("fsync: input/output error")
		p.run(t, frontier.Item{URL: pipelinePage}, nil)
		p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "enqueue 1", "log 200", "release")
		if p.w.outputError() == "" {
			t.Error("a failed crawl log write did not stop claiming")
		}
	})
	t.Run("paused", func(t *testing.T) {
		cfg := config.Default()
		cfg.Paused = true
		p := newPipeline(t, cfg, page)
		p.run(t, frontier.Item{URL: pipelinePage}, nil)
		p.wantCalls(t, "release")
	})
}

// A claim lost before completion (the session ended): the item stays queued
// for its next claimer; nothing is released and the page is not counted.
func TestProcessClaimLost(t *testing.T) {
	p := newPipeline(t, config.Default(), map[string]memPage{pipelinePage: {status: 404, mime: "text/html"}})
	p.run(t, frontier.Item{URL: pipelinePage}, map[string]error{"complete": coord.ErrClaimLost})
	p.wantCalls(t, "fetch "+pipelinePage, "warc "+pipelinePage, "log 404", "complete")
	if pages := p.w.counters.pages.Load(); pages != 0 {
		t.Errorf("pages = %d, want 0", pages)
	}
}
