package coord_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A 3-node ensemble loses its leader during a 2,000-item queue run: the run
// completes and nothing is lost.
func TestEnsembleLeaderKilled(t *testing.T) {
	t.Parallel()
	const consumers, items, shards = 3, 2000, 4
	ens := testenv.NewEnsemble(t, 3)
	ctx := testenv.Context(t, 150*time.Second)
	root := testRoot(t)
	admin := connect(t, ens.ConnString())
	q := newQueue(t, admin, root, shards)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	l := newLedger()
	var cwg sync.WaitGroup
	for i := 0; i < consumers; i++ {
		c := connect(t, ens.ConnString())
		consume(cctx, t, coord.NewQueue(c, root, shards), c, l, 2*time.Millisecond, &cwg)
	}
	killed := make(chan int, 1)
	go func() {
		// Kill the leader once about a quarter of the items are processed.
		for {
			if n, _, _ := l.counts(); n >= items/4 || cctx.Err() != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		leader, err := ens.Leader(lctx)
		if err != nil {
			t.Errorf("leader: %v", err)
			killed <- -1
			return
		}
		if err := ens.Servers()[leader].Kill(); err != nil {
			t.Errorf("kill leader: %v", err)
		}
		killed <- leader
	}()
	start := time.Now()
	for lo := 0; lo < items; lo += 100 {
		if _, err := produce(ctx, q, "ens", lo, lo+100); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	leader := <-killed
	testenv.Eventually(t, 120*time.Second, "every item processed and the queue empty", func() bool {
		n, _, _ := l.counts()
		if n < items {
			return t.Failed()
		}
		left, claims := queueLeft(t, admin, root, shards)
		return left == 0 && claims == 0
	})
	stop()
	cwg.Wait()
	processed, completedKeys, completions := l.counts()
	t.Logf("leader %d killed; %d keys processed, %d completed (%d completions) in %v",
		leader, processed, completedKeys, completions, time.Since(start).Round(time.Millisecond))
	if processed != items {
		t.Fatalf("%d keys processed, want %d", processed, items)
	}
	if completions > items {
		t.Fatalf("%d completions for %d items", completions, items)
	}
}
