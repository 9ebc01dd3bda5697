package coord

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// WatchShards counts the items and claims of every shard, as Pending, but
// from getChildren calls that each arm a child watch (pipelined, 2 x
// shards calls, retried after connection loss): changed is closed once
// any shard's items or claims change after it was listed, or once the
// connection was lost and re-established (the watches may have been lost
// with it), or when the Client closes. Read with a second count after it,
// a changed still open shows that the counts held together at one moment
// (ZooKeeper Programmer's Guide, "ZooKeeper Watches": a client sees a
// watch event before it sees the response to any later read). The
// responses carry the children's names (about 12 bytes each); a caller
// arms it when it expects the shards to be near empty. Each call leaves
// 2 x shards watches registered until changed is closed; one goroutine
// per watch ends with changed. Errors: ErrNotInitialized; ZooKeeper
// errors after retries, ctx errors.
func (q *Queue) WatchShards(ctx context.Context) (st QueueStats, changed <-chan struct{}, err error) {
	if q.initErr != nil {
		return QueueStats{}, nil, q.initErr
	}
	out := make(chan struct{})
	var once sync.Once
	fire := func() { once.Do(func() { close(out) }) }
	var queued, claimed atomic.Int64
	err = parallel(ctx, 2*q.shards, countReads, func(ctx context.Context, i int) error {
		dir, into := queueDir, &queued
		if i >= q.shards {
			dir, into, i = claimsDir, &claimed, i-q.shards
		}
		var names []string
		var ev <-chan zk.Event
		var epoch <-chan struct{}
		err := q.c.retry(ctx, func(ctx context.Context) error {
			var err error
			epoch = q.c.reconnected()
			names, _, ev, err = q.c.childrenW(ctx, q.shardPath(dir, i))
			return err
		})
		if err != nil {
			return err
		}
		into.Add(int64(len(names)))
		go func() {
			select {
			case <-ev:
			case <-epoch:
			case <-out:
			}
			fire()
		}()
		return nil
	})
	if err != nil {
		fire()
		return QueueStats{}, nil, fmt.Errorf("coord: Queue.WatchShards %s: %w", q.name, err)
	}
	return QueueStats{Queued: int(queued.Load()), Claimed: int(claimed.Load())}, out, nil
}
