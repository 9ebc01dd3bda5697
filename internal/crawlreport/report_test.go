package crawlreport

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/storage"
)

// writeLog writes entries with storage's crawl-log writer to dir/crawl.log.
func writeLog(t *testing.T, dir string, entries ...storage.LogEntry) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, LogName)
	l, err := storage.OpenCrawlLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// quiet drops the bad-line warnings the tests provoke.
var quiet = slog.New(slog.DiscardHandler)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// Two workers' logs: a seed redirecting twice, a 404, a robots-precluded
// URL, a URL retried by the other worker that then succeeds, a dead host
// failing every attempt, and a bad line.
func TestReadTwoWorkers(t *testing.T) {
	root := t.TempDir()
	a := "http://a.test/"
	writeLog(t, filepath.Join(root, "w1"),
		storage.LogEntry{TS: at(0), URL: a, Status: 301, Attempt: 1},
		storage.LogEntry{TS: at(2), URL: a + "next", Via: a, Hops: "R", Status: 302, Attempt: 1},
		storage.LogEntry{TS: at(4), URL: a + "home", Via: a + "next", Hops: "RR", Status: 200, MIME: "text/html", Bytes: 100, Attempt: 1},
		storage.LogEntry{TS: at(5), URL: a + "missing", Via: a + "home", Hops: "RRL", Depth: 1, Status: 404, MIME: "text/html", Bytes: 10, Attempt: 1},
		storage.LogEntry{TS: at(6), URL: a + "private", Via: a + "home", Hops: "RRL", Depth: 1, Status: fetch.CodeRobotsPrecluded, Attempt: 1},
		storage.LogEntry{TS: at(7), URL: a + "flaky", Via: a + "home", Hops: "RRL", Depth: 1, Status: 503, MIME: "text/html", Bytes: 5, Attempt: 1},
		storage.LogEntry{TS: at(8), URL: "http://dead.test:81/", Status: fetch.CodeConnectFailed, Attempt: 1},
	)
	p2 := writeLog(t, filepath.Join(root, "w2"),
		storage.LogEntry{TS: at(9), URL: "http://dead.test:81/", Status: fetch.CodeConnectFailed, Attempt: 2},
		storage.LogEntry{TS: at(10), URL: a + "flaky", Via: a + "home", Hops: "RRL", Depth: 1, Status: 200, MIME: "text/html", Bytes: 50, Attempt: 2},
		storage.LogEntry{TS: at(11), URL: a + "img.png", Via: a + "home", Hops: "RRE", Depth: 1, Status: 200, MIME: "image/png", Bytes: 1000, Attempt: 1},
		storage.LogEntry{TS: at(12), URL: "http://dead.test:81/", Status: fetch.CodeConnectFailed, Attempt: 3},
	)
	f, err := os.OpenFile(p2, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json\n\n")
	f.Close()

	files, err := Find([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("Find: %v", files)
	}
	r, err := Read(context.Background(), "c", files, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	want := Summary{Lines: 11, SkippedLines: 1, URLs: 8, Retries: 3, Crawled: 6, Failed: 1, RobotsPrecluded: 1, DeadLetters: 1,
		Bytes: 1160, Seeds: 2, SeedsCrawled: 1, Hosts: 2}
	got := s
	got.Start, got.End, got.DurationS, got.URLsPerS, got.BytesPerS = time.Time{}, time.Time{}, 0, 0, 0
	if got != want {
		t.Errorf("summary\n got %+v\nwant %+v", got, want)
	}
	if !s.Start.Equal(at(0)) || !s.End.Equal(at(12)) || s.DurationS != 12 {
		t.Errorf("span %v..%v (%v s)", s.Start, s.End, s.DurationS)
	}
	if len(r.Skipped) != 1 || r.Skipped[0].File != p2 || r.Skipped[0].Line != 5 || !strings.Contains(r.Skipped[0].Reason, "not a crawl-log entry") {
		t.Errorf("skipped: %+v", r.Skipped)
	}
	wantSeeds := []SeedRow{
		{Seed: a, Status: 301, Crawled: true, Redirect: a + "next", Final: a + "home", FinalStatus: 200},
		{Seed: "http://dead.test:81/", Status: fetch.CodeConnectFailed},
	}
	if len(r.Seeds) != 2 || r.Seeds[0] != wantSeeds[0] || r.Seeds[1] != wantSeeds[1] {
		t.Errorf("seeds %+v", r.Seeds)
	}
	wantHosts := []HostRow{
		{Host: "a.test", URLs: 7, Bytes: 1160, S2xx: 3, S3xx: 2, S4xx: 1, Robots: 1},
		{Host: "dead.test:81", URLs: 1, Failed: 1, DeadLetters: 1},
	}
	if len(r.Hosts) != 2 || r.Hosts[0] != wantHosts[0] || r.Hosts[1] != wantHosts[1] || r.OtherHosts != nil {
		t.Errorf("hosts %+v other %+v", r.Hosts, r.OtherHosts)
	}
	wantMIME := []MIMERow{{"", 4, 0}, {"text/html", 3, 160}, {"image/png", 1, 1000}}
	if len(r.MIMETypes) != 3 || r.MIMETypes[0] != wantMIME[0] || r.MIMETypes[1] != wantMIME[1] || r.MIMETypes[2] != wantMIME[2] {
		t.Errorf("mime %+v", r.MIMETypes)
	}
	codes := map[int]int64{}
	for _, c := range r.StatusCodes {
		codes[c.Status] = c.URLs
	}
	wantCodes := map[int]int64{200: 3, 301: 1, 302: 1, 404: 1, fetch.CodeRobotsPrecluded: 1, fetch.CodeConnectFailed: 1}
	if len(codes) != len(wantCodes) {
		t.Errorf("codes %+v", r.StatusCodes)
	}
	for k, v := range wantCodes {
		if codes[k] != v {
			t.Errorf("status %d: %d URLs, want %d (%+v)", k, codes[k], v, r.StatusCodes)
		}
	}
}

// A full table folds its smallest row into other: the totals stay exact
// and the largest rows stay.
func TestTableBound(t *testing.T) {
	tb := newTable(2)
	for i, k := range []string{"a", "a", "a", "b", "b", "c", "a", "d"} {
		tb.add(k, final{status: 200, bytes: int64(i)})
	}
	rows := tb.sorted()
	var sum int64
	for _, r := range rows {
		sum += r.urls
	}
	if len(rows) != 2 || rows[0].key != "a" || rows[0].urls != 4 || sum+tb.other.urls != 8 || tb.evicted != 2 {
		t.Errorf("rows %+v %+v other %+v evicted %d", rows[0], rows[1], tb.other, tb.evicted)
	}
}

// A line over MaxLineBytes and lines without url or ts are skipped with
// their numbers; the good lines around them count.
func TestReadBadLines(t *testing.T) {
	dir := t.TempDir()
	good := `{"ts":"2026-01-02T03:04:05.000Z","url":"http://x.test/","status":200,"attempt":1}` + "\n"
	body := good + strings.Repeat("x", MaxLineBytes+10) + "\n" + `{"ts":"2026-01-02T03:04:06.000Z","status":200}` + "\n" +
		`{"url":"http://x.test/b","status":200}` + "\n" + strings.Replace(good, "x.test/", "x.test/c", 1)
	path := filepath.Join(dir, LogName)
	if err := os.WriteFile(path, []byte(strings.TrimSuffix(body, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Read(context.Background(), "", []string{path}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.URLs != 2 || r.Summary.SkippedLines != 3 {
		t.Fatalf("summary %+v", r.Summary)
	}
	for i, want := range []int64{2, 3, 4} {
		if r.Skipped[i].Line != want {
			t.Errorf("skipped %d: %+v, want line %d", i, r.Skipped[i], want)
		}
	}
}

func TestFindErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	if _, err := Find([]string{missing}); err == nil || err.Error() != "crawlreport: "+missing+": no such directory" {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := Find([]string{dir}); err == nil || !strings.Contains(err.Error(), "no crawl.log") {
		t.Errorf("empty dir: %v", err)
	}
}

// Past the pending bound a waiting URL counts early (Approximate); the
// URL counts are still one per URL when no early one is retried later.
func TestPendingBound(t *testing.T) {
	a := newAggregator()
	a.maxPending = 2
	for i := range 3 {
		a.line(&storage.LogEntry{TS: at(i), URL: "http://h.test/" + string(rune('a'+i)), Status: 503, Attempt: 1})
	}
	r := a.report()
	if r.Summary.URLs != 3 || r.Summary.DeadLetters != 3 || r.Summary.Approximate != 1 || len(a.pending) != 0 {
		t.Errorf("summary %+v", r.Summary)
	}
}

// More hosts than MaxHosts: MaxHosts rows, the rest in OtherHosts, and
// rows plus other sum to the exact totals; the biggest host is listed.
func TestReadHostBound(t *testing.T) {
	a := newAggregator()
	for i := range MaxHosts + 5 {
		a.line(&storage.LogEntry{TS: at(i), URL: fmt.Sprintf("http://h%d.test/", i), Status: 200, Bytes: 1, Attempt: 1})
	}
	for i := range 3 {
		a.line(&storage.LogEntry{TS: at(MaxHosts + 10 + i), URL: fmt.Sprintf("http://big.test/%d", i), Status: 404, Attempt: 1})
	}
	r := a.report()
	if len(r.Hosts) != MaxHosts || r.OtherHosts == nil || r.Hosts[0].Host != "big.test" || r.Hosts[0].URLs != 3 {
		t.Fatalf("%d rows, first %+v, other %+v", len(r.Hosts), r.Hosts[0], r.OtherHosts)
	}
	var urls, bytes int64
	for _, h := range append(r.Hosts, *r.OtherHosts) {
		urls += h.URLs
		bytes += h.Bytes
	}
	if urls != MaxHosts+8 || bytes != MaxHosts+5 || r.Summary.URLs != urls {
		t.Errorf("rows sum to %d URLs %d bytes; summary %+v", urls, bytes, r.Summary)
	}
}
