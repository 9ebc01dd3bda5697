package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/worker"
)

// reportSite is a loopback web: / redirects (301) to /home, which links
// to a page, a 404, a robots-precluded page and a page that answers 500
// once and 200 afterwards.
func reportSite(t *testing.T) *httptest.Server {
	var flaky atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		case "/":
			http.Redirect(w, r, "/home", http.StatusMovedPermanently)
		case "/home":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><a href="/a.html">a</a> <a href="/missing.html">m</a> <a href="/private/x.html">p</a> <a href="/flaky.html">f</a></body></html>`)
		case "/a.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body>leaf</body></html>`)
		case "/flaky.html":
			if flaky.Add(1) == 1 {
				http.Error(w, "once broken", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body>fine now</body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// deadURL returns a loopback URL whose port refuses connections.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

// A real crawl by two workers of a site with a redirecting seed, a 404,
// a robots-precluded URL and a URL retried once, plus a dead host seed:
// every report's figures match what was crawled; a bad line is named and
// skipped; --zk-dead-letters adds the dead host's dead letter.
func TestReportOfCrawl(t *testing.T) {
	srv := reportSite(t)
	dead := deadURL(t)
	cfg := testConfig()
	cfg.MaxAttempts = 2
	cfg.RetryBackoffMS = 50
	c := newCrawl(t, "report", cfg, 4, []string{srv.URL + "/", dead})
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var dones []<-chan error
	for _, id := range []string{"w1", "w2"} {
		w, err := worker.New(ctx, worker.Options{
			Servers: c.zk, Crawl: c.name, OutDir: filepath.Join(out, id), ID: id,
			SessionTimeout: 2 * time.Second, ExitWhenDone: true, QuietPeriod: time.Second,
			HeartbeatInterval: 250 * time.Millisecond, StopTimeout: 5 * time.Second, Logger: testenv.Logger().With("w", id),
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		dones = append(dones, done)
	}
	for _, d := range dones {
		if err := <-d; err != nil {
			t.Fatalf("worker: %v", err)
		}
	}

	defer func() {
		if t.Failed() {
			for _, id := range []string{"w1", "w2"} {
				b, _ := os.ReadFile(filepath.Join(out, id, "crawl.log"))
				t.Logf("%s crawl.log:\n%s", id, b)
			}
		}
	}()
	r := c.ctl("report", "--json", out)
	if r.err != nil {
		t.Fatalf("report --json: %v", r)
	}
	var rep crawlreport.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json is not one JSON document: %v\n%s", err, r.stdout)
	}
	site := strings.TrimPrefix(srv.URL, "http://")
	deadHost := strings.TrimSuffix(strings.TrimPrefix(dead, "http://"), "/")
	s := rep.Summary
	// site: / 301, /home 200, /a.html 200, /missing.html 404, the
	// worker's /sitemap.xml probe 404, /private/x.html robots,
	// /flaky.html 500 then 200; dead: 2 attempts (its robots.txt
	// unreachable: robots-prerequisite-failed, retryable).
	if s.URLs != 8 || s.Crawled != 6 || s.RobotsPrecluded != 1 || s.Failed != 1 || s.DeadLetters != 1 ||
		s.Retries != 2 || s.Lines != 10 || s.Seeds != 2 || s.SeedsCrawled != 1 || s.Hosts != 2 || s.SkippedLines != 0 {
		t.Errorf("summary %+v\n%s", s, r.stdout)
	}
	if len(rep.Hosts) != 2 {
		t.Fatalf("hosts %+v", rep.Hosts)
	}
	h := rep.Hosts[0]
	if h.Host != site || h.URLs != 7 || h.S2xx != 3 || h.S3xx != 1 || h.S4xx != 2 || h.S5xx != 0 || h.Robots != 1 || h.DeadLetters != 0 || h.Failed != 0 {
		t.Errorf("site row %+v", h)
	}
	if h.Bytes != s.Bytes {
		t.Errorf("site bytes %d, total %d (the dead host has none)", h.Bytes, s.Bytes)
	}
	d := rep.Hosts[1]
	if d.Host != deadHost || d.URLs != 1 || d.Failed != 1 || d.DeadLetters != 1 || d.Bytes != 0 {
		t.Errorf("dead host row %+v", d)
	}
	if len(rep.Seeds) != 2 {
		t.Fatalf("seeds %+v", rep.Seeds)
	}
	deadStatus := 0
	for _, sd := range rep.Seeds {
		switch sd.Seed {
		case srv.URL + "/":
			if sd.Status != 301 || !sd.Crawled || sd.Redirect != srv.URL+"/home" || sd.Final != srv.URL+"/home" || sd.FinalStatus != 200 {
				t.Errorf("redirecting seed %+v", sd)
			}
		case dead:
			deadStatus = sd.Status
			if sd.Crawled || !fetch.Retryable(sd.Status) || sd.Status >= 0 {
				t.Errorf("dead seed %+v", sd)
			}
		default:
			t.Errorf("unexpected seed %+v", sd)
		}
	}
	codes := map[int]int64{}
	for _, sc := range rep.StatusCodes {
		codes[sc.Status] += sc.URLs
	}
	if codes[200] != 3 || codes[301] != 1 || codes[404] != 2 || codes[500] != 0 || codes[fetch.CodeRobotsPrecluded] != 1 || codes[deadStatus] != 1 {
		t.Errorf("status codes %+v", rep.StatusCodes)
	}
	var mimeURLs int64
	for _, m := range rep.MIMETypes {
		mimeURLs += m.URLs
		if m.MIME == "text/html" && m.URLs != 4 || m.MIME == "text/plain" && m.URLs != 2 {
			t.Errorf("text/html: %+v", m)
		}
	}
	if mimeURLs != s.URLs {
		t.Errorf("mime rows sum to %d URLs, want %d: %+v", mimeURLs, s.URLs, rep.MIMETypes)
	}

	// The text tables, with a bad line added, and the dead letters of
	// ZooKeeper beside the logs'.
	logPath := filepath.Join(out, "w1", "crawl.log")
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "{broken")
	f.Close()
	lines := countLines(t, logPath)
	r = c.ctl("report", "--zk-dead-letters", filepath.Join(out, "w1"), filepath.Join(out, "w2"))
	if r.err != nil {
		t.Fatalf("report: %v", r)
	}
	for _, want := range []string{
		"seeds:", "hosts:", "mime types:", "status codes:", "ZK-DEAD", "robots-precluded",
		fmt.Sprintf("%s:%d: not a crawl-log entry", logPath, lines),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report text lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "bad line skipped") || !strings.Contains(r.stderr, logPath) {
		t.Errorf("stderr does not name the bad line:\n%s", r.stderr)
	}
	if f := lineWith(r.stdout, " "+srv.URL+"/ "); len(f) != 6 || f[0] != "301" || f[1] != "CRAWLED" || f[3] != srv.URL+"/home" || f[4] != srv.URL+"/home" || f[5] != "(200)" {
		t.Errorf("seed line %q", f)
	}
	// URLS BYTES 2XX 3XX 4XX 5XX FAILED ROBOTS DEAD ZK-DEAD HOST
	if f := lineWith(r.stdout, " "+deadHost); strings.Join(f, " ") != "1 0 0 0 0 0 1 0 1 1 "+deadHost {
		t.Errorf("dead host line %q", f)
	}
	r = c.ctl("report", "--json", "--zk-dead-letters", out)
	rep = crawlreport.Report{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.err != nil {
		t.Fatalf("report --json --zk-dead-letters: %v", r)
	}
	for _, h := range rep.Hosts {
		want := int64(0)
		if h.Host == deadHost {
			want = 1
		}
		if h.ZKDeadLetters == nil || *h.ZKDeadLetters != want {
			t.Errorf("host %s: zk dead letters %v, want %d", h.Host, h.ZKDeadLetters, want)
		}
	}
}

// lineWith returns the fields of the first line of text containing s.
func lineWith(text, s string) []string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l+" ", s) {
			return strings.Fields(l)
		}
	}
	return nil
}

// countLines returns the number of lines in path.
func countLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// report needs no ZooKeeper; a DIR that does not exist fails with one
// line naming it; no DIR is a usage error.
func TestReportErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	r := runCtl(context.Background(), nil, nil, "--zk", "127.0.0.1:1", "--crawl", "x", "report", missing)
	if r.err == nil || r.err.Error() != "crawlreport: "+missing+": no such directory" {
		t.Errorf("missing dir: %v", r)
	}
	r = runCtl(context.Background(), nil, nil, "--crawl", "x", "report")
	if r.err == nil || !strings.Contains(r.err.Error(), "DIR") {
		t.Errorf("no dir: %v", r)
	}
}
