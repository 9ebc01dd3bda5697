package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// faultFS is the file system seam of these tests: files opened through
// open write or fsync as os.File does until failWrite (a write is cut
// short and fails with ENOSPC, as on a full disk) or failSync (fsync fails
// with EIO, as on a failing device) is set.
type faultFS struct {
	failWrite atomic.Bool
	failSync  atomic.Bool
	opens     atomic.Int64
	syncs     atomic.Int64 // fsyncs that failed
}

func (fs *faultFS) open(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fs.opens.Add(1)
	return &faultFile{File: f, fs: fs}, nil
}

type faultFile struct {
	*os.File
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.failWrite.Load() {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.fs.failSync.Load() {
		f.fs.syncs.Add(1)
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// readLog reads the crawl log at path.
func readLog(t *testing.T, path string) []LogEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadCrawlLog(f)
	if err != nil {
		t.Fatalf("crawl log %s unreadable: %v", path, err)
	}
	return got
}

// outputs is a worker's output directory as worker/outputs.go builds it: a
// WARC writer and a crawl log, fsynced together by a SyncBatch, all files
// opened through fs.
type outputs struct {
	warc *Writer
	clog *CrawlLog
	g    *SyncBatch
}

func openOutputs(t *testing.T, dir string, fs *faultFS, maxBytes int64) *outputs {
	t.Helper()
	opts := testOptions()
	opts.MaxFileBytes = maxBytes
	w, err := NewWriter(dir, "test", opts)
	if err != nil {
		t.Fatal(err)
	}
	w.openFile = fs.open
	l, err := openCrawlLog(filepath.Join(dir, "crawl.log"), nil, fs.open)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); l.Close() })
	return &outputs{warc: w, clog: l, g: NewSyncBatch(time.Millisecond, l.Sync, w.Sync)}
}

// record is the worker's commit of one item (worker diskStore.Record): the
// item's exchange went to file (info.File, "" for none) before; its line
// is written, and it waits for a group fsync; nil means it may be
// completed.
func (o *outputs) record(file string, e LogEntry) error {
	mark := o.g.Mark()
	if err := o.clog.Write(e); err != nil {
		return err
	}
	if err := o.g.Sync(context.Background(), mark); err != nil {
		return err
	}
	if file != "" {
		return o.warc.SyncErr(file)
	}
	return nil
}

