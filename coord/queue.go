package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"
)

// maxShards bounds the shard count given to CreateQueue.
const maxShards = 100000

// createMultiMax bounds the creates createAll sends as one multi (paths of
// at most ~100 bytes: far under ZooKeeper's 1 MiB request limit).
const createMultiMax = 1000

// createConcurrency bounds the creates createAll keeps in flight.
const createConcurrency = 256

// Queue is the crawl's sharded FIFO queue of ready items in ZooKeeper with
// per-item claims, after the ZooKeeper recipes "Queues" and the "queue with
// locking" pattern (one way to consume, as Curator's
// SimpleDistributedQueue: Take), with the protocols of docs/design.md:
//
//	R/queue/<shard>/u-NNNNNNNNNN   persistent-sequential item (opaque data)
//	R/claims/<shard>/<item>        ephemeral claim: JSON {owner, session, claimed_at}
//	R/failed/<shard>-<item>        persistent dead letter
//	R/sessions/<session id>        ephemeral fence marker of a claiming session
//
// Items are created by Commit's OpReady (the frontier's moves) and Requeue.
// The shard count is fixed when the queue is created (CreateQueue stores it in
// R/queue's data). Safe for concurrent use.
type Queue struct {
	c       *Client
	root    string // absolute (with chroot)
	name    string // as given
	shards  int
	recheck time.Duration
	log     *slog.Logger
	initErr error

	fenceMu sync.Mutex
	fences  map[int64]*fenceEntry

	cursors []*cursor
}

// newQueue returns the queue handle of the crawl rooted at root (absolute
// path, chroot applied) with shards shards (1..100,000), without I/O. An
// invalid root or shard count makes every call fail with
// ErrInvalidArgument.
func newQueue(c *Client, root string, shards int) *Queue {
	q := &Queue{
		c:       c,
		root:    c.abs(root),
		name:    root,
		shards:  shards,
		recheck: defaultRecheck,
		log:     c.log.With("queue", root),
		fences:  make(map[int64]*fenceEntry),
	}
	if err := validatePath(root); err != nil {
		q.initErr = fmt.Errorf("coord: Queue: root: %w", err)
	} else if root == "/" {
		q.initErr = fmt.Errorf("coord: Queue: root %q: must not be the ZooKeeper root: %w", root, ErrInvalidArgument)
	}
	if shards < 1 || shards > maxShards {
		q.initErr = fmt.Errorf("coord: Queue: shards %d: must be in [1, %d]: %w", shards, maxShards, ErrInvalidArgument)
		shards = 0
	}
	q.cursors = make([]*cursor, max(shards, 0))
	for i := range q.cursors {
		q.cursors[i] = &cursor{}
	}
	return q
}

// queueMeta is the data of R/queue.
type queueMeta struct {
	Shards int `json:"shards"`
}

// OpenQueue returns the queue of the existing crawl at root, with the shard
// count stored at its creation. Errors: ErrNotInitialized if R/queue does
// not exist or holds no shard count; ErrInvalidArgument for a bad root.
func OpenQueue(ctx context.Context, c *Client, root string) (*Queue, error) {
	if err := validatePath(root); err != nil {
		return nil, fmt.Errorf("coord: OpenQueue: root: %w", err)
	}
	data, _, err := c.readData(ctx, c.abs(root)+"/"+queueDir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: OpenQueue %s: %w", root, ErrNotInitialized)
	}
	if err != nil {
		return nil, fmt.Errorf("coord: OpenQueue %s: %w", root, err)
	}
	var meta queueMeta
	if err := json.Unmarshal(data, &meta); err != nil || meta.Shards < 1 {
		return nil, fmt.Errorf("coord: OpenQueue %s: %s/%s data %q holds no shard count: %w", root, root, queueDir, data, ErrNotInitialized)
	}
	return newQueue(c, root, meta.Shards), nil
}

// Shards returns the shard count.
func (q *Queue) Shards() int { return q.shards }

func (q *Queue) shardPath(dir string, shard int) string {
	return q.root + "/" + dir + "/" + ShardName(shard)
}
func (q *Queue) itemPath(shard int, name string) string {
	return q.shardPath(queueDir, shard) + "/" + name
}
func (q *Queue) claimPath(shard int, name string) string {
	return q.shardPath(claimsDir, shard) + "/" + name
}
func (q *Queue) failedPath(name string) string { return q.root + "/" + failedDir + "/" + name }
func (q *Queue) fencePath(id int64) string {
	return q.root + "/" + sessionsDir + "/" + fmt.Sprintf("%016x", uint64(id))
}

// readyCreate is the create of a new ready item of shard carrying data
// (sequential: ZooKeeper appends the item's number to itemPrefix).
func (q *Queue) readyCreate(shard int, data []byte) *zk.CreateRequest {
	return &zk.CreateRequest{Path: q.shardPath(queueDir, shard) + "/" + itemPrefix, Data: data, Acl: q.c.acl(), Flags: zk.FlagSequence}
}

func (q *Queue) checkShard(op string, shard int) error {
	if q.initErr != nil {
		return q.initErr
	}
	if shard < 0 || shard >= q.shards {
		return fmt.Errorf("coord: %s: shard %d: must be in [0, %d): %w", op, shard, q.shards, ErrInvalidArgument)
	}
	return nil
}

