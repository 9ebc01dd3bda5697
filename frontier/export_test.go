package frontier

import (
	"context"
	"errors"
)

// StoreLevels is storeLevels, for tests that create a bare queue and
// backlog: the frontier store's znodes for groups groups.
func StoreLevels(groups int) ([][]string, error) { return storeLevels(groups) }

// StoreBytes returns the data bytes of group g's cursor, live batches and
// seen chunks as ZooKeeper holds them.
func (b *Backlog) StoreBytes(ctx context.Context, g int) (int64, error) {
	cur, _, err := b.readCursor(ctx, g)
	if err != nil {
		return 0, err
	}
	_, n, _, err := b.q.Stat(ctx, b.cursorPath(g))
	total := int64(n)
	for _, bt := range cur.batches {
		_, n, _, err2 := b.q.Stat(ctx, b.batchPath(g, bt.seq))
		err = errors.Join(err, err2)
		total += int64(n)
	}
	for _, c := range cur.chunks {
		_, n, _, err2 := b.q.Stat(ctx, b.chunkPath(g, c.seq))
		err = errors.Join(err, err2)
		total += int64(n)
	}
	return total, err
}
