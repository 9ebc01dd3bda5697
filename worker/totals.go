package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// Totals is what the crawl's worker runs have done, summed: the counters
// of R/totals (see totalsDoc). Workers add their counts every
// totalsInterval and when they stop, so a killed worker loses at most one
// interval; crawlctl status and max_pages read it.
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

// sub returns t minus o, counter by counter (Runs and Updated: t's).
func (t Totals) sub(o Totals) Totals {
	t.Pages -= o.Pages
	t.Bytes -= o.Bytes
	t.Errors -= o.Errors
	t.DeadLetters -= o.DeadLetters
	return t
}

// totalsInterval is how often a running worker adds its new counts to
// R/totals.
const totalsInterval = 5 * time.Second

// totalsMarkTTL is how long a run's mark stays in R/totals after its last
// write: far longer than the few seconds a run needs to learn whether its
// last write, whose reply was lost, committed.
const totalsMarkTTL = 10 * time.Minute

// totalsDoc is the data of R/totals: the counts of every run of every
// worker, summed (Totals), and a mark per run that wrote in the last
// totalsMarkTTL. One znode for the whole crawl, however many workers come
// and go: each run adds what it counted since its last write (a delta) with
// a compare-and-set on the znode's version (ZooKeeper recipes), and its
// mark says which of its writes is in, so a write whose reply was lost is
// neither lost nor counted twice once the run reads the mark back. Size:
// about 100 bytes plus 80 per run of the last totalsMarkTTL.
type totalsDoc struct {
	Totals
	Marks map[string]totalsMark `json:"marks,omitempty"` // by run nonce
}

// totalsMark is a run's last write to R/totals.
type totalsMark struct {
	Worker string    `json:"worker"` // the worker id
	Seq    int64     `json:"seq"`    // the run's write number, from 1
	At     time.Time `json:"at"`
}

// parseTotalsDoc reads R/totals' data; empty data (the parent znode of
// older versions) is an empty doc. Errors name the znode and the reason.
func parseTotalsDoc(znode string, data []byte) (totalsDoc, error) {
	var d totalsDoc
	if len(data) > 0 {
		if err := json.Unmarshal(data, &d); err != nil {
			return totalsDoc{}, fmt.Errorf("totals %s: unreadable data: %w", znode, err)
		}
	}
	if d.Marks == nil {
		d.Marks = map[string]totalsMark{}
	}
	return d, nil
}

// totalsKeeper adds one worker run's counts to R/totals (totalsDoc).
type totalsKeeper struct {
	store *coord.ConfigStore // R/totals
	id    string             // worker id
	run   string             // this run's nonce, the key of its mark
	seq   int64              // the seq of its last write known to be in
	in    Totals             // the run's counts that are in R/totals
	// pending is a write whose outcome is not known yet (a lost reply or a
	// lost race): the next read of the mark settles it.
	pending *totalsWrite
}

// totalsWrite is one write of a run: its seq and the run's counts then.
type totalsWrite struct {
	seq    int64
	counts Totals
}

func newTotalsKeeper(c *coord.Client, root, id string) *totalsKeeper {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	return &totalsKeeper{store: coord.Store(c, root, coord.TotalsNode), id: id, run: id + "-" + hex.EncodeToString(nonce[:])}
}

