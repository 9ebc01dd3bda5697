package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// 50 worker runs, each with an id of its own (the default hostname-pid),
// five at a time, half stopping cleanly and half "crashing" right after a
// write (what they counted later is lost, what they wrote is kept): R/totals
// holds no node per worker id, and the sum is exactly what they wrote.
func TestTotalsBoundedAcrossRestarts(t *testing.T) {
	zk1 := testenv.ZooKeeper(t)
	c := newCrawl(t, zk1.Addr(), "totals50", testConfig(), frontier.Layout{Shards: 1, Spread: 1}, nil)
	const restarts, together = 50, 5
	var mu sync.Mutex
	var want Totals
	for batch := 0; batch < restarts; batch += together {
		var wg sync.WaitGroup
		for i := batch; i < batch+together; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := newWorker(Options{ID: fmt.Sprintf("host-%d", 4000+i), Logger: testLogger(t)}, c.root)
				w.client = c.client
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				final := w.keepTotals(ctx)
				w.counters.pages.Add(int64(i + 1))
				w.counters.bytes.Add(int64(1000 * (i + 1)))
				w.counters.errors.Add(1)
				final()
				if i%2 == 1 {
					w.counters.pages.Add(100) // counted after its last write, then killed
				}
				mu.Lock()
				want.Pages += int64(i + 1)
				want.Bytes += int64(1000 * (i + 1))
				want.Errors++
				want.Runs++
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes, err := coord.Store(c.client, c.root, coord.TotalsNode).Children(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes)+1 > 0+1 { // no worker is live now: R/totals alone
		t.Errorf("%d totals nodes under %s after %d runs; want none (bounded by live workers)", len(nodes), coord.Store(c.client, c.root, coord.TotalsNode).String(), restarts)
	}
	got, _, err := ReadTotals(ctx, c.client, c.root)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pages != want.Pages || got.Bytes != want.Bytes || got.Errors != want.Errors || got.Runs != want.Runs {
		t.Fatalf("totals %+v; want pages %d, bytes %d, errors %d, runs %d", got, want.Pages, want.Bytes, want.Errors, want.Runs)
	}
}

// A write whose reply was lost is settled by the run's mark in R/totals:
// one that went in is not added again, one that did not is added by the
// next write; an old per-worker-id node is still counted.
func TestTotalsLostReplySettled(t *testing.T) {
	zk1 := testenv.ZooKeeper(t)
	c := newCrawl(t, zk1.Addr(), "totalslost", testConfig(), frontier.Layout{Shards: 1, Spread: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := coord.Store(c.client, c.root, coord.TotalsNode, "old-id").Write(ctx, []byte(`{"pages":7,"runs":1}`), -1); err != nil {
		t.Fatal(err)
	}
	k := newTotalsKeeper(c.client, c.root, "w1")
	if err := k.publish(ctx, Totals{Pages: 10}); err != nil {
		t.Fatal(err)
	}
	// Went in, reply lost: the run still thinks 0 pages are in.
	k.pending, k.seq, k.in = &totalsWrite{seq: k.seq, counts: k.in}, 0, Totals{}
	if err := k.publish(ctx, Totals{Pages: 15}); err != nil {
		t.Fatal(err)
	}
	// Did not go in, reply lost: the next write adds its pages.
	k.pending = &totalsWrite{seq: k.seq + 1, counts: Totals{Pages: 20}}
	if err := k.publish(ctx, Totals{Pages: 21}); err != nil {
		t.Fatal(err)
	}
	got, ids, err := ReadTotals(ctx, c.client, c.root)
	if err != nil || got.Pages != 7+21 || got.Runs != 2 || ids != 2 {
		t.Fatalf("totals %+v from %d worker ids, %v; want 28 pages, 2 runs, 2 ids", got, ids, err)
	}
}
