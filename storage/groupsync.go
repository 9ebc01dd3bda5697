package storage

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultGroupSyncWindow is how long a GroupSync gathers callers before it
// fsyncs: with it, a worker finishing hundreds of pages a second fsyncs a
// few hundred times a second at most, not once per page.
const DefaultGroupSyncWindow = 2 * time.Millisecond

// GroupSync is a group commit of fsyncs: many goroutines call Sync, and one
// round of the sync functions (for example CrawlLog.Sync and Writer.Sync)
// serves every caller that arrived before the round started. A caller waits
// for at most the gather window, one round already running, and its own
// round. Hand-written: the standard library and the usual storage modules
// offer fsync but no group commit of several files.
type GroupSync struct {
	window time.Duration
	fns    []func() error

	observe func(time.Duration) // OnRound's hook, nil when none

	mu      sync.Mutex
	next    *syncRound // the round gathering callers, nil if none
	running bool       // the round loop goroutine is alive
	rounds  int64      // rounds run, for tests and benchmarks
}

// syncRound is one run of the sync functions and its outcome.
type syncRound struct {
	done chan struct{}
	err  error
}

// NewGroupSync returns a GroupSync that runs fns (in order, all of them, even
// after one fails) once per round, gathering callers for window (0 or less:
// DefaultGroupSyncWindow).
func NewGroupSync(window time.Duration, fns ...func() error) *GroupSync {
	if window <= 0 {
		window = DefaultGroupSyncWindow
	}
	return &GroupSync{window: window, fns: fns}
}

// Sync returns once a round of the sync functions that started after this
// call has finished: nil if all succeeded, else their errors joined. If ctx
// ends first it returns ctx.Err() (the round still runs for the others).
func (g *GroupSync) Sync(ctx context.Context) error {
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
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnRound sets fn to be called after every round with the time its sync
// functions took (the fsyncs themselves, not the gather window). Call it
// before the first Sync; fn must be quick.
func (g *GroupSync) OnRound(fn func(d time.Duration)) { g.observe = fn }

// Rounds returns how many rounds have run.
func (g *GroupSync) Rounds() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rounds
}

// loop runs rounds while callers keep arriving, then exits.
func (g *GroupSync) loop() {
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
		var errs []error
		start := time.Now()
		for _, fn := range g.fns {
			if err := fn(); err != nil {
				errs = append(errs, err)
			}
		}
		if g.observe != nil {
			g.observe(time.Since(start))
		}
		r.err = errors.Join(errs...)
		close(r.done)
	}
}
