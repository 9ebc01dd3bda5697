package coord_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Dead letters from four processes failing 40 items at once never exceed
// the cap: exactly max become dead letters, the rest are completed, and
// the calls that dead-lettered are exactly those that reported so.
func TestFailCapHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	const processes, perProcess, max = 4, 10, 7
	root := testRoot(t)
	ctx := testenv.Context(t, 120*time.Second)
	admin := connect(t, zkAddr(t))
	q := newQueue(t, admin, root, 1)
	for i := range processes * perProcess {
		if ok, err := q.Put(ctx, 0, key("k", i), []byte(fmt.Sprint(i))); !ok || err != nil {
			t.Fatalf("Put %d = %v, %v", i, ok, err)
		}
	}
	names, _, err := q.Items(ctx, 0)
	if err != nil || len(names) != processes*perProcess {
		t.Fatalf("Items = %d, %v", len(names), err)
	}
	var claims [processes][]*coord.Claim
	for p := range processes {
		c := connect(t, zkAddr(t))
		pq := coord.NewQueue(c, root, 1)
		sess, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names[p*perProcess : (p+1)*perProcess] {
			cl, err := pq.Claim(ctx, sess, 0, name)
			if err != nil {
				t.Fatal(err)
			}
			claims[p] = append(claims[p], cl)
		}
	}
	var dead atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for p := range processes {
		for _, cl := range claims[p] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ok, err := cl.Fail(ctx, []byte("failed"), max)
				if err != nil {
					t.Errorf("Fail %s: %v", cl.Name(), err)
				}
				if ok {
					dead.Add(1)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	failed, err := q.Failed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left, _, err := q.Items(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) != max || dead.Load() != max || len(left) != 0 {
		t.Fatalf("%d dead letters (%d reported), %d items left; want %d, %d, 0", len(failed), dead.Load(), len(left), max, max)
	}
	// A requeued dead letter frees a place under the cap.
	if _, err := q.Requeue(ctx, failed[0], nil); err != nil {
		t.Fatal(err)
	}
	names, _, _ = q.Items(ctx, 0)
	sess, _ := admin.Session(ctx)
	cl, err := q.Claim(ctx, sess, 0, names[0])
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := cl.Fail(ctx, []byte("again"), max); !ok || err != nil {
		t.Fatalf("Fail under the cap after a requeue = %v, %v", ok, err)
	}
}
