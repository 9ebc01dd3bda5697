package frontier

import (
	"context"
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/zkcrawl/zkcrawl/coord"
)

// DefaultSeenCacheSize is the number of seen-set keys a Frontier remembers
// locally (about 100 bytes each: ~100 MB at most would be 1M; 200,000 keys
// stay well under 30 MB).
const DefaultSeenCacheSize = 200_000

// Frontier enqueues crawl items exactly once into a coord.Queue: the
// seen-set in ZooKeeper decides (DESIGN "Enqueue, exactly once"), and a
// bounded local LRU cache of keys known to be in the seen-set saves the
// ZooKeeper round trip for links seen again. Safe for concurrent use.
type Frontier struct {
	q      *coord.Queue
	layout Layout
	seen   *lru.Cache[string, struct{}]
}

// New returns a Frontier over q whose shards follow layout (layout.Shards
// must equal q.Shards()), with a local seen cache of cacheSize keys (<= 0:
// DefaultSeenCacheSize).
func New(q *coord.Queue, layout Layout, cacheSize int) *Frontier {
	if cacheSize <= 0 {
		cacheSize = DefaultSeenCacheSize
	}
	c, _ := lru.New[string, struct{}](cacheSize) // error only for size <= 0
	return &Frontier{q: q, layout: layout, seen: c}
}

// Queue returns the underlying queue.
func (f *Frontier) Queue() *coord.Queue { return f.q }

// EnqueueResult counts what one Enqueue call did with its items.
type EnqueueResult struct {
	Queued     int // newly put into the queue
	Duplicates int // already in the seen-set (locally cached or in ZooKeeper)
}

// Enqueue puts items whose URL is already normalized (see Normalize) into
// their queue shard (Layout.Shard), each exactly once across the whole crawl.
// The ZooKeeper writes are pipelined on one connection. Items that are
// duplicates are counted, not errors. An item that cannot be encoded is an
// error naming its URL; the other items are still enqueued. Calling Enqueue
// again with the same items after an error is safe.
func (f *Frontier) Enqueue(ctx context.Context, items []Item) (EnqueueResult, error) {
	var res EnqueueResult
	var errs []error
	batch := make([]coord.PutItem, 0, len(items))
	keys := make([]string, 0, len(items))
	inBatch := make(map[string]bool, len(items))
	for _, it := range items {
		key := Key(it.URL)
		if f.seen.Contains(key) || inBatch[key] {
			res.Duplicates++
			continue
		}
		data, err := it.Encode()
		if err != nil {
			errs = append(errs, fmt.Errorf("frontier: enqueue %q: %w", it.URL, err))
			continue
		}
		inBatch[key] = true
		batch = append(batch, coord.PutItem{Shard: f.layout.Shard(it.URL), Key: key, Data: data})
		keys = append(keys, key)
	}
	if len(batch) == 0 {
		return res, errors.Join(errs...)
	}
	queued, err := f.q.PutBatch(ctx, batch)
	for i, ok := range queued {
		switch {
		case ok:
			res.Queued++
			f.seen.Add(keys[i], struct{}{})
		case err == nil:
			// Settled and not queued: the seen marker existed.
			res.Duplicates++
			f.seen.Add(keys[i], struct{}{})
		}
		// With an error, an unqueued item is either a duplicate or failed;
		// it is not cached, so the caller's retry asks ZooKeeper again.
	}
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}
