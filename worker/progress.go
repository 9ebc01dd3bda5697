package worker

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
)

// DefaultProgressInterval is how often a worker logs a progress line when
// Options.ProgressInterval is 0.
const DefaultProgressInterval = 10 * time.Second

// progress keeps what the periodic progress line and the stop summary show
// beyond the status counters: crawl log lines by outcome class and the dead
// letters this worker wrote.
type progress struct {
	start time.Time

	mu          sync.Mutex
	classes     map[string]int64 // "2xx".."5xx" or a fetch code name ("timeout", ...)
	deadLetters int64
	reason      string // why the worker stopped; the first reason set wins
}

// stopping records why the worker stops ("drain", "crawl done"); the first
// call wins.
func (p *progress) stopping(reason string) {
	p.mu.Lock()
	if p.reason == "" {
		p.reason = reason
	}
	p.mu.Unlock()
}

func newProgress() *progress {
	return &progress{start: time.Now(), classes: map[string]int64{}}
}

// outcomeClass names a crawl log status: "2xx".."5xx" for HTTP statuses,
// the Heritrix-style code name (fetch.CodeName) for the negative ones.
func outcomeClass(status int) string {
	if status > 0 {
		return strconv.Itoa(status/100) + "xx"
	}
	return fetch.CodeName(status)
}

// logged counts one crawl log line (one fetch attempt) by its status.
func (p *progress) logged(status int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.classes[outcomeClass(status)]++
	p.mu.Unlock()
}

// deadLettered counts one item this worker moved to R/failed.
func (p *progress) deadLettered() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.deadLetters++
	p.mu.Unlock()
}

// errorClasses returns the counts of every class but 2xx and 3xx, as
// "class=n" pairs sorted by class, e.g. "4xx=3 timeout=1"; "none" if none.
func (p *progress) errorClasses() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []string
	for k := range p.classes {
		if k != "2xx" && k != "3xx" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "none"
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += " "
		}
		s += k + "=" + strconv.FormatInt(p.classes[k], 10)
	}
	return s
}

// logProgress logs one progress line every interval until ctx ends: pages
// finished (completed or dead-lettered), pages/s over the last interval,
// body bytes stored, fetch attempts by error class, claims held (fetches
// in flight) and owned shards.
func (w *Worker) logProgress(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last, lastAt := w.counters.pages.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			pages := w.counters.pages.Load()
			rate := float64(pages-last) / now.Sub(lastAt).Seconds()
			last, lastAt = pages, now
			w.log.Info("progress",
				"pages", pages, "pages_per_s", roundRate(rate), "bytes", w.counters.bytes.Load(),
				"errors", w.progress.errorClasses(), "claims", w.counters.inFlight.Load(),
				"shards_owned", w.counters.shardsOwned.Load())
		}
	}
}

// logSummary logs what this worker did between New and its stop: pages,
// bytes, failed attempts, dead letters, elapsed time and WARC files written.
func (w *Worker) logSummary() {
	w.progress.stopping("stop requested (signal)")
	elapsed := time.Since(w.progress.start)
	pages := w.counters.pages.Load()
	files := 0
	if s, ok := w.store.(storeCloser); ok {
		files = s.Files()
	}
	w.progress.mu.Lock()
	dead, reason := w.progress.deadLetters, w.progress.reason
	w.progress.mu.Unlock()
	w.log.LogAttrs(context.Background(), slog.LevelInfo, "summary",
		slog.String("stopped", reason),
		slog.Int64("pages", pages),
		slog.Int64("bytes", w.counters.bytes.Load()),
		slog.Int64("failed_attempts", w.counters.errors.Load()),
		slog.Int64("dead_letters", dead),
		slog.String("errors", w.progress.errorClasses()),
		slog.Duration("elapsed", elapsed.Round(time.Millisecond)),
		slog.Float64("pages_per_s", roundRate(float64(pages)/max(elapsed.Seconds(), 1e-9))),
		slog.Int("warc_files", files),
	)
}

func roundRate(r float64) float64 { return float64(int64(r*10+0.5)) / 10 }
