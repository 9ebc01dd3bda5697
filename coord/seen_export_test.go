package coord

import (
	"context"
	"fmt"
	"slices"
)

// PutSeenChunks writes keys (sorted here) as new seen chunks of group g,
// chunkKeys keys each, and records them in g's cursor: the seen-set a long
// crawl's owner leaves, without the steps that fold it. keys must be new
// to the group. Errors: a cursor that does not decode; ZooKeeper errors.
func (b *Backlog) PutSeenChunks(ctx context.Context, g int, keys []uint64) error {
	data, stat, err := b.q.c.readData(ctx, b.cursorPath(g))
	if err != nil {
		return err
	}
	cur, err := decodeCursor(data)
	if err != nil {
		return fmt.Errorf("cursor of group %d: %w", g, err)
	}
	slices.Sort(keys)
	for len(keys) > 0 {
		n := min(chunkKeys, len(keys))
		if _, err := b.q.c.create(ctx, b.chunkPath(g, cur.nextChunk), encodeKeys(keys[:n]), 0, nil); err != nil {
			return err
		}
		cur.chunks = append(cur.chunks, chunkState{seq: cur.nextChunk, count: n})
		cur.nextChunk++
		keys = keys[n:]
	}
	_, err = b.q.c.set(ctx, b.cursorPath(g), encodeCursor(cur), stat.Version)
	return err
}
