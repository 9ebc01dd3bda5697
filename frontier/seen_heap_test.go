package frontier_test

import (
	"github.com/zkcrawl/zkcrawl/testenv"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// TestGroupSeenHeapPerKey loads a group whose seen chunks hold 2^20 keys
// and checks that the owner's Group keeps them in at most 10 bytes of heap
// per key (runtime.ReadMemStats after a GC, with the Group and once it is dropped), and that Seen and
// SeenCount still answer from them.
func TestGroupSeenHeapPerKey(t *testing.T) {
	const n = 1 << 20
	c := connect(t, zkAddr(t))
	b := newBacklog(t, c, testRoot(t), 1)
	ctx := testenv.Context(t, 3*time.Minute)
	rng := rand.New(rand.NewPCG(5, 6))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	probe := []uint64{keys[0], keys[n/2], keys[n-1]}
	if err := b.PutSeenChunks(ctx, 0, keys); err != nil {
		t.Fatal(err)
	}
	keys = nil
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	grp, err := b.Open(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	if grp.SeenCount() != n {
		t.Fatalf("SeenCount %d, want %d", grp.SeenCount(), n)
	}
	for _, k := range probe {
		if !grp.Seen(k) || grp.Seen(k+1) {
			t.Fatalf("Seen(%d) false or Seen(%d) true", k, k+1)
		}
	}
	// What the group keeps: the live heap with it, less the live heap
	// once it is dropped.
	var with, without runtime.MemStats
	runtime.GC()
	runtime.GC() // the second empties sync.Pools
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(grp)
	grp = nil
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&without)
	per := float64(int64(with.HeapAlloc)-int64(without.HeapAlloc)) / n
	t.Logf("owner's seen-set: %.2f bytes of heap per key (%d keys)", per, n)
	if per > 10 {
		t.Fatalf("owner's seen-set takes %.1f bytes of heap per key, want <= 10", per)
	}
}
