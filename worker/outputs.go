package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/zkcrawl/zkcrawl/storage"
)

// Output health (issue 10 items 1 and 2): an item is completed only after its
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

// record writes the crawl-log line e and waits for the group fsync of the
// crawl log and the WARC file: after it returns nil, the line and the item's
// WARC records are on stable storage and the item may be completed.
func (w *Worker) record(ctx context.Context, e storage.LogEntry) error {
	e.TS = time.Now()
	if err := w.clog.Write(e); err != nil {
		return err
	}
	return w.syncer.Sync(ctx)
}

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
