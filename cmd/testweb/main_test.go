package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func noEnv(string) (string, bool) { return "", false }

// --wide serves the wide web, prints its politeness bound and writes it to
// --bound-file, and logs each request to --arrivals-file; the wide-only
// flags without --wide are usage errors.
func TestRunWide(t *testing.T) {
	dir := t.TempDir()
	bound, arrivals := filepath.Join(dir, "bound.tsv"), filepath.Join(dir, "arrivals.tsv")
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--wide", "--hosts", "6", "--pages", "3", "--crawl-delay-hosts", "1",
			"--crawl-delay", "3s", "--dead-hosts", "1", "--bound-file", bound, "--arrivals-file", arrivals,
			"--latency-median", "1ms", "--latency-p99", "2ms", "--log-level", "warn"}, noEnv, &stdout, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(bound); err == nil && strings.Count(stdout.String(), "\n") == 6 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no bound file and 6 seeds after 30s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var seed string
	for _, s := range strings.Fields(stdout.String()) {
		if resp, err := http.Get(s + "robots.txt"); err == nil { // the dead host refuses
			resp.Body.Close()
			seed = s
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(bound)
	if err != nil {
		t.Fatal(err)
	}
	// The Crawl-delay host: robots.txt, "/", /sitemap.xml and 3 pages, 3 s
	// apart, and its last answer's latency: more than 15 s.
	if !strings.HasPrefix(string(data), "bound_s\t1") || !strings.Contains(string(data), "\nrequests\t30\n") {
		t.Errorf("bound file:\n%s\nwant bound_s 15..20 s over 30 requests (5 serving hosts x 6)", data)
	}
	if !strings.Contains(stderr.String(), "testweb: politeness bound ") {
		t.Errorf("stderr lacks the bound:\n%s", stderr.String())
	}
	if data, err = os.ReadFile(arrivals); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(seed, "http://"), "/")
	if f := strings.Split(strings.TrimSuffix(string(data), "\n"), "\t"); seed == "" || len(f) != 5 || f[1] != host || f[2] != "/robots.txt" || f[3] != "200" {
		t.Errorf("arrivals file %q: want one line: time, %s, /robots.txt, 200, user agent", data, host)
	}
	if err := run(t.Context(), []string{"--rate", "2"}, noEnv, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--rate needs --wide") {
		t.Errorf("--rate without --wide: %v, want a usage error", err)
	}
}

// --change-min/--change-max serve changing pages (the range also from the
// environment) and write every version to --changes-file at exit; the
// mutation flags alone are usage errors.
func TestRunChanges(t *testing.T) {
	dir := t.TempDir()
	changes := filepath.Join(dir, "changes.tsv")
	env := func(k string) (string, bool) {
		if k == "ZKCRAWL_CHANGE_MAX" {
			return "100ms", true
		}
		return "", false
	}
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--hosts", "2", "--pages", "3", "--change-min", "50ms",
			"--changes-file", changes, "--log-level", "warn"}, env, &stdout, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(stdout.String(), "\n") < 2 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no seeds after 30s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(changes)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]int{} // url -> versions
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 || !strings.HasPrefix(f[4], "sha1:") {
			t.Fatalf("changes line %q: want url, version, time, mean, digest", line)
		}
		pages[f[0]]++
	}
	if len(pages) != 2*4 {
		t.Errorf("changes file covers %d pages, want 8 (\"/\" and 3 pages per host)", len(pages))
	}
	for u, n := range pages {
		if n < 2 {
			t.Errorf("%s: %d versions over 0.5 s at mean intervals of 50-100 ms", u, n)
		}
	}
	for _, args := range [][]string{{"--changes-file", changes}, {"--change-min", "1s"}, {"--change-max", "1s"}} {
		if err := run(t.Context(), args, noEnv, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "need") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// --spa serves the single-page-app fixture, prints its seed and logs each
// request to --arrivals-file; the synthetic web's flags with --spa are
// usage errors. (The truth's rendering is
// testenv.TestSPATruth's.)
func TestRunSPA(t *testing.T) {
	arrivals := filepath.Join(t.TempDir(), "arrivals.tsv")
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--spa", "--pages", "2", "--arrivals-file", arrivals, "--log-level", "warn"}, noEnv, &stdout, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.HasSuffix(stdout.String(), "/\n") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no seed after 30s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	seed := strings.TrimSpace(stdout.String())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, seed+"page/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(arrivals)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(seed, "http://"), "/")
	if f := strings.Split(strings.TrimSuffix(string(data), "\n"), "\t"); len(f) != 5 || f[1] != host || f[2] != "/page/1" || f[3] != "200" {
		t.Errorf("arrivals file %q: want one line: time, %s, /page/1, 200, user agent", data, host)
	}
	for _, args := range [][]string{{"--spa", "--hosts", "3"}, {"--spa", "--wide"}} {
		if err := run(t.Context(), args, noEnv, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "spa") {
			t.Errorf("%v: %v, want a usage error naming --spa", args, err)
		}
	}
}
