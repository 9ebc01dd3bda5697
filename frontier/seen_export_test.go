package frontier

import (
	"context"
	"slices"

	"github.com/zkcrawl/zkcrawl/coord"
)

// PutSeenChunks writes keys (sorted here) as new seen chunks of group g,
// chunkKeys keys each, and records them in g's cursor: the seen-set a long
// crawl's owner leaves, without the steps that fold it. keys must be new
// to the group. Errors: a cursor that does not decode; ZooKeeper errors.
func (b *Backlog) PutSeenChunks(ctx context.Context, g int, keys []uint64) error {
	cur, version, err := b.readCursor(ctx, g)
	if err != nil {
		return err
	}
	slices.Sort(keys)
	for len(keys) > 0 {
		n := min(chunkKeys, len(keys))
		op := coord.Op{Kind: coord.OpCreate, Path: b.chunkPath(g, cur.nextChunk), Data: encodeKeys(keys[:n])}
		if _, err := b.q.Commit(ctx, "test_put_seen", nil, []coord.Op{op}, nil); err != nil {
			return err
		}
		cur.chunks = append(cur.chunks, chunkState{seq: cur.nextChunk, count: n})
		cur.nextChunk++
		keys = keys[n:]
	}
	op := coord.Op{Kind: coord.OpSet, Path: b.cursorPath(g), Data: encodeCursor(cur), Version: version}
	_, err = b.q.Commit(ctx, "test_put_seen", nil, []coord.Op{op}, nil)
	return err
}
