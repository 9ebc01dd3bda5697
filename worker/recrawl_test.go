package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Conditional GET and revisit records (recrawl.go) through the pipeline
// with the real fetcher against a loopback server and the real WARC
// writer and crawl log; the frontier and the claim are in memory
// (process_test.go).

// recrawlSite is a loopback web whose pages answer conditional requests,
// and notes the validators each request carried.
type recrawlSite struct {
	srv *httptest.Server
	lm  time.Time // the Last-Modified of /etag

	mu   sync.Mutex
	hits map[string][]string // path -> "If-None-Match|If-Modified-Since" per request
	n    int                 // requests of /changed
}

// The pages of recrawlSite.
const (
	pageETag     = "/etag"      // ETag "v1" and Last-Modified; 304 when either matches
	pageSame     = "/same"      // the same body, no validators
	pageChanged  = "/changed"   // a new body at every request
	pageAlways   = "/always304" // 304 to every request
	pageBigETag  = "/bigetag"   // an ETag over 1 KiB and a Last-Modified in the future
	pageMidETag  = "/midetag"   // an ETag one byte over frontier.MaxETagBytes and an unparsable Last-Modified
	sameBody     = "<html><body>the same page</body></html>"
	etagV1       = `"v1"`
	lastModified = "Fri, 02 Jan 2026 03:04:05 GMT"
)

func newRecrawlSite(t *testing.T) *recrawlSite {
	s := &recrawlSite{hits: map[string][]string{}}
	s.lm, _ = http.ParseTime(lastModified)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		s.mu.Lock()
		s.hits[r.URL.Path] = append(s.hits[r.URL.Path], inm+"|"+ims)
		s.n += map[bool]int{true: 1}[r.URL.Path == pageChanged]
		n := s.n
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case pageETag:
			w.Header().Set("ETag", etagV1)
			w.Header().Set("Last-Modified", lastModified)
			if inm == etagV1 || ims == lastModified {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			fmt.Fprint(w, sameBody)
		case pageSame:
			fmt.Fprint(w, sameBody)
		case pageChanged:
			fmt.Fprintf(w, "<html><body>version %d</body></html>", n)
		case pageAlways:
			w.WriteHeader(http.StatusNotModified)
		case pageBigETag:
			w.Header().Set("ETag", `"`+strings.Repeat("b", 1100)+`"`)
			w.Header().Set("Last-Modified", time.Now().Add(48*time.Hour).UTC().Format(http.TimeFormat))
			fmt.Fprint(w, sameBody)
		case pageMidETag:
			w.Header().Set("ETag", `"`+strings.Repeat("m", frontier.MaxETagBytes-1)+`"`)
			w.Header().Set("Last-Modified", "yesterday at noon")
			fmt.Fprint(w, sameBody)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *recrawlSite) url(path string) string { return s.srv.URL + path }

// sent returns the validators each request of path carried.
func (s *recrawlSite) sent(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits[path])
}

// recrawlPipeline is a pipeline (process_test.go) with the real fetcher
// and a diskStore in a temporary directory.
type recrawlPipeline struct {
	*pipeline
	out  string
	disk *diskStore
}

func newRecrawlPipeline(t *testing.T, recrawl bool) *recrawlPipeline {
	t.Helper()
	cfg := testConfig()
	cfg.Recrawl = recrawl
	cfg.ObeyRobots, cfg.Sitemaps, cfg.MaxDeadLetters = false, false, 0 // as newPipeline's
	p := newPipeline(t, cfg, nil)
	out := t.TempDir()
	disk, err := openDiskStore(Options{ID: "p1", OutDir: out, Crawl: "recrawl"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disk.Close() })
	f := fetch.New(fetch.Options{})
	t.Cleanup(f.Close)
	p.w.fetcher, p.w.store = f, disk
	p.w.applyConfig(cfg.Encode(), 2) // the fetcher takes the config's options
	return &recrawlPipeline{pipeline: p, out: out, disk: disk}
}

