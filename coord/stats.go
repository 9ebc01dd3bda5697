package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ShardStats describes one shard for Stats.
type ShardStats struct {
	Shard  int
	Name   string
	Queued int         // items in R/queue/<shard>, claimed or not
	Claims []ClaimInfo // claims in R/claims/<shard>
}

// ClaimInfo is one claim as shown by Stats.
type ClaimInfo struct {
	Item      string
	Owner     string
	Session   int64
	ClaimedAt time.Time
	Age       time.Duration
}

// QueueStats is a snapshot of the queue (not atomic across shards): the
// counts of Stats, Pending and CountShards, and per shard (Stats only) its
// items and claims.
type QueueStats struct {
	Shards  []ShardStats // Stats only; nil from Pending and CountShards
	Queued  int          // items in R/queue/<shard>, claimed or not
	Claimed int          // claims in R/claims/<shard>
	Failed  int          // dead letters in R/failed (the whole crawl's)
}

// Stats reads queued counts (from each shard's numChildren), claims (with
// owner, session and age) and the dead-letter count. The requests are
// pipelined; the result is a snapshot, not atomic across shards.
func (q *Queue) Stats(ctx context.Context) (*QueueStats, error) {
	if q.initErr != nil {
		return nil, q.initErr
	}
	st := &QueueStats{Shards: make([]ShardStats, q.shards)}
	now := time.Now()
	err := parallel(ctx, q.shards, 32, func(ctx context.Context, i int) error {
		s := &st.Shards[i]
		s.Shard, s.Name = i, ShardName(i)
		var err error
		if s.Queued, err = q.numChildren(ctx, q.shardPath(queueDir, i)); err != nil {
			return err
		}
		return q.c.retry(ctx, func(ctx context.Context) error {
			claims, err := q.shardClaims(ctx, i, now)
			s.Claims = claims
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("coord: Queue.Stats %s: %w", q.name, err)
	}
	for _, s := range st.Shards {
		st.Queued += s.Queued
		st.Claimed += len(s.Claims)
	}
	if st.Failed, err = q.numChildren(ctx, q.root+"/"+failedDir); err != nil {
		return nil, fmt.Errorf("coord: Queue.Stats %s: %w", q.name, err)
	}
	return st, nil
}

// Pending counts the items and claims of every shard and the dead letters,
// from the parents' numChildren (pipelined exists calls, no data reads):
// much cheaper than Stats. A worker deciding whether the crawl is done uses
// it. Errors: ErrNotInitialized, ZooKeeper errors after retries, ctx
// errors.
func (q *Queue) Pending(ctx context.Context) (QueueStats, error) {
	all := make([]int, q.shards)
	for i := range all {
		all[i] = i
	}
	st, err := q.CountShards(ctx, all)
	if err != nil {
		return QueueStats{}, fmt.Errorf("coord: Queue.Pending %s: %w", q.name, err)
	}
	return st, nil
}

// CountShards counts the items and claims of the given shards (a worker's
// owned shards, for its metrics gauges; none: only the dead letters) and
// the crawl's dead letters, as Pending. Errors: ErrInvalidArgument for a
// shard out of range; ZooKeeper errors after retries.
func (q *Queue) CountShards(ctx context.Context, shards []int) (QueueStats, error) {
	if q.initErr != nil {
		return QueueStats{}, q.initErr
	}
	for _, s := range shards {
		if err := q.checkShard("Queue.CountShards", s); err != nil {
			return QueueStats{}, err
		}
	}
	var queued, claimed, failed atomic.Int64
	n := len(shards)
	err := parallel(ctx, 2*n+1, 64, func(ctx context.Context, i int) error {
		p, into := q.root+"/"+failedDir, &failed
		switch {
		case i < n:
			p, into = q.shardPath(queueDir, shards[i]), &queued
		case i < 2*n:
			p, into = q.shardPath(claimsDir, shards[i-n]), &claimed
		}
		k, err := q.numChildren(ctx, p)
		into.Add(int64(k))
		return err
	})
	if err != nil {
		return QueueStats{}, fmt.Errorf("coord: Queue.CountShards %s: %w", q.name, err)
	}
	return QueueStats{Queued: int(queued.Load()), Claimed: int(claimed.Load()), Failed: int(failed.Load())}, nil
}

// numChildren returns p's number of children, 0 when p does not exist
// (one exists call, retried after connection loss).
func (q *Queue) numChildren(ctx context.Context, p string) (int, error) {
	n := 0
	err := q.c.retry(ctx, func(ctx context.Context) error {
		ok, st, err := q.c.exists(ctx, p)
		if err == nil && ok {
			n = int(st.NumChildren)
		}
		return err
	})
	return n, err
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
	err := q.c.retry(ctx, func(ctx context.Context) error {
		var err error
		out, err = q.shardClaims(ctx, shard, time.Now())
		return err
	})
	return out, err
}

// shardClaims reads the claims of one shard with their records (no retry).
func (q *Queue) shardClaims(ctx context.Context, shard int, now time.Time) ([]ClaimInfo, error) {
	names, _, err := q.c.children(ctx, q.shardPath(claimsDir, shard))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []ClaimInfo
	for _, n := range names {
		data, _, err := q.c.get(ctx, q.claimPath(shard, n))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info := ClaimInfo{Item: n}
		var rec claimRecord
		if json.Unmarshal(data, &rec) == nil {
			info.Owner = rec.Owner
			info.Session, _ = parseSessionHex(rec.Session)
			info.ClaimedAt = rec.ClaimedAt
			info.Age = now.Sub(rec.ClaimedAt)
		}
		out = append(out, info)
	}
	return out, nil
}
