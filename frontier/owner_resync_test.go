package frontier_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Ready items finished by another process (a previous owner's claims
// after a handoff) free their places in the owner's window only when it
// re-reads the ready items: Resync makes it do so at once, so the window
// is full again long before the periodic resync (2 s). Four rounds, each
// allowed 1 s (about 100 ms here on two busy cores): the periodic resync
// alone would meet that in all four about once in 16 runs.
func TestOwnerResyncRefillsWhatOthersFinished(t *testing.T) {
	t.Parallel()
	cfg := config.Default() // per_host_max_in_flight 1: a window of 5
	sc := newSchedCrawl(t, cfg)
	window := frontier.ReadyWindow(cfg)
	var items []frontier.Item
	for p := range 5 * window { // the first window and one refill per round
		items = append(items, frontier.Item{URL: fmt.Sprintf("http://resync.example/p/%d", p)})
	}
	sc.enqueue(items...)
	full := func(r map[string]frontier.Item, _ frontier.Pending) bool { return len(r) == window }
	before := sc.waitFor("the window full", full)
	other := connect(t, zkAddr(t)) // another worker: the owner is not told of its completions
	ctx := testenv.Context(t, 30*time.Second)
	sess, err := other.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := frontier.Open(ctx, other, sc.root)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 4 {
		for range window {
			cl, err := q.Queue().Take(ctx, sess, 0, func(string, []byte, *atomic.Value) (func(), bool) { return func() {}, true })
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Complete(ctx); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		sc.o.Resync(0)
		after := sc.waitFor("the window refilled", func(r map[string]frontier.Item, p frontier.Pending) bool {
			if len(r) != window {
				return false
			}
			for u := range r {
				if _, old := before[u]; old {
					return false
				}
			}
			return true
		})
		if took := time.Since(start); took > time.Second {
			t.Fatalf("round %d: the window refilled %v after Resync, want < 1s (the periodic resync is 2 s)", round, took.Round(time.Millisecond))
		}
		before = after
	}
}