// finish closes the outputs and returns the crawl-log lines and the
// records of the one WARC file by offset, and its path.
func (p *recrawlPipeline) finish(t *testing.T) ([]storage.LogEntry, map[int64]*storage.Record, string) {
	t.Helper()
	if err := p.disk.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(p.out, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := storage.ReadCrawlLog(f)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(p.out, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("WARC files %q, want one", files)
	}
	recs := map[int64]*storage.Record{}
	if err := testenv.EachWARCRecord(files[0], false, func(r *storage.Record) { recs[r.Offset] = r }); err != nil {
		t.Fatal(err)
	}
	return lines, recs, files[0]
}

// requestOf returns the request record concurrent to the record with id.
func requestOf(recs map[int64]*storage.Record, id string) *storage.Record {
	for _, r := range recs {
		if r.Type() == storage.TypeRequest && r.Get("WARC-Concurrent-To") == id {
			return r
		}
	}
	return nil
}

// A recrawl of three URLs, each with its last capture: the one whose
// server answers the validators with 304 is a server-not-modified revisit,
// the one whose payload did not change an identical-payload-digest revisit,
// the changed one a response; each revisit refers to the original capture
// (WARC-Refers-To-Target-URI and -Date), the crawl log names the profile,
// the request record shows the validators sent, and each schedule entry
// handed to the frontier (with the page's links, before the completion)
// keeps the original's time and digest for a revisit. warcio.js reads the
// file, and the .cdxj beside it is warcio's index.
func TestRecrawlConditionalGetAndRevisits(t *testing.T) {
	site := newRecrawlSite(t)
	p := newRecrawlPipeline(t, true)
	orig := time.Date(2026, 11, 1, 10, 20, 30, 0, time.UTC)
	sameDigest := frontier.DigestPrefix(storage.Digest([]byte(sameBody)))
	prev := func(etag string, lm time.Time) *frontier.Capture {
		return &frontier.Capture{Time: orig, Digest: sameDigest, ETag: etag, LastModified: lm, IntervalS: 7200, Changed: true}
	}
	prio := 0.8
	items := []frontier.Item{
		{URL: site.url(pageETag), Depth: 2, Hops: "LL", Lastmod: "2026-01-02", Priority: &prio, Changefreq: "daily", Prev: prev(etagV1, site.lm)},
		{URL: site.url(pageSame), Depth: 1, Hops: "L", Prev: prev("", time.Time{})},
		{URL: site.url(pageChanged), Depth: 1, Hops: "L", Prev: prev(`"old"`, time.Time{})},
	}
	for _, it := range items {
		p.run(t, it, nil)
	}
	if got := site.sent(pageETag); !slices.Equal(got, []string{etagV1 + "|" + lastModified}) {
		t.Errorf("%s got %q, want If-None-Match and If-Modified-Since", pageETag, got)
	}
	if got := site.sent(pageSame); !slices.Equal(got, []string{"|"}) {
		t.Errorf("%s got %q, want an unconditional GET (no validator kept)", pageSame, got)
	}
	if got := site.sent(pageChanged); !slices.Equal(got, []string{`"old"|`}) {
		t.Errorf("%s got %q", pageChanged, got)
	}
	p.wantCalls(t, "enqueue 1", "complete", "enqueue 1", "complete", "enqueue 1", "complete")
	lines, recs, file := p.finish(t)
	if len(lines) != 3 {
		t.Fatalf("%d crawl-log lines, want 3", len(lines))
	}
	wantRevisit := []string{storage.RevisitNotModified, storage.RevisitIdenticalPayload, ""}
	wantProfile := []string{storage.ProfileNotModified, storage.RevisitProfile, ""}
	for i, l := range lines {
		rec := recs[l.WARCOffset]
		if l.URL != items[i].URL || l.Revisit != wantRevisit[i] || rec == nil {
			t.Fatalf("line %d: %+v (record %v); want %s revisit %q", i, l, rec != nil, items[i].URL, wantRevisit[i])
		}
		if rec.Get("WARC-Payload-Digest") != l.Digest {
			t.Errorf("%s: record payload digest %q, crawl log %q", l.URL, rec.Get("WARC-Payload-Digest"), l.Digest)
		}
		if wantProfile[i] == "" {
			if rec.Type() != storage.TypeResponse || l.Status != 200 {
				t.Errorf("%s: %s record, status %d; want a 200 response", l.URL, rec.Type(), l.Status)
			}
			continue
		}
		if rec.Type() != storage.TypeRevisit || rec.Get("WARC-Profile") != wantProfile[i] ||
			rec.Get("WARC-Refers-To-Target-URI") != l.URL || rec.Get("WARC-Refers-To-Date") != "2026-11-01T10:20:30.000000Z" {
			t.Errorf("%s: %s record profile %q refers to %q at %q; want a revisit of %s", l.URL, rec.Type(),
				rec.Get("WARC-Profile"), rec.Get("WARC-Refers-To-Target-URI"), rec.Get("WARC-Refers-To-Date"), orig)
		}
	}
	if l := lines[0]; l.Status != 304 || l.Digest != "" || l.Bytes != 0 {
		t.Errorf("304 line: status %d digest %q bytes %d", l.Status, l.Digest, l.Bytes)
	}
	req := requestOf(recs, recs[lines[0].WARCOffset].Get("WARC-Record-ID"))
	if req == nil || !strings.Contains(string(req.Block), "\r\nIf-None-Match: "+etagV1+"\r\n") ||
		!strings.Contains(string(req.Block), "\r\nIf-Modified-Since: "+lastModified+"\r\n") {
		t.Errorf("request record of the 304 does not show the validators sent: %v", req)
	}

	// The schedule entries, one per URL, in fetch order.
	if len(p.links.items) != 3 {
		t.Fatalf("handed %d items to the frontier, want 3 schedule entries", len(p.links.items))
	}
	newDigest := frontier.DigestPrefix(lines[2].Digest)
	want := []frontier.Capture{
		{Time: orig, Digest: sameDigest, ETag: etagV1, LastModified: site.lm, IntervalS: 7200},
		{Time: orig, Digest: sameDigest, IntervalS: 7200},
		{Time: lines[2].TS.Truncate(time.Second), Digest: newDigest, IntervalS: 7200, Changed: true},
	}
	for i, it := range p.links.items {
		if it.URL != items[i].URL || it.Depth != items[i].Depth || it.Hops != items[i].Hops || it.Lastmod != items[i].Lastmod ||
			it.Priority != items[i].Priority || it.Changefreq != items[i].Changefreq || it.Via != "" || it.Prev == nil {
			t.Fatalf("schedule entry %d: %+v, want the item's URL, depth, hops, lastmod, priority and changefreq", i, it)
		}
		got := *it.Prev
		if i == 2 {
			// The capture's time is its WARC-Date, taken when the fetch
			// started: at most a second before the line.
			if d := want[2].Time.Sub(got.Time); d < 0 || d > 2*time.Second {
				t.Errorf("changed page captured at %s, logged at %s", got.Time, lines[2].TS)
			}
			want[2].Time = got.Time
			if got.Time.Nanosecond() != 0 || got.Time.Location() != time.UTC {
				t.Errorf("capture time %s: want UTC seconds", got.Time)
			}
		}
		if !got.Time.Equal(want[i].Time) || got.Digest != want[i].Digest || got.ETag != want[i].ETag ||
			!got.LastModified.Equal(want[i].LastModified) || got.IntervalS != want[i].IntervalS || got.Changed != want[i].Changed {
			t.Errorf("schedule entry %d (%s): capture %+v, want %+v", i, it.URL, got, want[i])
		}
	}

	// The independent reader.
	if _, err := testenv.WarcioPath(); err != nil {
		t.Fatal(err)
	}
	wantIdx, err := testenv.WarcioCDXJLines(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(strings.TrimSuffix(file, ".warc.gz") + ".cdxj")
	if err != nil {
		t.Fatal(err)
	}
	gotIdx := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if !slices.Equal(gotIdx, wantIdx) {
		t.Errorf(".cdxj differs from warcio cdx-index (sorted):\nours:\n%s\nwarcio:\n%s", strings.Join(gotIdx, "\n"), strings.Join(wantIdx, "\n"))
	}
	if revisits := strings.Count(string(b), `"mime":"warc/revisit"`); revisits != 2 {
		t.Errorf("%d revisit lines in the index, want 2", revisits)
	}
}

// Validators a capture must not keep: an ETag over 1 KiB, one over
// frontier.MaxETagBytes, a Last-Modified in the future, one that does not
// parse. The first capture of a URL (no Prev) is changed, interval 0.
func TestRecrawlCaptureDropsBadValidators(t *testing.T) {
	site := newRecrawlSite(t)
	p := newRecrawlPipeline(t, true)
	for _, path := range []string{pageBigETag, pageMidETag, pageETag} {
		p.run(t, frontier.Item{URL: site.url(path)}, nil)
	}
	if len(p.links.items) != 3 {
		t.Fatalf("%d schedule entries, want 3", len(p.links.items))
	}
	for i, it := range p.links.items {
		c := it.Prev
		if c == nil || !c.Changed || c.IntervalS != 0 || c.Digest != frontier.DigestPrefix(storage.Digest([]byte(sameBody))) {
			t.Fatalf("entry %d: %+v", i, c)
		}
		wantETag, wantLM := "", time.Time{}
		if i == 2 {
			wantETag, wantLM = etagV1, site.lm
		}
		if c.ETag != wantETag || !c.LastModified.Equal(wantLM) {
			t.Errorf("%s: kept ETag %q (%d bytes) Last-Modified %s; want %q %s", it.URL, c.ETag, len(c.ETag), c.LastModified, wantETag, wantLM)
		}
	}
}

// A 304 to a request without conditions (no stored capture, or one with no
// validator to send) is fetched once more without conditions; a second 304
// is stored as a plain response, so a server that answers 304 to everything
// costs one extra fetch per URL. Recrawl off: no schedule entry, the crawl
// log and records as before.
func TestRecrawlBogus304FetchedOnceMore(t *testing.T) {
	site := newRecrawlSite(t)
	for _, recrawl := range []bool{false, true} {
		t.Run(fmt.Sprint("recrawl=", recrawl), func(t *testing.T) {
			site.mu.Lock()
			site.hits = map[string][]string{}
			site.mu.Unlock()
			p := newRecrawlPipeline(t, recrawl)
			u := site.url(pageAlways)
			p.run(t, frontier.Item{URL: u}, nil)
			p.run(t, frontier.Item{URL: u + "?with-prev", Prev: &frontier.Capture{Time: time.Now().Add(-time.Hour).Truncate(time.Second), Digest: "0123456789abcdef"}}, nil)
			if got := site.sent(pageAlways); !slices.Equal(got, []string{"|", "|", "|", "|"}) {
				t.Errorf("requests %q, want two unconditional ones per item", got)
			}
			lines, recs, _ := p.finish(t)
			for _, l := range lines {
				if rec := recs[l.WARCOffset]; l.Status != 304 || l.Revisit != "" || rec == nil || rec.Type() != storage.TypeResponse {
					t.Errorf("line %+v: want a 304 stored as a plain response", l)
				}
			}
			if len(lines) != 2 {
				t.Errorf("%d crawl-log lines, want 2", len(lines))
			}
			entries := len(p.links.items)
			if !recrawl && entries != 0 {
				t.Errorf("recrawl off: %d items handed to the frontier, want none", entries)
			}
			if recrawl && (entries != 2 || !p.links.items[1].Prev.Changed || p.links.items[1].Prev.Digest == "0123456789abcdef") {
				t.Errorf("recrawl on: entries %d, want 2, the second a changed capture", entries)
			}
		})
	}
}

// A revisit record is not written when recrawl is off, but a ready item's
// Prev still makes the fetch conditional and a 304 a revisit: the crawl
// log says so. The one-pass crawl hands the frontier nothing else.
func TestRecrawlOffStillRevisits(t *testing.T) {
	site := newRecrawlSite(t)
	p := newRecrawlPipeline(t, false)
	p.run(t, frontier.Item{URL: site.url(pageETag), Prev: &frontier.Capture{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ETag: etagV1}}, nil)
	p.wantCalls(t, "complete")
	lines, _, _ := p.finish(t)
	if len(lines) != 1 || lines[0].Revisit != storage.RevisitNotModified {
		t.Errorf("lines %+v", lines)
	}
	if len(p.links.items) != 0 {
		t.Errorf("recrawl off handed %d items", len(p.links.items))
	}
}

// With recrawl on, a 5xx is handed over as a schedule entry only once it
// is final (attempts used up: before the dead letter), never with a retry;
// a fetch error never.
func TestRecrawlScheduleOnlyFinalResponses(t *testing.T) {
	cfg := config.Default()
	cfg.Recrawl, cfg.MaxAttempts = true, 2
	cfg.MaxRetryAfterS = 0 // no 503 backoff between the runs: not under test here
	pages := map[string]memPage{pipelinePage: {status: 503, mime: "text/plain", body: "busy"}}
	p := newPipeline(t, cfg, pages)
	p.run(t, frontier.Item{URL: pipelinePage}, nil)
	p.run(t, frontier.Item{URL: pipelinePage, Attempts: 1}, nil)
	p.run(t, frontier.Item{URL: "http://a.example/down", Attempts: 1}, nil) // no response at all
	p.wantCalls(t,
		"fetch "+pipelinePage, "warc "+pipelinePage, "log 503", "retry",
		"fetch "+pipelinePage, "warc "+pipelinePage, "enqueue 1", "log 503", "fail",
		"fetch http://a.example/down", fmt.Sprintf("log %d", fetch.CodeTimeout), "fail")
	if it := p.links.items[0]; it.URL != pipelinePage || it.Prev == nil || !it.Prev.Changed || it.Prev.Digest == "" {
		t.Errorf("schedule entry %+v", it)
	}
}
