package seenset

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// checkInvariants fails t unless s's levels and tail are sorted, distinct,
// pairwise disjoint, within their bounds and sum to Len.
func checkInvariants(t *testing.T, s *Set) {
	t.Helper()
	all := slices.Clone(s.tail)
	if len(s.tail) >= tailKeys {
		t.Fatalf("tail holds %d keys, bound %d", len(s.tail), tailKeys)
	}
	for i, r := range s.levels {
		if len(r.keys) > levelCap(i) {
			t.Fatalf("level %d holds %d keys, bound %d", i, len(r.keys), levelCap(i))
		}
		all = append(all, r.keys...)
		for j, k := range r.keys {
			if j > 0 && r.keys[j-1] >= k {
				t.Fatalf("level %d not strictly sorted at %d: %d, %d", i, j, r.keys[j-1], k)
			}
			if r.idx == nil {
				continue
			}
			if b := (k - r.lo) >> r.shift; int(r.idx[b]) > j || int(r.idx[b+1]) <= j {
				t.Fatalf("level %d: key %d at %d, its bucket %d spans [%d, %d)", i, k, j, b, r.idx[b], r.idx[b+1])
			}
		}
	}
	for i := 1; i < len(s.tail); i++ {
		if s.tail[i-1] >= s.tail[i] {
			t.Fatalf("tail not strictly sorted at %d", i)
		}
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != len(all) || len(all) != s.Len() {
		t.Fatalf("runs hold %d keys (%d distinct), Len says %d", len(all), len(slices.Compact(slices.Clone(all))), s.Len())
	}
}

// checkSame fails t unless s holds exactly the keys of want (also probing
// keys next to each).
func checkSame(t *testing.T, s *Set, want map[uint64]bool) {
	t.Helper()
	checkInvariants(t, s)
	if s.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), len(want))
	}
	for k := range want {
		if !s.Contains(k) {
			t.Fatalf("Contains(%d) false for a key added", k)
		}
		if s.Contains(k+1) != want[k+1] || s.Contains(k-1) != want[k-1] {
			t.Fatalf("Contains of a neighbour of %d disagrees with the model", k)
		}
	}
}

func TestSetMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() uint64 { return rng.Uint64N(200_000) * 3 } // repeats, and gaps for neighbours
	want := map[uint64]bool{}
	var keys []uint64
	for range 5000 {
		k := key()
		keys = append(keys, k, k)
		want[k] = true
	}
	s := New(keys)
	checkSame(t, s, want)
	for round := range 12 {
		switch round % 3 {
		case 0, 1: // single Adds across several tail flushes and level sinks
			for range 3000 {
				k := key()
				if s.Add(k) == want[k] {
					t.Fatalf("Add(%d) reported new=%v, model has it=%v", k, !want[k], want[k])
				}
				want[k] = true
			}
		case 2: // Merge of an overlapping set built both ways
			o := &Set{}
			var bulk []uint64
			for range 4000 {
				k := key()
				if rng.IntN(2) == 0 {
					o.Add(k)
				} else {
					bulk = append(bulk, k)
				}
				want[k] = true
			}
			o.Merge(New(bulk))
			before := o.Len()
			s.Merge(o)
			if o.Len() != before {
				t.Fatalf("Merge changed its argument: Len %d, was %d", o.Len(), before)
			}
		}
		checkSame(t, s, want)
	}
	if len(s.levels) < 2 {
		t.Fatalf("want keys in at least 2 levels, have %d", len(s.levels))
	}
}

func TestEmptyAndNil(t *testing.T) {
	var nilSet *Set
	if nilSet.Contains(0) || nilSet.Len() != 0 {
		t.Fatal("a nil *Set is not empty")
	}
	s := New(nil)
	s.Merge(nilSet)
	s.Merge(s)
	if s.Len() != 0 || s.Contains(0) {
		t.Fatal("New(nil) is not empty")
	}
	if !s.Add(0) || s.Add(0) || !s.Contains(0) || s.Len() != 1 {
		t.Fatal("Add of key 0")
	}
	if !s.Add(^uint64(0)) || !s.Contains(^uint64(0)) || s.Contains(1) {
		t.Fatal("Add of the largest key")
	}
}

