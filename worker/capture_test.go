package worker

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// warcRecords reads every WARC file under dir/*/ and returns the records
// of each file (by base name) by offset, and the file paths.
func warcRecords(t *testing.T, dir string) (map[string]map[int64]*storage.Record, []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[int64]*storage.Record{}
	for _, f := range files {
		byOff := map[int64]*storage.Record{}
		if err := testenv.EachWARCRecord(f, false, func(rec *storage.Record) { byOff[rec.Offset] = rec }); err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = byOff
	}
	return out, files
}

// The capture is archive-grade: every crawl log line points at its
// response (or revisit) record; a chunked page with odd-case headers is
// stored exactly as it crossed the wire and its payload is the page the
// server sent; an independent reader (warcio.js) accepts every file
// and finds every response with the status and digest of the crawl log;
// and the .cdxj beside each file is warcio.js's CDXJ index of it.
func TestCrawlCaptureIsByteExactAndReadable(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{
		Seed: 5, Hosts: 2, PagesPerHost: 4, Features: true,
		SlowDelay: 50 * time.Millisecond, LargeBytes: 64 << 10,
	})
	cfg := testConfig()
	cfg.MaxDepth = 6
	c := newCrawl(t, zk.Addr(), "capture", cfg, frontier.Layout{Shards: 4, Spread: 1}, web.Seeds())
	c.runWorkers(1, 60*time.Second)

	records, files := warcRecords(t, c.out)
	entries := c.logs()
	stored := map[string]storage.LogEntry{}
	for _, e := range entries {
		if e.WARCFile == "" {
			continue
		}
		rec := records[e.WARCFile][e.WARCOffset]
		if rec == nil || (rec.Type() != storage.TypeResponse && rec.Type() != storage.TypeRevisit) || rec.Get("WARC-Target-URI") != e.URL {
			t.Fatalf("%s: no response record at %s:%d", e.URL, e.WARCFile, e.WARCOffset)
		}
		if rec.Get("WARC-Payload-Digest") != e.Digest {
			t.Errorf("%s: record payload digest %s, crawl log %s", e.URL, rec.Get("WARC-Payload-Digest"), e.Digest)
		}
		stored[e.URL] = e
	}

	// The chunked page with odd-case header names, byte for byte.
	xr := "http://" + web.Hosts()[0] + "/xrobots.html"
	e, ok := stored[xr]
	if !ok {
		t.Fatalf("%s not stored; crawl log has %d lines", xr, len(entries))
	}
	rec := records[e.WARCFile][e.WARCOffset]
	head, _, _ := bytes.Cut(rec.Block, []byte("\r\n\r\n"))
	for _, want := range []string{"\r\nx-ROBOTS-tag: nofollow", "\r\nX-odd-CASE: Yes", "\r\nTransfer-Encoding: chunked"} {
		if !bytes.Contains(head, []byte(want)) {
			t.Errorf("stored header of %s lacks %q:\n%s", xr, want, head)
		}
	}
	payload, err := rec.HTTPPayload()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(xr)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(payload, served) {
		t.Errorf("stored payload of %s (%d bytes) differs from the page served (%d bytes)", xr, len(payload), len(served))
	}
	if bytes.Equal(rec.Block[len(head)+4:], served) {
		t.Errorf("stored body of %s has no chunk framing: it was rebuilt, not captured", xr)
	}

	// Replay: every requisite of the requisites page, and every url() of
	// its style sheets, has a response record, found by reading the
	// page and the style sheets back from the WARC files.
	responses := map[string]*storage.Record{}
	for _, byOff := range records {
		for _, r := range byOff {
			if r.Type() == storage.TypeResponse {
				responses[r.Get("WARC-Target-URI")] = r
			}
		}
	}
	reqPage := "http://" + web.Hosts()[0] + "/requisites.html"
	pageRec := responses[reqPage]
	if pageRec == nil {
		t.Fatalf("%s not in the WARC files", reqPage)
	}
	pagePayload, _ := pageRec.HTTPPayload()
	base, _ := url.Parse(reqPage)
	links, err := fetch.ExtractLinks(base, pagePayload, "text/html")
	if err != nil {
		t.Fatal(err)
	}
	need := links.Requisites
	for _, r := range links.Requisites {
		if strings.HasSuffix(r, ".css") && responses[r] != nil {
			p, _ := responses[r].HTTPPayload()
			b, _ := url.Parse(r)
			more, _ := fetch.ExtractCSSRequisites(b, p, "text/css", 0)
			need = append(need, more...)
		}
	}
	if len(need) < 10 {
		t.Fatalf("only %d requisites found in the stored page and style sheets: %q", len(need), need)
	}
	for _, r := range need {
		u, _ := frontier.Normalize(r)
		if responses[u] == nil {
			t.Errorf("requisite %s of %s is not in the WARC files", u, reqPage)
			continue
		}
		if e := stored[u]; !strings.HasSuffix(e.Hops, "E") || e.Depth != stored[reqPage].Depth {
			t.Errorf("requisite %s logged with hops %q depth %d; page depth %d", u, e.Hops, e.Depth, stored[reqPage].Depth)
		}
	}
	if e := stored["http://"+web.Hosts()[0]+"/assets/bg.png"]; !strings.HasSuffix(e.Hops, "EE") {
		t.Errorf("bg.png (loaded by site.css) has hops %q, want ...EE", e.Hops)
	}
	if e := stored["http://"+web.Hosts()[0]+"/assets/deep.png"]; !strings.HasSuffix(e.Hops, "EEE") {
		t.Errorf("deep.png (loaded by print.css, imported by site.css) has hops %q, want ...EEE", e.Hops)
	}

	// Sitemaps: the /sm/ pages are reachable only through them, the gzipped
	// child of the robots.txt sitemap index included; their depth is the
	// seed's + 1 and their hop path says how they were found.
	h0 := "http://" + web.Hosts()[0]
	for u, hops := range map[string]string{
		h0 + "/sitemap.xml": "M", h0 + "/sitemap-index.xml": "M", h0 + "/sitemaps/a.xml.gz": "MM",
		h0 + "/sm/root.html": "ML", h0 + "/sm/gz-one.html": "MML", h0 + "/sm/plain.html": "MML",
	} {
		e, ok := stored[u]
		wantDepth := 1
		if strings.HasSuffix(hops, "M") {
			wantDepth = 0
		}
		if !ok || e.Hops != hops || e.Depth != wantDepth || e.Status != 200 {
			t.Errorf("%s: logged %v with hops %q depth %d status %d; want hops %q depth %d status 200", u, ok, e.Hops, e.Depth, e.Status, hops, wantDepth)
		}
	}
	if _, ok := stored["http://"+web.Hosts()[1]+"/sm/foreign.html"]; ok {
		t.Error("a sitemap URL of another host was fetched under scope same_host")
	}

	// The independent reader.
	if _, err := testenv.WarcioPath(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]testenv.CDXLine{}
	for _, f := range files {
		lines, err := testenv.WarcioCDX(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range lines {
			if l.MIME != "" && !strings.HasPrefix(l.URL, "urn:") {
				seen[l.URL+" "+l.Offset] = l
			}
			n++
		}
		if want := len(records[filepath.Base(f)]); n != want {
			t.Errorf("%s: warcio indexed %d records, our reader %d", filepath.Base(f), n, want)
		}
	}
	t.Logf("%d URLs stored in %d WARC files; warcio indexed %d HTTP records", len(stored), len(files), len(seen))
	// The CDXJ index beside each file is warcio.js's, sorted.
	for _, f := range files {
		want, err := testenv.WarcioCDXJLines(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(strings.TrimSuffix(f, ".warc.gz") + ".cdxj")
		if err != nil {
			t.Fatalf("CDXJ index of %s: %v", filepath.Base(f), err)
		}
		got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(b) == 0 {
			got = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: .cdxj differs from warcio cdx-index (sorted):\nours:\n%s\nwarcio:\n%s", filepath.Base(f), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	for u, e := range stored {
		l, ok := seen[u+" "+itoa64(e.WARCOffset)]
		if !ok {
			t.Errorf("warcio did not find the record of %s at offset %d", u, e.WARCOffset)
			continue
		}
		if l.Status != itoa64(int64(e.Status)) || "sha1:"+l.Digest != e.Digest {
			t.Errorf("warcio reads %s as status %s digest %s; crawl log %d %s", u, l.Status, l.Digest, e.Status, e.Digest)
		}
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// A retried fetch whose payload did not change is stored as a revisit
// record (profile identical-payload-digest) pointing at the first response,
// and the crawl log points at each attempt's record.
func TestCrawlRetriedIdenticalPayloadIsRevisit(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<html><body>down for maintenance</body></html>")
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxAttempts = 3
	cfg.RetryBackoffMS = 20
	cfg.Sitemaps = false
	c := newCrawl(t, zk.Addr(), "revisit", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
	c.runWorkers(1, 30*time.Second)

	records, _ := warcRecords(t, c.out)
	var types []string
	firstID := ""
	for _, e := range c.logs() {
		if e.URL != srv.URL+"/" {
			continue
		}
		rec := records[e.WARCFile][e.WARCOffset]
		if rec == nil {
			t.Fatalf("attempt %d: no record at %s:%d", e.Attempt, e.WARCFile, e.WARCOffset)
		}
		types = append(types, rec.Type())
		if e.Attempt == 1 {
			firstID = rec.Get("WARC-Record-ID")
		} else if rec.Get("WARC-Refers-To") != firstID || rec.Get("WARC-Profile") != storage.RevisitProfile {
			t.Errorf("attempt %d: refers to %q (profile %q), want the first response %q", e.Attempt,
				rec.Get("WARC-Refers-To"), rec.Get("WARC-Profile"), firstID)
		}
	}
	if strings.Join(types, ",") != "response,revisit,revisit" {
		t.Fatalf("records of the three attempts: %v, want response,revisit,revisit", types)
	}
}
