package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultSyncBatchWindow is how long a SyncBatch gathers callers before it
// fsyncs: with it, a worker finishing hundreds of pages a second fsyncs a
// few hundred times a second at most, not once per page.
const DefaultSyncBatchWindow = 2 * time.Millisecond

// SyncBatch is an fsync batch (a group commit of fsyncs): many goroutines call Sync, and one
// round of the sync functions (for example CrawlLog.Sync and Writer.Sync,
// run in parallel) serves every caller that arrived before the round
// started. A caller waits for at most the gather window, one round already
// running, and its own round. A failed round fails its callers and every
// caller whose mark was taken before it failed (see Mark): after a failed
// fsync the page cache cannot be trusted, and a later fsync of the same file
// succeeds without writing what the failed one lost (fsync reports a
// write-back error once; PostgreSQL's "fsyncgate", 2018). Hand-written: the
// standard library and the usual storage modules offer fsync but no group
// commit of several files.
type SyncBatch struct {
	window time.Duration
	fns    []func() error

	observe func(time.Duration) // OnRound's hook, nil when none

	mu      sync.Mutex
	next    *syncRound // the round gathering callers, nil if none
	running bool       // the round loop goroutine is alive
	rounds  int64      // rounds run, for tests and benchmarks
	failed  SyncMark   // rounds failed so far
	lastErr error      // the error of the latest failed round
}

// SyncMark is a point in a SyncBatch's history: the number of its rounds
// that had failed then (Mark).
type SyncMark uint64

// syncRound is one run of the sync functions and its outcome.
type syncRound struct {
	done   chan struct{}
	err    error
	failed SyncMark // rounds failed when this one ended, itself included
}

// NewSyncBatch returns a SyncBatch that runs fns (all of them, in parallel,
// even after one fails) once per round, gathering callers for window (0 or
// less: DefaultSyncBatchWindow). Each fn must fsync what was written so far
// and fail if an fsync of it failed since its previous call (as
// CrawlLog.Sync and Writer.Sync do); it is called by one round at a time.
func NewSyncBatch(window time.Duration, fns ...func() error) *SyncBatch {
	if window <= 0 {
		window = DefaultSyncBatchWindow
	}
	return &SyncBatch{window: window, fns: fns}
}

// Mark returns the current point of g's history, to pass to Sync. Take it
// before the first write the Sync is to cover: a round that fails after it
// may have lost that write.
func (g *SyncBatch) Mark() SyncMark {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed
}

// Sync returns once a round of the sync functions that started after this
// call has finished: nil if it succeeded and no round failed since mark
// (taken by Mark before the caller's writes), else the round's errors
// joined, or the latest failed round's error. If ctx ends first it returns
// ctx.Err() (the round still runs for the others).
func (g *SyncBatch) Sync(ctx context.Context, mark SyncMark) error {
	g.mu.Lock()
	r := g.next
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		g.next = r
	}
	if !g.running {
		g.running = true
		go g.loop()
	}
	g.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	if r.failed > mark {
		g.mu.Lock()
		last := g.lastErr
		g.mu.Unlock()
		return fmt.Errorf("storage: %d fsync round(s) failed after this caller's writes began, so they may be lost: %w", r.failed-mark, last)
	}
	return nil
}

// OnRound sets fn to be called after every round with the time its sync
// functions took (the fsyncs themselves, not the gather window). Call it
// before the first Sync; fn must be quick.
func (g *SyncBatch) OnRound(fn func(d time.Duration)) { g.observe = fn }

// Rounds returns how many rounds have run.
func (g *SyncBatch) Rounds() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rounds
}

// loop runs rounds while callers keep arriving, then exits.
func (g *SyncBatch) loop() {
	for {
		time.Sleep(g.window)
		g.mu.Lock()
		r := g.next
		g.next = nil
		if r == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.rounds++
		g.mu.Unlock()
		start := time.Now()
		err := g.runFns()
		if g.observe != nil {
			g.observe(time.Since(start))
		}
		g.mu.Lock()
		if err != nil {
			g.failed++
			g.lastErr = err
		}
		r.err, r.failed = err, g.failed
		g.mu.Unlock()
		close(r.done)
	}
}

// runFns runs the sync functions in parallel (each file's fsync waits for
// its own device; one after the other they would add up) and joins their
// errors in the order of fns.
func (g *SyncBatch) runFns() error {
	errs := make([]error, len(g.fns))
	if len(g.fns) == 1 {
		errs[0] = g.fns[0]()
	} else {
		var wg sync.WaitGroup
		for i, fn := range g.fns {
			wg.Go(func() { errs[i] = fn() })
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}
