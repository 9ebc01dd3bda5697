// Package seenset holds a crawl's seen-set of 64-bit URL keys
// (fingerprints) in about 8 bytes of heap per key, for a shard group's
// owner (frontier Group) and for a seeder's view of every group (frontier
// LoadKnown).
//
// It is hand-written because the libraries at hand do not fit the bound: a
// Go map costs 30 to 40 bytes per uint64 key, and probabilistic filters
// (Bloom, cuckoo) answer "seen" for keys never added, which would drop new
// URLs. The structure is a small log-structured merge tree (O'Neil et al.,
// "The Log-Structured Merge-Tree", 1996, with leveled compaction as in
// LevelDB): immutable sorted runs searched in place, through a small
// bucket index and a binary search.
package seenset

import (
	"math"
	"slices"
)

const (
	// tailKeys bounds the sorted tail that takes single Adds (4 KiB).
	tailKeys = 512
	// fanout is the size ratio between consecutive levels: level i holds
	// at most tailKeys*fanout^(i+1) keys.
	fanout = 8
)

// Set is a set of uint64 keys: a sorted tail of fewer than 512 keys that
// takes single Adds, and levels of sorted runs of distinct keys, level i
// holding at most 512*8^(i+1) keys. The tail and the levels are pairwise
// disjoint, so Len is exact. When the tail fills it is merged into level
// 0, and a level over its bound is merged into the next (leveled LSM
// compaction); a run is never changed once built.
//
// Bounds for n keys: heap 8n bytes for the keys, 0.125 to 0.25 bytes per
// key of run index (see run), about 4 KiB of tail and 64 bytes per level
// (at most 6 levels up to 1.3*10^8 keys): under 8.7 bytes per key once
// n > 10,000 (8.2 to 8.3 measured). A merge into the largest level holds the
// old and the new run until it ends, up to 17 bytes per key for that
// moment. Contains reads, per level, one index entry and a binary search of
// one bucket (16 to 32 keys when the keys are spread uniformly, as
// fingerprints are; the whole level at worst), and a binary search of the
// tail: at 10^8 keys at most 7 such lookups.
// Add costs one Contains, an insertion into the tail (at most 4 KiB moved)
// and, amortised, about fanout/2 copies of the key per level it sinks
// through.
//
// The zero Set and a nil *Set are empty (a nil *Set may be read, not
// added to). A Set is not safe for concurrent use while it is changed;
// Contains and Len may run concurrently with each other.
type Set struct {
	levels []run    // level i: len(keys) <= tailKeys*fanout^(i+1); empty when keys is nil
	tail   []uint64 // sorted, distinct, len < tailKeys
	n      int
}

// bucketKeys is the fewest keys per bucket of a run's index on average
// (16 to 32 for uniformly spread keys: two to four cache lines).
const bucketKeys = 16

// run is a sorted array of distinct keys, never changed once built, with
// an index that cuts the span of its keys into equal ranges of
// 2^shift keys (buckets): keys[idx[b]:idx[b+1]] are those of bucket b, so a
// lookup of a uniformly spread key (a fingerprint) reads idx and a few
// cache lines of keys instead of the log2(len) lines of a binary search.
// The index has len/32 to len/16 entries of 4 bytes (0.125 to 0.25 bytes
// per key); runs under 64 keys, or over 2^32-1, have none (binary search).
type run struct {
	keys  []uint64
	idx   []uint32
	lo    uint64 // keys[0]
	shift uint8
}

// newRun returns keys (sorted, distinct) as a run with its index.
func newRun(keys []uint64) run {
	r := run{keys: keys}
	m := len(keys)
	if m < 4*bucketKeys || uint64(m) > math.MaxUint32 {
		return r
	}
	r.lo = keys[0]
	span := keys[m-1] - r.lo
	for span>>r.shift >= uint64(m/bucketKeys) {
		r.shift++
	}
	buckets := int(span>>r.shift) + 1
	r.idx = make([]uint32, buckets+1)
	b := 0
	for i, k := range keys {
		for kb := int((k - r.lo) >> r.shift); b <= kb; b++ {
			r.idx[b] = uint32(i)
		}
	}
	for ; b <= buckets; b++ {
		r.idx[b] = uint32(m)
	}
	return r
}

// contains reports whether key is in r.
func (r *run) contains(key uint64) bool {
	keys := r.keys
	if r.idx != nil {
		if key < r.lo {
			return false
		}
		b := (key - r.lo) >> r.shift
		if b >= uint64(len(r.idx)-1) {
			return false
		}
		keys = keys[r.idx[b]:r.idx[b+1]]
	}
	_, ok := slices.BinarySearch(keys, key)
	return ok
}

