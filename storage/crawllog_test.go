package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCrawlLogFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	l, err := OpenCrawlLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.FixedZone("X", 2*3600))
	e := LogEntry{TS: ts, URL: "http://example.com/", Status: 200, Bytes: 1234, MIME: "text/html", Depth: 1,
		Via: "http://example.com/seed", Hops: "L", Worker: "w1", DurationMS: 42, Digest: "sha1:ABC", Attempt: 1,
		ConfigVersion: 7, WARCFile: "a.warc.gz", WARCOffset: 512}
	if err := l.Write(e); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(LogEntry{URL: "http://example.com/x", Status: -9998, Attempt: 1, Error: "robots.txt disallows"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("after Flush: %d lines, want 2:\n%s", len(lines), data)
	}
	if !strings.Contains(lines[0], `"via":"http://example.com/seed","hops":"L",`) {
		t.Errorf("hops not written after via: %s", lines[0])
	}
	if !strings.HasPrefix(lines[0], `{"ts":"2025-06-07T06:09:10.123Z",`) {
		t.Errorf("first line does not start with ts in RFC 3339 ms UTC: %s", lines[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "attempt bytes config_version depth digest duration_ms hops mime status ts url via warc_file warc_offset worker"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys %q, want %q", got, want)
	}
	m = nil
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	if m["error"] != "robots.txt disallows" || m["status"] != float64(-9998) {
		t.Errorf("second line %s", lines[1])
	}
	if _, ok := m["warc_file"]; ok {
		t.Errorf("empty warc_file not omitted: %s", lines[1])
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(m["ts"].(string)) {
		t.Errorf("filled ts %q", m["ts"])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(e); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}

	f, _ := os.Open(path)
	defer f.Close()
	got, err := ReadCrawlLog(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("ReadCrawlLog: %d entries", len(got))
	}
	g := got[0]
	if !g.TS.Equal(ts.Truncate(time.Millisecond)) {
		t.Errorf("ts %v, want %v", g.TS, ts.Truncate(time.Millisecond))
	}
	g.TS = e.TS
	if g != e {
		t.Errorf("round trip:\n got %+v\nwant %+v", g, e)
	}
}

func TestCrawlLogAppendAndConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	for round := 0; round < 2; round++ {
		l, err := OpenCrawlLog(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					u := fmt.Sprintf("http://example.com/%d/%d/%d/%s", round, g, i, strings.Repeat("x", i*10))
					if err := l.Write(LogEntry{URL: u, Status: 200, Worker: "w"}); err != nil {
						t.Error(err)
						return
					}
					if i%25 == 0 {
						l.Flush()
					}
				}
			}(g)
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ReadCrawlLog(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2*8*100 {
		t.Fatalf("%d entries, want %d", len(entries), 2*8*100)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.URL] = true
	}
	if len(seen) != len(entries) {
		t.Fatalf("duplicate or mangled lines: %d distinct of %d", len(seen), len(entries))
	}
}

func TestReadCrawlLogErrors(t *testing.T) {
	in := `{"ts":"2025-01-01T00:00:00.000Z","url":"http://a/"}` + "\n\n" + `{"ts":"2025-01-01T00:00:00.000Z","url":` + "\n"
	got, err := ReadCrawlLog(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 3") || len(got) != 1 {
		t.Errorf("ReadCrawlLog: %d entries, err %v; want 1 entry and an error naming line 3", len(got), err)
	}
	if _, err := ReadCrawlLog(strings.NewReader(`{"url":"http://a/"}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("missing ts: %v", err)
	}
	if _, err := OpenCrawlLog(filepath.Join(t.TempDir(), "no", "such", "dir", "crawl.log"), nil); err == nil || !strings.Contains(err.Error(), "crawl.log") {
		t.Errorf("OpenCrawlLog in a missing directory: %v", err)
	}
}