func TestSubtract(t *testing.T) {
	run := []uint64{2, 4, 6, 8, 10, 100, 1000}
	for _, c := range []struct{ r, want []uint64 }{
		{[]uint64{1, 3, 5}, []uint64{1, 3, 5}},
		{[]uint64{2, 3, 1000, 1001}, []uint64{3, 1001}},
		{[]uint64{10, 100, 1000}, []uint64{}},
		{[]uint64{2000, 3000}, []uint64{2000, 3000}},
		{[]uint64{0, 1}, []uint64{0, 1}},
	} {
		if got := subtract(c.r, run); !slices.Equal(got, c.want) {
			t.Errorf("subtract(%v) = %v, want %v", c.r, got, c.want)
		}
	}
	r := []uint64{1, 3}
	if got := subtract(r, run); &got[0] != &r[0] {
		t.Error("subtract copied a run it did not change")
	}
}

// heapPerKey returns the live heap bytes per key that build keeps, read
// with runtime.ReadMemStats after two GCs (the second empties sync.Pools)
// before and after; n keys.
func heapPerKey(n int, build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// randomKeys returns n random keys, as fingerprints are.
func randomKeys(n int) []uint64 {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]uint64, n)
	for i := range out {
		out[i] = rng.Uint64()
	}
	return out
}

// TestHeapPerKey checks the bound of Set's doc: at most 10 bytes of heap
// per key, loaded in bulk, added one by one, and merged group by group as
// the seeder's LoadKnown does.
func TestHeapPerKey(t *testing.T) {
	const n = 1 << 20
	keys := randomKeys(n)
	for _, c := range []struct {
		name  string
		build func() any
	}{
		{"New", func() any { return New(slices.Clone(keys)) }},
		{"Add", func() any {
			s := &Set{}
			for _, k := range keys {
				s.Add(k)
			}
			return s
		}},
		{"Merge", func() any {
			s := &Set{}
			for g := range 64 {
				s.Merge(New(slices.Clone(keys[g*n/64 : (g+1)*n/64])))
			}
			return s
		}},
	} {
		if got := heapPerKey(n, c.build); got > 10 {
			t.Errorf("%s: %.1f bytes of heap per key, want <= 10", c.name, got)
		} else {
			t.Logf("%s: %.2f bytes of heap per key", c.name, got)
		}
	}
}

// BenchmarkHeapPerKey reports the heap bytes per key ("B/key") of a
// seen-set of 5,000,000 random keys: a Set loaded as an owner does
// (New), one built by merging 64 groups as LoadKnown does, and, for
// comparison, the map[uint64]struct{} both used before.
//
//	go test -run '^$' -bench HeapPerKey -benchtime 1x ./internal/seenset/
func BenchmarkHeapPerKey(b *testing.B) {
	const n = 5_000_000
	keys := randomKeys(n)
	for _, c := range []struct {
		name  string
		build func() any
	}{
		{"owner-New", func() any { return New(slices.Clone(keys)) }},
		{"seeder-Merge64", func() any {
			s := &Set{}
			for g := range 64 {
				s.Merge(New(slices.Clone(keys[g*n/64 : (g+1)*n/64])))
			}
			return s
		}},
		{"map", func() any {
			m := map[uint64]struct{}{}
			for _, k := range keys {
				m[k] = struct{}{}
			}
			return m
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = heapPerKey(n, c.build)
			}
			b.ReportMetric(per, "B/key")
		})
	}
}

// BenchmarkContains measures a lookup in a Set of 5,000,000 random keys
// built by single Adds (every level in use), half of them hits, and in the
// map[uint64]struct{} used before, for comparison.
func BenchmarkContains(b *testing.B) {
	keys := randomKeys(5_000_000)
	s := &Set{}
	m := make(map[uint64]struct{}, len(keys))
	for _, k := range keys {
		s.Add(k)
		m[k] = struct{}{}
	}
	for _, c := range []struct {
		name     string
		contains func(uint64) bool
	}{
		{"Set", s.Contains},
		{"map", func(k uint64) bool { _, ok := m[k]; return ok }},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				c.contains(keys[i%len(keys)] + uint64(i%2))
				i++
			}
		})
	}
}
