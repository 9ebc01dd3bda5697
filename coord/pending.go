package coord

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Pending counts a queue's items and claims, for deciding whether a crawl
// is done.
type Pending struct {
	Queued  int // items in every R/queue/<shard>, claimed or not
	Claimed int // claims in every R/claims/<shard>
}

// Pending reads each shard's queued and claimed counts from the parents'
// numChildren (two pipelined exists calls per shard, no data reads): much
// cheaper than Stats. The result is a snapshot, not atomic across shards.
// Errors: ZooKeeper errors after retries, ctx errors.
func (q *Queue) Pending(ctx context.Context) (Pending, error) {
	if q.initErr != nil {
		return Pending{}, q.initErr
	}
	var queued, claimed atomic.Int64
	err := parallel(ctx, 2*q.shards, 64, func(ctx context.Context, i int) error {
		dir, n := queueDir, &queued
		if i >= q.shards {
			dir, n = claimsDir, &claimed
		}
		return Retry(ctx, q.c.retry, func(ctx context.Context) error {
			ok, st, err := q.c.exists(ctx, q.shardPath(dir, i%q.shards))
			if err == nil && ok {
				n.Add(int64(st.NumChildren))
			}
			return err
		})
	})
	if err != nil {
		return Pending{}, fmt.Errorf("coord: Queue.Pending %s: %w", q.name, err)
	}
	return Pending{Queued: int(queued.Load()), Claimed: int(claimed.Load())}, nil
}

// ShardClaims lists the claims held in one shard (R/claims/<shard>), with
// owner, session and age, sorted by item name. A worker taking over a shard
// uses it to wait until the previous owner's claims are finished.
// Errors: ErrInvalidArgument for a bad shard; ZooKeeper errors after retries.
func (q *Queue) ShardClaims(ctx context.Context, shard int) ([]ClaimInfo, error) {
	if err := q.checkShard("Queue.ShardClaims", shard); err != nil {
		return nil, err
	}
	var out []ClaimInfo
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		out, err = q.shardClaims(ctx, shard, time.Now())
		return err
	})
	return out, err
}

// ReadyNames lists the items of shard (its ready window, claimed or not),
// in no particular order, without setting a watch. Errors:
// ErrInvalidArgument; ErrNotInitialized; ZooKeeper errors after retries.
func (q *Queue) ReadyNames(ctx context.Context, shard int) ([]string, error) {
	if err := q.checkShard("Queue.ReadyNames", shard); err != nil {
		return nil, err
	}
	var names []string
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		names, _, err = q.c.children(ctx, q.shardPath(queueDir, shard))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.ReadyNames %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
	}
	return names, err
}