// publish makes R/totals hold the run's counts now (counts: cumulative for
// the run; Runs and Updated ignored): it adds counts minus what is in
// already, and one run on the run's first write. Nothing is written when
// nothing changed. It retries lost compare-and-set races until ctx ends.
// Errors: ZooKeeper errors after retries (the write's outcome is then
// settled by the next publish), an unreadable R/totals (nothing written).
func (k *totalsKeeper) publish(ctx context.Context, counts Totals) error {
	for {
		data, ver, err := k.store.Read(ctx)
		if errors.Is(err, coord.ErrNotFound) {
			if _, err := k.store.Create(ctx, nil); err != nil && !errors.Is(err, coord.ErrVersionConflict) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		doc, err := parseTotalsDoc(k.store.String(), data)
		if err != nil {
			return err
		}
		if p := k.pending; p != nil {
			if m, ok := doc.Marks[k.run]; ok && m.Seq == p.seq {
				k.seq, k.in = p.seq, p.counts // it went in after all
			}
			// A mark missing altogether (pruned: the run was cut off
			// for totalsMarkTTL) is taken as "not in": at most one
			// interval counted twice.
			k.pending = nil
		}
		delta := counts.sub(k.in)
		delta.Runs, delta.Updated = 0, time.Now().UTC()
		if k.seq == 0 {
			delta.Runs = 1
		} else if delta.Pages == 0 && delta.Bytes == 0 && delta.Errors == 0 && delta.DeadLetters == 0 {
			return nil
		}
		w := totalsWrite{seq: k.seq + 1, counts: counts}
		doc.Totals = doc.Totals.Add(delta)
		for run, m := range doc.Marks {
			if delta.Updated.Sub(m.At) > totalsMarkTTL {
				delete(doc.Marks, run)
			}
		}
		doc.Marks[k.run] = totalsMark{Worker: k.id, Seq: w.seq, At: delta.Updated}
		b, _ := json.Marshal(doc) // plain fields: cannot fail
		k.pending = &w
		_, err = k.store.Write(ctx, b, ver)
		switch {
		case err == nil:
			k.seq, k.in, k.pending = w.seq, w.counts, nil
			return nil
		case errors.Is(err, coord.ErrVersionConflict) && ctx.Err() == nil:
			continue // another run wrote first (or ours went in): read again
		default:
			return err
		}
	}
}

// keepTotals adds this run's counters to R/totals every totalsInterval
// until ctx ends, and once more when final is called (bounded by a few
// seconds). Failures are logged, never fatal: the totals are a report, not
// crawl state.
func (w *Worker) keepTotals(ctx context.Context) (final func()) {
	k := newTotalsKeeper(w.client, w.root, w.opts.ID)
	write := func(ctx context.Context) {
		if err := k.publish(ctx, w.runTotals()); err != nil && ctx.Err() == nil {
			w.log.Warn("could not add this worker's counts to the totals", "znode", coord.Store(w.client, w.root, coord.TotalsNode).String(), "error", err)
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
		if k.pending != nil {
			// Settle a last write whose reply was lost: a publish reads
			// the mark back first.
			write(fctx)
		}
		if k.pending != nil {
			w.log.Warn("this worker's last totals write may not have gone in", "znode", coord.Store(w.client, w.root, coord.TotalsNode).String())
		}
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

// ReadTotals returns the crawl's totals (crawlctl status, max_pages): R/totals
// plus any per-worker-id nodes under it that older versions left, and the
// number of worker ids among them (those with a mark, i.e. that wrote in
// the last totalsMarkTTL, and those of the old nodes). A crawl without
// totals (no worker ran yet) has zero Totals. Errors: ZooKeeper errors
// after retries, an unreadable R/totals; unreadable old nodes are skipped.
func ReadTotals(ctx context.Context, c *coord.Client, root string) (Totals, int, error) {
	store := coord.Store(c, root, coord.TotalsNode)
	data, _, err := store.Read(ctx)
	if errors.Is(err, coord.ErrNotFound) {
		return Totals{}, 0, nil
	}
	if err != nil {
		return Totals{}, 0, err
	}
	doc, err := parseTotalsDoc(store.String(), data)
	if err != nil {
		return Totals{}, 0, err
	}
	ids := map[string]bool{}
	for _, m := range doc.Marks {
		ids[m.Worker] = true
	}
	// Older versions' per-worker-id nodes: none are written any more, so
	// the sum is consistent.
	old, err := store.Children(ctx)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return Totals{}, 0, err
	}
	sum := doc.Totals
	for id, data := range old {
		var t Totals
		_ = json.Unmarshal(data, &t) // unreadable: skipped (zero)
		sum = sum.Add(t)
		ids[id] = true
	}
	return sum, len(ids), nil
}
