package coord_test

import (
	"github.com/zkcrawl/zkcrawl/testenv"
	"testing"
	"time"
)

// WatchShards counts every shard's items and claims and closes changed
// once one of them changes: a new item, a claim, a completion.
func TestWatchShardsCountsAndFiresOnChange(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	q := newQueue(t, c, root, 3)
	ctx := testenv.Context(t, 30*time.Second)
	isClosed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}

	st, changed, err := q.WatchShards(ctx)
	if err != nil || st.Queued != 0 || st.Claimed != 0 {
		t.Fatalf("empty queue: %+v, %v", st, err)
	}
	if n, err := produce(ctx, q, "w", 0, 2); err != nil || n != 2 {
		t.Fatalf("produce: %d, %v", n, err)
	}
	if !isClosed(changed) {
		t.Fatal("changed stayed open after items were put")
	}

	st, changed, err = q.WatchShards(ctx)
	if err != nil || st.Queued != 2 || st.Claimed != 0 {
		t.Fatalf("two items: %+v, %v; want 2 queued", st, err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := q.Take(ctx, sess, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !isClosed(changed) {
		t.Fatal("changed stayed open after a claim")
	}

	st, changed, err = q.WatchShards(ctx)
	if err != nil || st.Queued != 2 || st.Claimed != 1 {
		t.Fatalf("one claimed: %+v, %v; want 2 queued, 1 claimed", st, err)
	}
	if err := claim.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if !isClosed(changed) {
		t.Fatal("changed stayed open after a completion")
	}
	st, changed, err = q.WatchShards(ctx)
	if err != nil || st.Queued != 1 || st.Claimed != 0 {
		t.Fatalf("after the completion: %+v, %v; want 1 queued", st, err)
	}
	select {
	case <-changed:
		t.Fatal("changed closed with nothing changed")
	case <-time.After(300 * time.Millisecond):
	}
}
