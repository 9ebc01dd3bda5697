package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many concurrent callers share few fsync rounds, and each caller's round
// starts after its call (group commit).
func TestSyncBatchBatches(t *testing.T) {
	var calls atomic.Int64
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := NewSyncBatch(2*time.Millisecond, func() error { calls.Add(1); return f.Sync() })
	const callers = 200
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Sync(context.Background(), g.Mark()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n < 1 || n > callers/4 {
		t.Errorf("%d fsyncs for %d callers, want a few", n, callers)
	}
	if g.Rounds() != calls.Load() {
		t.Errorf("Rounds %d, fsyncs %d", g.Rounds(), calls.Load())
	}
}

// A failing sync function fails the callers of that round only; the next
// round succeeds again.
func TestSyncBatchErrorNotSticky(t *testing.T) {
	var fail atomic.Bool
	boom := errors.New("boom")
	g := NewSyncBatch(time.Millisecond, func() error {
		if fail.Load() {
			return boom
		}
		return nil
	})
	fail.Store(true)
	if err := g.Sync(context.Background(), g.Mark()); !errors.Is(err, boom) {
		t.Fatalf("Sync = %v, want boom", err)
	}
	fail.Store(false)
	if err := g.Sync(context.Background(), g.Mark()); err != nil {
		t.Fatalf("Sync after recovery = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Sync(ctx, g.Mark()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sync(cancelled) = %v", err)
	}
}

// A crawl-log write error is reported, leaves no partial line, and is not
// sticky: once the disk takes writes again, lines are written again.
func TestCrawlLogWriteErrorNotSticky(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	fs := &faultFS{}
	l, err := openCrawlLog(path, nil, fs.open)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(LogEntry{URL: "http://a/1"}); err != nil {
		t.Fatal(err)
	}
	fs.failWrite.Store(true)
	if err := l.Write(LogEntry{URL: "http://a/2"}); err == nil {
		t.Fatal("write on a full disk succeeded")
	}
	fs.failWrite.Store(false)
	if err := l.Write(LogEntry{URL: "http://a/3"}); err != nil {
		t.Fatalf("write after the disk was freed: %v", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLog(t, path)
	if len(got) != 2 || got[0].URL != "http://a/1" || got[1].URL != "http://a/3" {
		t.Errorf("crawl log %+v, want lines 1 and 3", got)
	}
}
