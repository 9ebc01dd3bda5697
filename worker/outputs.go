package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zkcrawl/zkcrawl/storage"
)

// Output health: an item is completed only after its
// crawl-log line and WARC records are written and fsynced. When a write or
// fsync fails, the item is released uncompleted, the worker stops claiming,
// says why in its status node (storage_error, shown by crawlctl status), and
// probes its output directory until writes succeed again.

// outputProbeInterval is how often a worker whose writes failed tries again.
const outputProbeInterval = time.Second

// outputProbeBytes is the size of the probe file: writes are taken to work
// again once this much can be written and fsynced in the output directory.
const outputProbeBytes = 64 << 10

// outputHealth is the write state of this worker's outputs.
type outputHealth struct {
	mu        sync.Mutex
	err       string    // why writes are failing; "" when they work
	since     time.Time // first failure of the current outage
	lastProbe time.Time
}

// record writes the crawl-log line e (time-stamped now) and waits until it
// and the item's WARC records are on stable storage (exchangeStore.Record):
// after it returns nil the item may be finished. The line counts in the
// progress line's outcome classes.
func (w *Worker) record(ctx context.Context, e storage.LogEntry) error {
	e.TS = time.Now()
	if err := w.store.Record(ctx, e); err != nil {
		return err
	}
	w.progress.logged(e.Status)
	return nil
}

// diskStore is the worker's exchangeStore: WARC files and crawl.log in one
// output directory, fsynced together (storage.SyncBatch: one fsync round per
// ~2 ms serves every item that got there).
type diskStore struct {
	warc   *storage.Writer
	clog   *storage.CrawlLog
	syncer *storage.SyncBatch
}

// openDiskStore opens the WARC writer ("zkcrawl-<id>-....warc.gz") and
// crawl.log in opts.OutDir. Errors name the directory and the file kind.
func openDiskStore(opts Options, log *slog.Logger) (*diskStore, error) {
	warc, err := storage.NewWriter(opts.OutDir, "zkcrawl-"+opts.ID, storage.WriterOptions{
		MaxFileBytes: opts.WARCMaxBytes,
		WorkerID:     opts.ID,
		Version:      opts.Version,
		Description:  "zkcrawl crawl " + opts.Crawl,
		Logger:       log,
	})
	if err != nil {
		return nil, fmt.Errorf("worker: WARC writer in %s: %w", opts.OutDir, err)
	}
	clog, err := storage.OpenCrawlLog(filepath.Join(opts.OutDir, "crawl.log"), log)
	if err != nil {
		warc.Close()
		return nil, fmt.Errorf("worker: crawl log in %s: %w", opts.OutDir, err)
	}
	return &diskStore{warc: warc, clog: clog, syncer: storage.NewSyncBatch(0, clog.Sync, warc.Sync)}, nil
}

// WriteExchange writes ex's WARC records (storage.Writer.WriteExchange).
func (d *diskStore) WriteExchange(ex storage.Exchange) (storage.ResponseInfo, error) {
	return d.warc.WriteExchange(ex)
}

// WriteResource writes a resource record (storage.Writer.WriteResource).
func (d *diskStore) WriteResource(r storage.Resource) (storage.ResponseInfo, error) {
	return d.warc.WriteResource(r)
}

// Record writes the crawl-log line e and waits for the next fsync batch of
// the crawl log and the WARC file. It fails when that round fails, when a
// round failed after the line was written (the mark is taken before), and
// when an fsync of the WARC file holding the item's records (e.WARCFile,
// written before the line) failed at any time, also if that file was
// rotated away and its failure reported to another item: after a failed
// fsync the page cache cannot be trusted, so every item the failed fsync
// covered is released for another try, none completed.
func (d *diskStore) Record(ctx context.Context, e storage.LogEntry) error {
	mark := d.syncer.Mark()
	if err := d.clog.Write(e); err != nil {
		return err
	}
	if err := d.syncer.Sync(ctx, mark); err != nil {
		return err
	}
	if e.WARCFile != "" {
		return d.warc.SyncErr(e.WARCFile)
	}
	return nil
}

// Files returns how many WARC files were written.
func (d *diskStore) Files() int { return d.warc.Files() }

// Close closes the WARC file and the crawl log.
func (d *diskStore) Close() error { return errors.Join(d.warc.Close(), d.clog.Close()) }

// outputFailed notes that a write or fsync of the outputs failed with err:
// claiming stops until probeOutputs sees writes succeed. A ctx error is not an
// output failure and is ignored.
func (w *Worker) outputFailed(ctx context.Context, err error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return
	}
	h := &w.outputs
	h.mu.Lock()
	first := h.err == ""
	if first {
		h.since = time.Now()
		h.lastProbe = time.Now()
	}
	h.err = fmt.Sprintf("output writes failing since %s: %v; not claiming until they succeed", h.since.UTC().Format(time.RFC3339), err)
	h.mu.Unlock()
	if first {
		w.log.Error("writing the crawl log or WARC file failed: claiming stops, in-flight items are released, and writes are tried again every second",
			"out", w.opts.OutDir, "error", err)
	}
}

// outputError returns why claiming is stopped, "" when outputs work.
func (w *Worker) outputError() string {
	w.outputs.mu.Lock()
	defer w.outputs.mu.Unlock()
	return w.outputs.err
}

// outputsWritable reports whether the claim loops may claim: true when
// writes work; while they fail, it probes the output directory at most once
// per outputProbeInterval (for all callers together) and turns true, waking
// the claim loops, once a probe succeeds.
func (w *Worker) outputsWritable() bool {
	h := &w.outputs
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == "" {
		return true
	}
	if time.Since(h.lastProbe) < outputProbeInterval {
		return false
	}
	h.lastProbe = time.Now()
	if err := probeDir(w.opts.OutDir); err != nil {
		w.log.Debug("output directory still not writable", "out", w.opts.OutDir, "error", err)
		return false
	}
	w.log.Info("output writes succeed again: claiming resumes", "out", w.opts.OutDir, "stopped_for", time.Since(h.since).Round(time.Millisecond))
	h.err = ""
	go w.wake.Fire()
	return true
}

// probeDir writes, fsyncs and removes an outputProbeBytes file in dir.
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".zkcrawl-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, outputProbeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
