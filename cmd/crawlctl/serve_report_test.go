package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// serve --report-dir: /report has the text tables, /api/report the JSON;
// without report dirs /report is 404. No ZooKeeper is involved.
func TestServeReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := storage.OpenCrawlLog(filepath.Join(dir, "crawl.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []storage.LogEntry{
		{URL: "http://a.test/", Status: 200, MIME: "text/html", Bytes: 7, Attempt: 1},
		{URL: "http://a.test/x", Via: "http://a.test/", Hops: "L", Depth: 1, Status: 404, Attempt: 1},
	} {
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	d := &dashboard{c: &ctl{g: &globals{crawl: "rep"}, log: testenv.Logger()}, reportDirs: []string{filepath.Dir(dir)}}
	srv := httptest.NewServer(d.handler())
	t.Cleanup(srv.Close)
	get := func(path string) (int, string) {
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	code, body := get("/report")
	if code != 200 || !strings.Contains(body, "urls:     2 (2 crawled") || !strings.Contains(body, "a.test") {
		t.Errorf("/report: %d\n%s", code, body)
	}
	code, body = get("/api/report")
	var rep crawlreport.Report
	if err := json.Unmarshal([]byte(body), &rep); code != 200 || err != nil || rep.Crawl != "rep" || rep.Summary.URLs != 2 || len(rep.Hosts) != 1 {
		t.Errorf("/api/report: %d %v\n%s", code, err, body)
	}
	d.reportDirs = nil
	if code, _ := get("/report"); code != http.StatusNotFound {
		t.Errorf("/report without --report-dir: %d", code)
	}
}