// New returns a set of keys, in any order and with repeats. It takes keys
// over: it sorts them in place and keeps the array (copied once when
// repeats leave over an eighth of it unused), so the caller must not use
// keys afterwards.
func New(keys []uint64) *Set {
	s := &Set{}
	if len(keys) == 0 {
		return s
	}
	if !slices.IsSorted(keys) {
		slices.Sort(keys)
	}
	keys = slices.Compact(keys)
	if len(keys) < cap(keys)-cap(keys)/8 {
		keys = slices.Clone(keys)
	}
	s.n = len(keys)
	s.insertRun(newRun(keys))
	return s
}

// Len returns the number of keys in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Contains reports whether key is in s.
func (s *Set) Contains(key uint64) bool {
	if s == nil {
		return false
	}
	if _, ok := slices.BinarySearch(s.tail, key); ok {
		return true
	}
	return s.inLevels(key)
}

// inLevels reports whether key is in one of s's levels.
func (s *Set) inLevels(key uint64) bool {
	for i := range s.levels {
		if s.levels[i].contains(key) {
			return true
		}
	}
	return false
}

// Add adds key to s and reports whether it was new.
func (s *Set) Add(key uint64) bool {
	i, inTail := slices.BinarySearch(s.tail, key) // one search: lookup and insertion point
	if inTail || s.inLevels(key) {
		return false
	}
	s.tail = slices.Insert(s.tail, i, key)
	s.n++
	if len(s.tail) >= tailKeys {
		s.insertRun(newRun(s.tail))
		s.tail = nil
	}
	return true
}

// Merge adds every key of o to s (a union); o is left as it was and may
// still be used. Runs of o with no key in s are shared, not copied (runs
// are never changed). The cost is linear in o's keys times, per level of
// s, the log of the size ratio (a galloping search), plus the merges.
func (s *Set) Merge(o *Set) {
	if o == nil || o == s {
		return
	}
	runs := append(slices.Clone(o.levels), newRun(slices.Clone(o.tail)))
	for _, r := range runs {
		keys := subtract(r.keys, s.tail)
		for _, l := range s.levels {
			keys = subtract(keys, l.keys)
		}
		if len(keys) == 0 {
			continue
		}
		if len(keys) < len(r.keys) {
			r = newRun(keys)
		}
		s.n += len(keys)
		s.insertRun(r)
	}
}

// levelCap returns the most keys level i holds.
func levelCap(i int) int {
	c := tailKeys
	for range i + 1 {
		c *= fanout
	}
	return c
}

// insertRun puts a run disjoint from s into the smallest level that
// holds it, merged with what that level holds, and sinks each level that
// then exceeds its bound into the next.
func (s *Set) insertRun(r run) {
	i := 0
	for levelCap(i) < len(r.keys) {
		i++
	}
	for len(s.levels) <= i {
		s.levels = append(s.levels, run{})
	}
	s.levels[i] = mergeRuns(s.levels[i], r)
	for ; len(s.levels[i].keys) > levelCap(i); i++ {
		if i+1 == len(s.levels) {
			s.levels = append(s.levels, run{})
		}
		s.levels[i+1] = mergeRuns(s.levels[i+1], s.levels[i])
		s.levels[i] = run{}
	}
}

// mergeRuns returns the union of two disjoint runs; an empty run returns
// the other one itself.
func mergeRuns(a, b run) run {
	if len(a.keys) == 0 {
		return b
	}
	if len(b.keys) == 0 {
		return a
	}
	return newRun(merge(a.keys, b.keys))
}

// merge returns the union of two disjoint sorted arrays as a new array of
// exactly their length.
func merge(a, b []uint64) []uint64 {
	out := make([]uint64, len(a)+len(b))
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if a[i] < b[j] {
			out[k] = a[i]
			i++
		} else {
			out[k] = b[j]
			j++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
	return out
}

// subtract returns the keys of sorted r not in sorted run: r itself when
// none is, else a new slice. Each key of r is looked up from where the
// previous one was found, by doubling steps then a binary search
// (galloping), so the cost is len(r) times the log of the gap.
func subtract(r, run []uint64) []uint64 {
	if len(r) == 0 || len(run) == 0 || r[len(r)-1] < run[0] || run[len(run)-1] < r[0] {
		return r
	}
	var out []uint64 // nil until a key of r is dropped
	j := 0
	for i, k := range r {
		step := 1
		for j+step < len(run) && run[j+step] < k {
			step *= 2
		}
		hi := min(j+step+1, len(run))
		off, found := slices.BinarySearch(run[j:hi], k)
		j += off
		switch {
		case found && out == nil:
			out = append(make([]uint64, 0, len(r)-1), r[:i]...)
		case !found && out != nil:
			out = append(out, k)
		}
		if j >= len(run) {
			if out != nil {
				out = append(out, r[i+1:]...)
			}
			break
		}
	}
	if out == nil {
		return r
	}
	if len(out) < cap(out)-cap(out)/8 {
		return slices.Clone(out)
	}
	return out
}