// Two CrawlLogs on one file: the second is refused with ErrInUse, so a
// short write of one can never cut away the other's fsynced lines (before,
// both opened it, and a failed write cut the file back to the size its own
// handle had seen, erasing the other's lines). Once the first is closed,
// the file opens again.
func TestCrawlLogSharedFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log")
	a, err := OpenCrawlLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := &faultFS{}
	b, err := openCrawlLog(path, nil, fs.open)
	for i := range 3 {
		if err := a.Write(LogEntry{URL: fmt.Sprintf("http://a/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		// Shared: show what it costs.
		fs.failWrite.Store(true)
		b.Write(LogEntry{URL: "http://b/0"})
		b.Close()
		a.Close()
		t.Fatalf("a second CrawlLog opened the file; after its short write the file holds %d of a's 3 fsynced lines", len(readLog(t, path)))
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second OpenCrawlLog: %v, want ErrInUse naming %s", err, path)
	}
	if fs.opens.Load() != 1 {
		t.Errorf("the refused CrawlLog left %d descriptors opened", fs.opens.Load())
	}
	if err := a.Write(LogEntry{URL: "http://a/3"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCrawlLog(path, nil)
	if err != nil {
		t.Fatalf("OpenCrawlLog after the holder closed it: %v", err)
	}
	c.Close()
	if got := readLog(t, path); len(got) != 4 {
		t.Errorf("%d lines, want a's 4", len(got))
	}
}

// A WARC file whose fsync fails at rotation fails every item whose records
// sit in it, whichever caller's round reports it, and even the items whose
// own round comes after the failure was reported and whose round succeeds
// (before, their Writer.Sync found no current file and returned nil). Items
// in the next file are not failed by it once it is reported. The failed
// file keeps its .open suffix.
func TestWARCRotationFsyncFailureReachesEveryCoveredItem(t *testing.T) {
	dir := t.TempDir()
	fs := &faultFS{}
	// 3 KiB of incompressible body: a file holds two exchanges.
	o := openOutputs(t, dir, fs, 7<<10)
	var infos []ResponseInfo
	for i := range 2 {
		info, err := o.warc.WriteExchange(testExchange(i, randomBytes(t, 3<<10)))
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	if infos[0].File != infos[1].File {
		t.Fatalf("exchanges in %s and %s, want one file", infos[0].File, infos[1].File)
	}
	// Exchange 1 filled file 1, which was closed (fsynced) then. Exchanges
	// 2 and 3 go to file 2, whose rotation (by exchange 3) fails.
	f1 := infos[0].File
	info2, err := o.warc.WriteExchange(testExchange(2, randomBytes(t, 3<<10)))
	if err != nil {
		t.Fatal(err)
	}
	if info2.File == f1 {
		t.Fatal("no rotation after two exchanges")
	}
	fs.failSync.Store(true)
	info3, err := o.warc.WriteExchange(testExchange(3, randomBytes(t, 3<<10)))
	fs.failSync.Store(false)
	if err == nil {
		t.Fatal("rotation with a failing fsync: no error for the rotating writer")
	}
	if info3.File != info2.File {
		t.Fatalf("exchange 3 in %s, want %s", info3.File, info2.File)
	}
	// The Writer's own contract: the next Sync reports the failure (before
	// it returned nil: no current file).
	if err := o.warc.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Writer.Sync after a failed rotation = %v, want EIO", err)
	}
	// Exchange 2's item commits after that Sync consumed the report: its
	// round succeeds, and still it must fail.
	if err := o.record(info2.File, LogEntry{URL: "http://x/2"}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("item whose records were in the failed file: %v, want EIO", err)
	}
	// An item of file 1 (fsynced fine at its rotation) and one with no
	// records succeed; so does an item of the next file.
	if err := o.record(f1, LogEntry{URL: "http://x/0"}); err != nil {
		t.Errorf("item of a good file: %v", err)
	}
	if err := o.record("", LogEntry{URL: "http://x/none"}); err != nil {
		t.Errorf("item without records: %v", err)
	}
	info4, err := o.warc.WriteExchange(testExchange(4, randomBytes(t, 100)))
	if err != nil {
		t.Fatal(err)
	}
	if info4.File == info2.File {
		t.Fatal("records written to the failed file after its failure")
	}
	if err := o.record(info4.File, LogEntry{URL: "http://x/4"}); err != nil {
		t.Errorf("item of the file after the failed one: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, info2.File+OpenSuffix)); err != nil {
		t.Errorf("the failed file should keep its %s suffix: %v", OpenSuffix, err)
	}
	// The good file has its index, the failed one none.
	if _, err := os.Stat(filepath.Join(dir, indexName(f1))); err != nil {
		t.Errorf("index of the good file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, indexName(info2.File))); !os.IsNotExist(err) {
		t.Errorf("the failed file got an index (stat: %v)", err)
	}
}

// A failed fsync of the current WARC file (in a round) fails every item
// whose records are in it, also those that wait in a later, successful
// round; the file is closed keeping .open and the next records go to a new
// one.
func TestWARCSyncFailureReachesEveryCoveredItem(t *testing.T) {
	dir := t.TempDir()
	fs := &faultFS{}
	o := openOutputs(t, dir, fs, 0)
	const n = 8
	infos := make([]ResponseInfo, n)
	for i := range n {
		info, err := o.warc.WriteExchange(testExchange(i, []byte(fmt.Sprintf("body %d", i))))
		if err != nil {
			t.Fatal(err)
		}
		infos[i] = info
	}
	// Another item's round fails.
	fs.failSync.Store(true)
	if err := o.record("", LogEntry{URL: "http://x/other"}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("round with a failing fsync = %v", err)
	}
	fs.failSync.Store(false)
	// The n items commit afterwards, concurrently, in rounds that succeed.
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := o.record(infos[i].File, LogEntry{URL: fmt.Sprintf("http://x/%d", i)}); !errors.Is(err, syscall.EIO) {
				t.Errorf("item %d, records in the failed file: %v, want EIO", i, err)
			}
		})
	}
	wg.Wait()
	info, err := o.warc.WriteExchange(testExchange(n, []byte("after")))
	if err != nil {
		t.Fatal(err)
	}
	if info.File == infos[0].File {
		t.Fatal("records written to the failed file after its failure")
	}
	if err := o.record(info.File, LogEntry{URL: "http://x/after"}); err != nil {
		t.Errorf("item of the new file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, infos[0].File+OpenSuffix)); err != nil {
		t.Errorf("the failed file should keep its %s suffix: %v", OpenSuffix, err)
	}
	if _, err := os.Stat(filepath.Join(dir, indexName(infos[0].File))); !os.IsNotExist(err) {
		t.Errorf("the failed file got an index (stat: %v)", err)
	}
}

// A crawl-log line written before a failed round is not told success by
// the next round (before, SyncBatch.Sync reported only its own round); the
// crawl log is reopened and later lines commit.
func TestCrawlLogFsyncFailureFailsEarlierLines(t *testing.T) {
	dir := t.TempDir()
	fs := &faultFS{}
	o := openOutputs(t, dir, fs, 0)
	opens := fs.opens.Load()
	mark := o.g.Mark()
	if err := o.clog.Write(LogEntry{URL: "http://x/early"}); err != nil {
		t.Fatal(err)
	}
	// Another item's round runs first and fails.
	fs.failSync.Store(true)
	if err := o.record("", LogEntry{URL: "http://x/other"}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("round with a failing fsync = %v", err)
	}
	fs.failSync.Store(false)
	if err := o.g.Sync(context.Background(), mark); !errors.Is(err, syscall.EIO) {
		t.Fatalf("line written before the failed round: Sync = %v, want EIO", err)
	}
	if fs.opens.Load() != opens+1 {
		t.Errorf("%d opens after the failed fsync, want the crawl log reopened once", fs.opens.Load()-opens)
	}
	if err := o.record("", LogEntry{URL: "http://x/late"}); err != nil {
		t.Errorf("line written after the failure: %v", err)
	}
	o.clog.Close()
	if got := readLog(t, filepath.Join(dir, "crawl.log")); len(got) != 3 {
		t.Errorf("%d lines, want 3", len(got))
	}
}

// The sync functions of a round run in parallel, as docs/design.md says:
// each one here waits for the other to have started.
func TestSyncBatchRunsFilesInParallel(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	fn := func() error {
		started.Done()
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the other sync function did not start while this one ran")
		}
	}
	g := NewSyncBatch(time.Millisecond, fn, fn)
	if err := g.Sync(context.Background(), g.Mark()); err != nil {
		t.Fatal(err)
	}
}
