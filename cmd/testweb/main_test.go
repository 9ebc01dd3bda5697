package main

import (
	"bytes"
	"context"
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
// --bound-file; the wide-only flags without --wide are usage errors.
func TestRunWide(t *testing.T) {
	dir := t.TempDir()
	bound := filepath.Join(dir, "bound.tsv")
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--wide", "--hosts", "6", "--pages", "3", "--crawl-delay-hosts", "1",
			"--crawl-delay", "3s", "--dead-hosts", "1", "--bound-file", bound, "--log-level", "warn"}, noEnv, &stdout, &stderr)
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
	if err := run(t.Context(), []string{"--rate", "2"}, noEnv, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--rate needs --wide") {
		t.Errorf("--rate without --wide: %v, want a usage error", err)
	}
}
