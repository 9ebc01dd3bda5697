package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// Totals is the JSON document of R/totals/<worker-id>: what every run of
// that worker id has done in the crawl, summed. Workers rewrite it every
// totalsInterval and when they stop, so a killed worker loses at most one
// interval; crawlctl status sums the nodes for the crawl-wide totals.
type Totals struct {
	Pages       int64     `json:"pages"`        // items finished (completed or dead-lettered)
	Bytes       int64     `json:"bytes"`        // response body bytes stored
	Errors      int64     `json:"errors"`       // failed fetch attempts
	DeadLetters int64     `json:"dead_letters"` // items moved to R/failed
	Runs        int64     `json:"runs"`         // worker runs that contributed
	Updated     time.Time `json:"updated"`
}

// Add returns the sum of t and o (Updated: the later).
func (t Totals) Add(o Totals) Totals {
	t.Pages += o.Pages
	t.Bytes += o.Bytes
	t.Errors += o.Errors
	t.DeadLetters += o.DeadLetters
	t.Runs += o.Runs
	if o.Updated.After(t.Updated) {
		t.Updated = o.Updated
	}
	return t
}

// totalsInterval is how often a running worker rewrites its totals node.
const totalsInterval = 5 * time.Second

// keepTotals loads this id's earlier totals, then rewrites R/totals/<id>
// with them plus this run's counters every totalsInterval until ctx ends,
// and once more when it does (bounded by a few seconds). Failures are
// logged, never fatal: the totals are a report, not crawl state.
func (w *Worker) keepTotals(ctx context.Context) (final func()) {
	store := coord.Totals(w.client, w.root, w.opts.ID)
	var base Totals
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	data, _, err := store.Read(rctx)
	cancel()
	switch {
	case err == nil:
		if jerr := json.Unmarshal(data, &base); jerr != nil {
			w.log.Warn("totals node unreadable: starting it over", "znode", store.String(), "error", jerr)
			base = Totals{}
		}
	case errors.Is(err, coord.ErrNotFound):
	default:
		w.log.Warn("could not read this worker's earlier totals", "error", err)
	}
	base.Runs++
	write := func(ctx context.Context) {
		t := base.Add(w.runTotals())
		t.Runs = base.Runs
		b, _ := json.Marshal(t)
		if _, err := store.Write(ctx, b, -1); err != nil && ctx.Err() == nil {
			w.log.Warn("could not write this worker's totals", "error", fmt.Errorf("%s: %w", store, err))
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(totalsInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				write(ctx)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		write(fctx)
	}
}

// runTotals is this run's share of Totals.
func (w *Worker) runTotals() Totals {
	w.progress.mu.Lock()
	dead := w.progress.deadLetters
	w.progress.mu.Unlock()
	return Totals{
		Pages: w.counters.pages.Load(), Bytes: w.counters.bytes.Load(), Errors: w.counters.errors.Load(),
		DeadLetters: dead, Updated: time.Now().UTC(),
	}
}

// ReadTotals sums the crawl's R/totals/* nodes (crawlctl status). A crawl
// without any (no worker ran yet) has zero Totals. Errors: ZooKeeper
// errors after retries; unreadable nodes are skipped.
func ReadTotals(ctx context.Context, c *coord.Client, root string) (Totals, int, error) {
	all, err := coord.ReadAllTotals(ctx, c, root) // pipelined on the one connection
	if err != nil {
		return Totals{}, 0, err
	}
	var sum Totals
	for _, data := range all {
		var t Totals
		_ = json.Unmarshal(data, &t) // unreadable: skipped (zero)
		sum = sum.Add(t)
	}
	return sum, len(all), nil
}
