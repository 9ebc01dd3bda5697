package worker

import (
	"hash/maphash"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// candidateMemoSize is how many ready items a worker remembers decoded
// (candidateMemo): 230 bytes each with the LRU's list and map and the
// entry's name and key strings (measured: 16,384 entries of 12-byte names
// and 20-byte keys, heap after GC), so 3.8 MB at most. It covers the ready
// windows of a worker's shards up to about 3,000 hosts at the floor window
// (5 items at per_host_max_in_flight 1); beyond that the least recently
// looked at are decoded again.
const candidateMemoSize = 16384

// candidateID names a ready item: its shard and znode name (names are
// unique within a shard only).
type candidateID struct {
	shard int
	name  string
}

// candidate is what a claim filter needs of a ready item to turn it down:
// its politeness key and not_before (Unix nanoseconds, 0 for none), with
// sum, the maphash of the item's data they were decoded from.
type candidate struct {
	sum       uint64
	key       string
	notBefore int64
}

// candidateMemo remembers the candidates a claim filter (reserveFor)
// turned down, so that the next look at the same item decides without
// decoding its JSON again. A shard's takers look at every ready item of
// the shard whenever one of its keys frees a claim slot, so under a
// per-host rate each item is looked at many times before its key's turn
// comes: on the wide web (1,000 hosts at 1/s, 3 workers) decoding them
// again was 13% of a worker's CPU. An entry is used only while the item's
// data hashes to the same sum (a retried item is rewritten, so it is
// decoded afresh); an admitted item is always decoded in full, and its
// key checked against the entry's. Safe for concurrent use.
type candidateMemo struct {
	seed maphash.Seed
	c    *lru.Cache[candidateID, candidate]
}

func newCandidateMemo() *candidateMemo {
	c, _ := lru.New[candidateID, candidate](candidateMemoSize) // size > 0: cannot fail
	return &candidateMemo{seed: maphash.MakeSeed(), c: c}
}

// sum returns the hash of an item's data that entries are checked against.
func (m *candidateMemo) sum(data []byte) uint64 { return maphash.Bytes(m.seed, data) }

// get returns the entry of shard's item name if it was decoded from data
// with this sum.
func (m *candidateMemo) get(shard int, name string, sum uint64) (candidate, bool) {
	c, ok := m.c.Get(candidateID{shard, name})
	return c, ok && c.sum == sum
}

// put remembers c for shard's item name.
func (m *candidateMemo) put(shard int, name string, c candidate) {
	m.c.Add(candidateID{shard, name}, c)
}

// drop forgets shard's item name (it was admitted: its claim deletes it).
func (m *candidateMemo) drop(shard int, name string) { m.c.Remove(candidateID{shard, name}) }

// notBeforeNanos returns t as a candidate's notBefore.
func notBeforeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
