package coord

import (
	"context"
	"fmt"
	"sync/atomic"
)

// ShardCounts are the items queued and claims held in a set of shards, and
// the crawl-wide dead-letter count, read from the parents' numChildren
// (one exists per parent, pipelined; no child lists are read).
type ShardCounts struct {
	Queued  int
	Claimed int
	Failed  int
}

// CountShards reads ShardCounts for the given shards (a worker's owned
// shards, for its metrics gauges). A snapshot, not atomic across shards.
// Errors: ErrInvalidArgument for a shard out of range; ZooKeeper errors
// after retries.
func (q *Queue) CountShards(ctx context.Context, shards []int) (ShardCounts, error) {
	if q.initErr != nil {
		return ShardCounts{}, q.initErr
	}
	for _, s := range shards {
		if err := q.checkShard("Queue.CountShards", s); err != nil {
			return ShardCounts{}, err
		}
	}
	var queued, claimed, failed atomic.Int64
	n := len(shards)
	err := parallel(ctx, 2*n+1, 32, func(ctx context.Context, i int) error {
		var p string
		var into *atomic.Int64
		switch {
		case i == 2*n:
			p, into = q.root+"/"+failedDir, &failed
		case i >= n:
			p, into = q.shardPath(claimsDir, shards[i-n]), &claimed
		default:
			p, into = q.shardPath(queueDir, shards[i]), &queued
		}
		return Retry(ctx, q.c.retry, func(ctx context.Context) error {
			ok, st, err := q.c.exists(ctx, p)
			if err == nil && ok {
				into.Add(int64(st.NumChildren))
			}
			return err
		})
	})
	if err != nil {
		return ShardCounts{}, fmt.Errorf("coord: Queue.CountShards %s: %w", q.name, err)
	}
	return ShardCounts{Queued: int(queued.Load()), Claimed: int(claimed.Load()), Failed: int(failed.Load())}, nil
}
