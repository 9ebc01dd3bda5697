package coord

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
)

// QueueStats counts the queue (a snapshot, not atomic across shards).
type QueueStats struct {
	Queued  int   // items in R/queue/<shard> of the counted shards, claimed or not
	Claimed int   // claims in R/claims/<shard> of the counted shards
	Failed  int   // dead letters in R/failed (the whole crawl's)
	Depths  []int // Depths[i]: the items of the i-th counted shard
	// Stamp (Pending only) hashes the child versions (Stat.Cversion,
	// bumped by every child created or deleted) of every parent counted:
	// two reads with the same Stamp saw each parent with the same children
	// over the time between them, the same proof as a child watch that did
	// not fire, with no watch set (FNV-1a 64: a changed parent goes
	// unseen with odds of about 2^-64 per comparison).
	Stamp uint64
}

// ClaimInfo is one claim as listed by Claims.
type ClaimInfo struct {
	Shard     int
	Item      string // the item's znode name ("u-0000000042")
	Owner     string // the claimer's Config.Owner id
	Session   int64  // the claimer's session id
	ClaimedAt time.Time
	Age       time.Duration // since ClaimedAt, on this client's clock
}

// allShards returns shards, or every shard when none is given.
func (q *Queue) allShards(op string, shards []int) ([]int, error) {
	if len(shards) == 0 {
		shards = make([]int, q.shards)
		for i := range shards {
			shards[i] = i
		}
	}
	for _, s := range shards {
		if err := q.checkShard(op, s); err != nil {
			return nil, err
		}
	}
	return shards, nil
}

// Pending counts the items and claims of the given shards (every shard
// when none is given) and the crawl's dead letters, from the parents'
// numChildren: 2 x shards + 1 pipelined exists calls (up to countReads in
// flight at once), no data reads. A
// worker deciding whether the crawl is done, and its gauges for its owned
// shards, use it. Errors: ErrInvalidArgument for a shard out of range;
// ZooKeeper errors after retries; ctx errors.
func (q *Queue) Pending(ctx context.Context, shards ...int) (QueueStats, error) {
	if q.initErr != nil {
		return QueueStats{}, q.initErr
	}
	shards, err := q.allShards("Queue.Pending", shards)
	if err != nil {
		return QueueStats{}, err
	}
	n := len(shards)
	depths, claimed := make([]int, n), make([]int, n)
	versions := make([]int32, 2*n+1)
	var failed int
	err = parallel(ctx, 2*n+1, countReads, func(ctx context.Context, i int) error {
		p, into := q.root+"/"+failedDir, &failed
		switch {
		case i < n:
			p, into = q.shardPath(queueDir, shards[i]), &depths[i]
		case i < 2*n:
			p, into = q.shardPath(claimsDir, shards[i-n]), &claimed[i-n]
		}
		k, v, err := q.numChildren(ctx, p)
		*into, versions[i] = k, v
		return err
	})
	if err != nil {
		return QueueStats{}, fmt.Errorf("coord: Queue.Pending %s: %w", q.name, err)
	}
	st := QueueStats{Failed: failed, Depths: depths, Stamp: stampVersions(versions)}
	for i := range n {
		st.Queued += depths[i]
		st.Claimed += claimed[i]
	}
	return st, nil
}

// numChildren returns p's number of children and its child version (0
// and -1 when p does not exist): one exists call, retried after
// connection loss.
func (q *Queue) numChildren(ctx context.Context, p string) (n int, cversion int32, err error) {
	cversion = -1 // absent
	err = q.c.retry(ctx, func(ctx context.Context) error {
		ok, st, err := q.c.exists(ctx, p)
		if err == nil && ok {
			n, cversion = int(st.NumChildren), st.Cversion
		}
		return err
	})
	return n, cversion, err
}

// stampVersions hashes znode versions, in order: FNV-1a 64 over their
// big-endian bytes (QueueStats.Stamp).
func stampVersions(versions []int32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, v := range versions {
		binary.BigEndian.PutUint32(b[:], uint32(v))
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}

// Claims lists the claims held in the given shards (every shard when
// none is given), with owner, session and age, by shard and then item
// name: one getChildren per shard and one getData per claim, pipelined. A
// worker taking over a shard uses it to wait until the previous owner's
// claims are finished; crawlctl status shows them. Errors:
// ErrInvalidArgument for a shard out of range; ZooKeeper errors after
// retries; ctx errors.
func (q *Queue) Claims(ctx context.Context, shards ...int) ([]ClaimInfo, error) {
	if q.initErr != nil {
		return nil, q.initErr
	}
	shards, err := q.allShards("Queue.Claims", shards)
	if err != nil {
		return nil, err
	}
	per := make([][]ClaimInfo, len(shards))
	now := time.Now()
	err = parallel(ctx, len(shards), 32, func(ctx context.Context, i int) error {
		return q.c.retry(ctx, func(ctx context.Context) error {
			var err error
			per[i], err = q.shardClaims(ctx, shards[i], now)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("coord: Queue.Claims %s: %w", q.name, err)
	}
	var out []ClaimInfo
	for _, p := range per {
		out = append(out, p...)
	}
	return out, nil
}

// shardClaims reads the claims of one shard with their records, at most 16
// reads in flight (no retry).
func (q *Queue) shardClaims(ctx context.Context, shard int, now time.Time) ([]ClaimInfo, error) {
	names, _, err := q.c.children(ctx, q.shardPath(claimsDir, shard))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	infos := make([]ClaimInfo, len(names))
	found := make([]bool, len(names))
	err = parallel(ctx, len(names), 16, func(ctx context.Context, i int) error {
		data, _, err := q.c.get(ctx, q.claimPath(shard, names[i]))
		if errors.Is(err, zk.ErrNoNode) {
			return nil // finished meanwhile
		}
		if err != nil {
			return err
		}
		info := ClaimInfo{Shard: shard, Item: names[i]}
		var rec claimRecord
		if json.Unmarshal(data, &rec) == nil {
			info.Owner = rec.Owner
			info.Session, _ = parseSessionHex(rec.Session)
			info.ClaimedAt = rec.ClaimedAt
			info.Age = now.Sub(rec.ClaimedAt)
		}
		infos[i], found[i] = info, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []ClaimInfo
	for i, info := range infos {
		if found[i] {
			out = append(out, info)
		}
	}
	return out, nil
}
