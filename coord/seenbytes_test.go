package coord_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// TestBacklogSeenBytes: once a group's batches retire into seen chunks,
// SeenBytes reports their data bytes (a few bytes per delta-coded key);
// a group with no chunk reports 0 and a group out of range is refused.
func TestBacklogSeenBytes(t *testing.T) {
	t.Parallel()
	const keys = 500
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	b := newBacklog(t, c, root, 2)
	ctx := ctxT(t, 60*time.Second)
	var recs [][]byte
	for i := range keys {
		recs = append(recs, []byte(fmt.Sprintf("rec-%05d", i)))
	}
	if err := b.Post(ctx, 1, recs); err != nil {
		t.Fatal(err)
	}
	octx, stop := context.WithCancel(ctx)
	done := make(chan int)
	go func() { done <- owner(octx, t, c, b, 1) }()
	eventually(t, 30*time.Second, "every batch retired", func() bool {
		st, err := b.Stats(ctx)
		return err == nil && st[1].Seen == keys && st[1].Batches == 0
	})
	stop()
	<-done
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.SeenBytes(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st[1].SeenChunks == 0 || n <= 0 || n > 16*keys {
		t.Fatalf("SeenBytes = %d for %d keys in %d chunks; want 1..%d", n, st[1].Seen, st[1].SeenChunks, 16*keys)
	}
	if n0, err := b.SeenBytes(ctx, 0); err != nil || n0 != 0 {
		t.Fatalf("SeenBytes of an empty group = %d, %v; want 0, nil", n0, err)
	}
	if _, err := b.SeenBytes(ctx, 2); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("SeenBytes of group 2 of 2: %v; want ErrInvalidArgument", err)
	}
}