// create creates the queue's znodes if missing: R, R/queue (data
// {"shards":N}), R/claims, R/failed, R/sessions, and for every shard
// R/queue/<shard> and R/claims/<shard>. Idempotent; the creates are issued
// concurrently (pipelined on the one connection).
//
// Errors: ErrInvalidArgument if R/queue exists with a different shard count.
func (q *Queue) create(ctx context.Context) error {
	if q.initErr != nil {
		return q.initErr
	}
	if err := q.c.ensurePath(ctx, q.root); err != nil {
		return fmt.Errorf("coord: create queue %s: %w", q.name, err)
	}
	if err := q.c.retry(ctx, q.writeMeta); err != nil {
		return err
	}
	// Parents first, then the shards (pipelined).
	var parents, shards []string
	for _, d := range []string{claimsDir, failedDir, sessionsDir} {
		parents = append(parents, q.root+"/"+d)
	}
	for i := 0; i < q.shards; i++ {
		shards = append(shards, q.shardPath(queueDir, i), q.shardPath(claimsDir, i))
	}
	for _, paths := range [][]string{parents, shards} {
		if err := q.c.createAll(ctx, paths); err != nil {
			return fmt.Errorf("coord: create queue %s: %w", q.name, err)
		}
	}
	return nil
}

// writeMeta creates R/queue with the shard count, or checks the count of
// an existing one (filling it in when empty). One attempt, for retry.
func (q *Queue) writeMeta(ctx context.Context) error {
	meta, _ := json.Marshal(queueMeta{Shards: q.shards})
	qp := q.root + "/" + queueDir
	_, err := q.c.create(ctx, qp, meta, zk.FlagPersistent, nil)
	if !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	data, st, err := q.c.get(ctx, qp)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		_, err := q.c.set(ctx, qp, meta, st.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			return q.c.mapErr(zk.ErrConnectionClosed) // raced with another creator: look again
		}
		return err
	}
	var have queueMeta
	if err := json.Unmarshal(data, &have); err != nil {
		return fmt.Errorf("coord: create queue %s: %s data %q: %w", q.name, qp, data, ErrInvalidArgument)
	}
	if have.Shards != q.shards {
		return fmt.Errorf("coord: create queue %s: created with %d shards, not %d: %w", q.name, have.Shards, q.shards, ErrInvalidArgument)
	}
	return nil
}

// createAll creates each of paths (absolute) as an empty persistent znode
// unless it exists. It first tries one multi of all the creates (a new
// crawl's parents are created level by level, four such multis: 271
// ZooKeeper writes became about 10, 0.22 writes per crawl-log line of a
// 1,174-page crawl); if that fails (some exist
// already, or the outcome is unknown after connection loss) it creates them
// one by one, up to createConcurrency at once (pipelined on the one
// connection), each retried after connection loss, an existing one
// counting as created. paths must list parents before their children;
// more than createMultiMax paths go one by one at once.
func (c *Client) createAll(ctx context.Context, paths []string) error {
	if len(paths) > 1 && len(paths) <= createMultiMax {
		ops := make([]any, len(paths))
		for i, p := range paths {
			ops[i] = &zk.CreateRequest{Path: p, Acl: c.acl(), Flags: zk.FlagPersistent}
		}
		if _, _, err := c.multi(ctx, nil, ops...); err == nil {
			return nil
		}
	}
	return parallel(ctx, len(paths), createConcurrency, func(ctx context.Context, i int) error {
		return c.retry(ctx, func(ctx context.Context) error {
			_, err := c.create(ctx, paths[i], nil, zk.FlagPersistent, nil)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
	})
}

// countReads bounds the reads of one count snapshot (Pending,
// WatchShards) in flight at once on the one connection: at 64 shards all
// of them, so a snapshot costs about one round trip, not one per 64 reads
// (a done check's latency).
const countReads = 256

// parallel runs fn(ctx, i) for i in [0, n) with at most limit in flight
// (errgroup.SetLimit) and returns the first error; the calls still running
// then see ctx cancelled.
func parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}

// Get returns an item's data. Errors: ErrGone if the item does not exist.
func (q *Queue) Get(ctx context.Context, shard int, name string) ([]byte, error) {
	if err := q.checkShard("Queue.Get", shard); err != nil {
		return nil, err
	}
	if err := validateName(name); err != nil {
		return nil, fmt.Errorf("coord: Queue.Get: item: %w", err)
	}
	data, _, err := q.c.readData(ctx, q.itemPath(shard, name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.Get %s/%s: %w", ShardName(shard), name, ErrGone)
	}
	return data, err
}

// ReadyNames lists the items of shard (its ready window, claimed or not),
// in no particular order, without setting a watch. Errors:
// ErrInvalidArgument; ErrNotInitialized; ZooKeeper errors after retries.
func (q *Queue) ReadyNames(ctx context.Context, shard int) ([]string, error) {
	if err := q.checkShard("Queue.ReadyNames", shard); err != nil {
		return nil, err
	}
	names, err := q.c.readChildren(ctx, q.shardPath(queueDir, shard))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.ReadyNames %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
	}
	return names, err
}
