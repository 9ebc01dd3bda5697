package coord

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Znode names under a queue root R (see docs/design.md, "Znode layout").
const (
	queueDir    = "queue"    // R/queue/<shard>/u-NNNNNNNNNN: persistent-sequential items; R/queue's data: {"shards":N}
	claimsDir   = "claims"   // R/claims/<shard>/<item>: ephemeral claims
	seenDir     = "seen"     // R/seen/<xx>/<key>: persistent seen-set markers
	failedDir   = "failed"   // R/failed/<shard>-<item>: dead letters
	sessionsDir = "sessions" // R/sessions/<session id>: ephemeral per-session fence markers
	itemPrefix  = "u-"       // item name prefix; ZooKeeper appends a 10-digit sequence number
)

// MaxShards bounds the shard count given to NewQueue.
const MaxShards = 100000

// DefaultRecheck is how long Take waits before looking again at items its
// accept function rejected, when no child event arrives meanwhile.
const DefaultRecheck = time.Second

// putConcurrency bounds the requests PutBatch keeps in flight.
const putConcurrency = 256

// ShardName returns the znode name of shard i: "s000", "s001", ... (at least
// three digits).
func ShardName(i int) string { return fmt.Sprintf("s%03d", i) }

// QueueOption configures NewQueue and OpenQueue.
type QueueOption func(*Queue)

// WithOwner sets the worker id written into claims and session markers and
// shown by Stats (default "").
func WithOwner(id string) QueueOption { return func(q *Queue) { q.owner = id } }

// WithRecheck sets how long Take waits before re-listing a shard whose
// remaining items were all rejected by its accept function (default
// DefaultRecheck).
func WithRecheck(d time.Duration) QueueOption {
	return func(q *Queue) {
		if d > 0 {
			q.recheck = d
		}
	}
}

// Queue is a sharded FIFO queue in ZooKeeper with exactly-once enqueue and
// per-item claims, after the ZooKeeper recipes "Queues" and the "queue with
// locking" pattern, with the protocols of docs/design.md:
//
//	R/queue/<shard>/u-NNNNNNNNNN   persistent-sequential item (opaque data)
//	R/claims/<shard>/<item>        ephemeral claim: JSON {owner, session, claimed_at}
//	R/seen/<key[:2]>/<key>         persistent seen-set marker
//	R/failed/<shard>-<item>        persistent dead letter
//	R/sessions/<session id>        ephemeral fence marker of a claiming session
//
// The shard count is fixed when the queue is created (Init stores it in
// R/queue's data). Safe for concurrent use.
type Queue struct {
	c       *Client
	root    string // absolute (with chroot)
	name    string // as given
	shards  int
	owner   string
	recheck time.Duration
	log     *slog.Logger
	initErr error

	fenceMu sync.Mutex
	fences  map[int64]*fenceEntry

	cursors []*cursor
}

// NewQueue returns a queue rooted at root (absolute path, chroot applied)
// with shards shards. It does no I/O: call Init once to create the znodes
// (idempotent). An invalid root or shard count makes every call fail with
// ErrInvalidArgument.
func NewQueue(c *Client, root string, shards int, opts ...QueueOption) *Queue {
	q := &Queue{
		c:       c,
		root:    c.abs(root),
		name:    root,
		shards:  shards,
		recheck: DefaultRecheck,
		log:     c.log.With("queue", root),
		fences:  make(map[int64]*fenceEntry),
	}
	for _, o := range opts {
		o(q)
	}
	if err := validatePath(root); err != nil {
		q.initErr = fmt.Errorf("coord: NewQueue: root: %w", err)
	} else if root == "/" {
		q.initErr = fmt.Errorf("coord: NewQueue: root %q: must not be the ZooKeeper root: %w", root, ErrInvalidArgument)
	}
	if shards < 1 || shards > MaxShards {
		q.initErr = fmt.Errorf("coord: NewQueue: shards %d: must be in [1, %d]: %w", shards, MaxShards, ErrInvalidArgument)
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

// OpenQueue returns the queue at root with the shard count stored by Init.
// Errors: ErrNotInitialized if R/queue does not exist or holds no shard
// count.
func OpenQueue(ctx context.Context, c *Client, root string, opts ...QueueOption) (*Queue, error) {
	if err := validatePath(root); err != nil {
		return nil, fmt.Errorf("coord: OpenQueue: root: %w", err)
	}
	var data []byte
	err := Retry(ctx, c.retry, func(ctx context.Context) error {
		var err error
		data, _, err = c.get(ctx, c.abs(root)+"/"+queueDir)
		return err
	})
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
	return NewQueue(c, root, meta.Shards, opts...), nil
}

// Shards returns the shard count.
func (q *Queue) Shards() int { return q.shards }

// Root returns the queue's root path as given (without chroot).
func (q *Queue) Root() string { return q.name }

// Client returns the queue's client.
func (q *Queue) Client() *Client { return q.c }

func (q *Queue) shardPath(dir string, shard int) string {
	return q.root + "/" + dir + "/" + ShardName(shard)
}
func (q *Queue) itemPath(shard int, name string) string {
	return q.shardPath(queueDir, shard) + "/" + name
}
func (q *Queue) claimPath(shard int, name string) string {
	return q.shardPath(claimsDir, shard) + "/" + name
}
func (q *Queue) seenPath(key string) string {
	return q.root + "/" + seenDir + "/" + key[:2] + "/" + key
}
func (q *Queue) failedPath(name string) string { return q.root + "/" + failedDir + "/" + name }
func (q *Queue) fencePath(id int64) string {
	return q.root + "/" + sessionsDir + "/" + fmt.Sprintf("%016x", uint64(id))
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

// ValidateKey checks a seen-set key: lowercase hex, at least 2 characters
// (the first two name the R/seen/<xx> parent), at most 128.
func ValidateKey(key string) error {
	if len(key) < 2 || len(key) > 128 {
		return fmt.Errorf("coord: key %q: length %d: must be 2..128 lowercase hex digits: %w", key, len(key), ErrInvalidArgument)
	}
	for i := 0; i < len(key); i++ {
		ch := key[i]
		if (ch < '0' || ch > '9') && (ch < 'a' || ch > 'f') {
			return fmt.Errorf("coord: key %q: byte %d (%q) is not a lowercase hex digit: %w", key, i, ch, ErrInvalidArgument)
		}
	}
	return nil
}

// Init creates the queue's znodes if missing: R, R/queue (data
// {"shards":N}), R/claims, R/seen, R/failed, R/sessions, and for every shard
// R/queue/<shard> and R/claims/<shard>. Idempotent; the creates are issued
// concurrently (pipelined on the one connection).
//
// Errors: ErrInvalidArgument if R/queue exists with a different shard count.
func (q *Queue) Init(ctx context.Context) error {
	if q.initErr != nil {
		return q.initErr
	}
	if err := q.c.ensurePath(ctx, q.root); err != nil {
		return fmt.Errorf("coord: Queue.Init %s: %w", q.name, err)
	}
	meta, _ := json.Marshal(queueMeta{Shards: q.shards})
	qp := q.root + "/" + queueDir
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
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
				return zk.ErrConnectionClosed // raced with another Init: look again
			}
			return err
		}
		var have queueMeta
		if err := json.Unmarshal(data, &have); err != nil {
			return fmt.Errorf("coord: Queue.Init %s: %s data %q: %w", q.name, qp, data, ErrInvalidArgument)
		}
		if have.Shards != q.shards {
			return fmt.Errorf("coord: Queue.Init %s: created with %d shards, not %d: %w", q.name, have.Shards, q.shards, ErrInvalidArgument)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Parents first, then the shards (pipelined).
	var parents, shards []string
	for _, d := range []string{claimsDir, seenDir, failedDir, sessionsDir} {
		parents = append(parents, q.root+"/"+d)
	}
	for i := 0; i < q.shards; i++ {
		shards = append(shards, q.shardPath(queueDir, i), q.shardPath(claimsDir, i))
	}
	for _, paths := range [][]string{parents, shards} {
		err := parallel(ctx, len(paths), putConcurrency, func(ctx context.Context, i int) error {
			return Retry(ctx, q.c.retry, func(ctx context.Context) error {
				_, err := q.c.create(ctx, paths[i], nil, zk.FlagPersistent, nil)
				if errors.Is(err, zk.ErrNodeExists) {
					return nil
				}
				return err
			})
		})
		if err != nil {
			return fmt.Errorf("coord: Queue.Init %s: %w", q.name, err)
		}
	}
	return nil
}

// parallel runs fn(ctx, i) for i in [0, n) with at most limit in flight and
// returns the errors joined (nil if none).
func parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(ctx, i)
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Put enqueues data on shard exactly once per key: one multi of
// create(R/seen/<key[:2]>/<key>) and create(R/queue/<shard>/u-, sequential).
// It returns true if this call enqueued the item, false if key was already
// in the seen-set (a duplicate). After connection loss the multi is retried:
// a seen marker found then proves that either our earlier multi committed or
// someone else enqueued the key; either way the item is not queued twice.
// The marker holds a random nonce so Put can still tell which (true if the
// earlier attempt was ours). The R/seen/<xx> parent is created on first use.
//
// Errors: ErrInvalidArgument (bad shard or key); ErrNotInitialized; ctx
// errors (the item may or may not be enqueued; calling Put again is safe);
// connection loss after the retry policy gave up (same).
func (q *Queue) Put(ctx context.Context, shard int, key string, data []byte) (queued bool, err error) {
	defer q.c.observed("queue_put", time.Now(), &err)
	return q.putOnce(ctx, shard, key, data)
}

func (q *Queue) putOnce(ctx context.Context, shard int, key string, data []byte) (bool, error) {
	if err := q.checkShard("Queue.Put", shard); err != nil {
		return false, err
	}
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	seen := q.seenPath(key)
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	mark := []byte(hex.EncodeToString(nonce[:]))
	ops := []any{
		&zk.CreateRequest{Path: seen, Data: mark, Acl: q.c.ACL(), Flags: zk.FlagPersistent},
		&zk.CreateRequest{Path: q.shardPath(queueDir, shard) + "/" + itemPrefix, Data: data, Acl: q.c.ACL(), Flags: zk.FlagSequence},
	}
	retried := false
	for attempt := 1; ; {
		_, idx, err := q.c.multi(ctx, nil, ops...)
		switch {
		case err == nil:
			return true, nil
		case idx == 0 && errors.Is(err, zk.ErrNodeExists):
			if !retried {
				return false, nil
			}
			// Was the committed multi ours? Compare the nonce.
			var have []byte
			err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
				var err error
				have, _, err = q.c.get(ctx, seen)
				return err
			})
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false, fmt.Errorf("coord: Queue.Put %s: read seen marker: %w", key, err)
			}
			return bytes.Equal(have, mark), nil
		case idx == 0 && errors.Is(err, zk.ErrNoNode):
			// First key under this R/seen/<xx>: create the parent, go again.
			perr := Retry(ctx, q.c.retry, func(ctx context.Context) error {
				_, err := q.c.create(ctx, path.Dir(seen), nil, zk.FlagPersistent, nil)
				if errors.Is(err, zk.ErrNodeExists) {
					return nil
				}
				return err
			})
			if errors.Is(perr, zk.ErrNoNode) {
				return false, fmt.Errorf("coord: Queue.Put %s: %w", q.name, ErrNotInitialized)
			}
			if perr != nil {
				return false, fmt.Errorf("coord: Queue.Put %s: create seen parent: %w", key, perr)
			}
		case idx == 1 && errors.Is(err, zk.ErrNoNode):
			return false, fmt.Errorf("coord: Queue.Put %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
		case idx < 0 && IsConnectionLoss(err):
			retried = true
			if attempt >= q.c.retry.Attempts {
				return false, fmt.Errorf("coord: Queue.Put %s: gave up after %d attempts: %w", key, attempt, err)
			}
			if !sleepCtx(ctx, q.c.retry.Backoff(attempt)) {
				return false, fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
			}
			attempt++
		default:
			return false, fmt.Errorf("coord: Queue.Put %s: %w", key, err)
		}
	}
}

// PutItem is one item of PutBatch.
type PutItem struct {
	Shard int
	Key   string
	Data  []byte
}

// PutBatch enqueues many items with Put semantics (exactly once per key),
// issuing the Puts concurrently so that go-zookeeper pipelines them on the
// one connection: a page with 100 links costs about one round trip, not
// 100. queued[i] reports whether items[i] was newly enqueued.
//
// Errors: the per-item errors joined, each naming its index and key; items
// without an error are settled. Calling PutBatch again with the same items
// is safe (exactly-once through the seen-set).
func (q *Queue) PutBatch(ctx context.Context, items []PutItem) ([]bool, error) {
	queued := make([]bool, len(items))
	err := parallel(ctx, len(items), putConcurrency, func(ctx context.Context, i int) error {
		ok, err := q.Put(ctx, items[i].Shard, items[i].Key, items[i].Data)
		queued[i] = ok
		if err != nil {
			return fmt.Errorf("item %d (key %s): %w", i, items[i].Key, err)
		}
		return nil
	})
	return queued, err
}

// Seen reports whether key is in the seen-set (was ever enqueued).
func (q *Queue) Seen(ctx context.Context, key string) (bool, error) {
	if q.initErr != nil {
		return false, q.initErr
	}
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	var ok bool
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		ok, _, err = q.c.exists(ctx, q.seenPath(key))
		return err
	})
	return ok, err
}

// itemSeq returns the sequence number of an item name ("u-0000000042" ->
// 42), or -1.
func itemSeq(name string) int64 {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// sortFIFO sorts item names by sequence number (ZooKeeper does not order
// getChildren results).
func sortFIFO(names []string) {
	sort.Slice(names, func(a, b int) bool {
		sa, sb := itemSeq(names[a]), itemSeq(names[b])
		if sa != sb {
			return sa < sb
		}
		return names[a] < names[b]
	})
}

// Items returns the item names of shard in FIFO order (by sequence number)
// and a child watch on the shard: the channel receives one event at the next
// change of the shard's children (or zk.EventNotWatching when the session
// ends). Event paths are absolute (with chroot).
func (q *Queue) Items(ctx context.Context, shard int) ([]string, <-chan zk.Event, error) {
	if err := q.checkShard("Queue.Items", shard); err != nil {
		return nil, nil, err
	}
	var names []string
	var ev <-chan zk.Event
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		names, _, ev, err = q.c.childrenW(ctx, q.shardPath(queueDir, shard))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, fmt.Errorf("coord: Queue.Items %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
	}
	if err != nil {
		return nil, nil, err
	}
	sortFIFO(names)
	return names, ev, nil
}

// Get returns an item's data. Errors: ErrGone if the item does not exist.
func (q *Queue) Get(ctx context.Context, shard int, name string) ([]byte, error) {
	if err := q.checkShard("Queue.Get", shard); err != nil {
		return nil, err
	}
	if err := validateName(name); err != nil {
		return nil, fmt.Errorf("coord: Queue.Get: item: %w", err)
	}
	var data []byte
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		data, _, err = q.c.get(ctx, q.itemPath(shard, name))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.Get %s/%s: %w", ShardName(shard), name, ErrGone)
	}
	return data, err
}

// cursor caches one shard's child list for Take, so that a Take does not
// re-list the shard (up to ~10,000 names) for every item: the list is read
// again only when exhausted and a child event, a reconnect or the recheck
// timer says there may be something new. New items have higher sequence
// numbers than all cached ones, so the cache stays a FIFO prefix.
// Concurrent Takes on one shard share the cursor: each gets the next
// candidate name and claims it in parallel with the others; only re-listing
// and waiting are shared.
type cursor struct {
	mu       sync.Mutex
	listing  chan struct{} // non-nil while one Take re-lists; closed when done
	listed   bool
	names    []string
	next     int
	claimed  map[string]bool // claims present when the shard was listed
	watch    <-chan zk.Event
	epoch    <-chan struct{} // closed at the next reconnect after listing
	fired    bool            // the shard may have changed since listing
	rejected bool            // accept turned an item down since listing
	kick     chan struct{}   // closed by Nudge to wake a waiting Take
	// items caches the data of items read but not claimed (turned down by
	// accept), so re-scanning a shard whose items wait (a busy host, a
	// future not_before) costs no ZooKeeper read per item. The claim multi
	// checks the item's version, so a stale entry is caught and re-read.
	items map[string]cachedItem
}

// cachedItem is an item's data and znode version as last read.
type cachedItem struct {
	data    []byte
	version int32
}

// cached returns the cached data of an item of shard.
func (q *Queue) cached(shard int, name string) (cachedItem, bool) {
	cur := q.cursors[shard]
	cur.mu.Lock()
	defer cur.mu.Unlock()
	it, ok := cur.items[name]
	return it, ok
}

// cache stores (ok) or drops (!ok) an item's cached data.
func (q *Queue) cache(shard int, name string, it cachedItem, ok bool) {
	cur := q.cursors[shard]
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if !ok {
		delete(cur.items, name)
		return
	}
	if cur.items == nil {
		cur.items = make(map[string]cachedItem)
	}
	cur.items[name] = it
}

// Known tells Take the data of item name of shard, which this process has
// just created (version 0), so that claiming it needs no read. A stale
// entry costs nothing but a retry: the claim multi checks the version.
func (q *Queue) Known(shard int, name string, data []byte) {
	if shard < 0 || shard >= len(q.cursors) {
		return
	}
	q.cache(shard, name, cachedItem{data: data, version: 0}, true)
}

// Take claims the first claimable item of shard, in FIFO order, that accept
// (if not nil) accepts, blocking until there is one. It watches the shard's
// children instead of polling: it wakes on a child event (or a reconnect),
// and re-lists only when its cached list is exhausted. Items claimed by
// others, gone, or rejected are skipped; rejected items are looked at again
// after the recheck interval (WithRecheck) if nothing else wakes Take.
//
// Concurrent Takes on one shard (for example several fetchers of one
// worker) claim different items in parallel. accept sees the item's name
// and data; it must be quick and must not call the Queue.
//
// Errors: ErrSessionExpired when sess ends; ctx errors; ErrInvalidArgument;
// ErrNotInitialized; other ZooKeeper errors after retries.
func (q *Queue) Take(ctx context.Context, sess *Session, shard int, accept func(name string, data []byte) bool) (*Claim, error) {
	var reserve Reserve
	if accept != nil {
		reserve = func(name string, data []byte) (func(), bool) { return nil, accept(name, data) }
	}
	return q.TakeReserving(ctx, sess, shard, reserve)
}

// Reserve is a Take filter that may hold a resource of the caller's for the
// item it accepts (a per-host slot, say): ok reports acceptance; release,
// if not nil, is called when the accepted item is not claimed after all
// (claimed by another, gone, changed meanwhile, or an error), so the
// reservation cannot leak. When TakeReserving returns a Claim, the
// reservation made for its item belongs to the caller.
type Reserve func(name string, data []byte) (release func(), ok bool)

// TakeReserving is Take with a Reserve filter. Errors as Take.
func (q *Queue) TakeReserving(ctx context.Context, sess *Session, shard int, reserve Reserve) (*Claim, error) {
	if err := q.checkShard("Queue.Take", shard); err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, fmt.Errorf("coord: Queue.Take: nil session: %w", ErrInvalidArgument)
	}
	var held func() // release of the last acceptance not yet claimed
	giveBack := func() {
		if held != nil {
			held()
			held = nil
		}
	}
	defer giveBack()
	var accept func(string, []byte) bool
	if reserve != nil {
		accept = func(name string, data []byte) bool {
			giveBack() // an earlier acceptance (e.g. before a re-read) was not claimed
			release, ok := reserve(name, data)
			if ok {
				held = release
			}
			return ok
		}
	}
	cur := q.cursors[shard]
	for {
		name, err := q.nextName(ctx, sess, shard, cur)
		if err != nil {
			return nil, err
		}
		cl, err := q.tryClaim(ctx, sess, shard, name, accept)
		if err == nil {
			held = nil // the caller owns the reservation now
			return cl, nil
		}
		giveBack()
		switch {
		case errors.Is(err, ErrGone):
		case errors.Is(err, ErrClaimed), errors.Is(err, errRejected):
			cur.mu.Lock()
			cur.rejected = true
			cur.mu.Unlock()
		default:
			return nil, err
		}
	}
}

// nextName hands out the cursor's next candidate, re-listing the shard or
// waiting for a change when the cached list is exhausted.
func (q *Queue) nextName(ctx context.Context, sess *Session, shard int, cur *cursor) (string, error) {
	expired := func() error {
		return fmt.Errorf("coord: Queue.Take: session %s: %w", sess, ErrSessionExpired)
	}
	for {
		if !sess.alive() {
			return "", expired()
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		cur.mu.Lock()
		cur.poll()
		if cur.next < len(cur.names) {
			name := cur.names[cur.next]
			cur.next++
			skip := cur.claimed[name]
			if skip {
				// Claimed by someone when listed: it may come back (a
				// Release or Retry changes no child), so look again after
				// the recheck interval.
				cur.rejected = true
			}
			cur.mu.Unlock()
			if !skip {
				return name, nil
			}
			continue
		}
		if ch := cur.listing; ch != nil {
			// Another Take is re-listing: wait for its result.
			cur.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return "", ctx.Err()
			case <-sess.Done():
				return "", expired()
			}
			continue
		}
		if cur.listed && !cur.fired {
			// Exhausted and nothing new yet: wait for a change.
			watch, epoch, rejected := cur.watch, cur.epoch, cur.rejected
			if cur.kick == nil {
				cur.kick = make(chan struct{})
			}
			kick := cur.kick
			cur.mu.Unlock()
			if err := q.waitChange(ctx, sess, watch, epoch, kick, rejected); err != nil {
				return "", err
			}
			cur.mu.Lock()
			if cur.watch == watch && cur.epoch == epoch {
				cur.fired = true
			}
			cur.mu.Unlock()
			continue
		}
		ch := make(chan struct{})
		cur.listing = ch
		cur.mu.Unlock()
		err := q.list(ctx, shard, cur)
		cur.mu.Lock()
		cur.listing = nil
		close(ch)
		cur.mu.Unlock()
		if err != nil {
			return "", err
		}
	}
}

// Nudge tells Take that items of shard its accept function turned down may
// be acceptable now (the caller's own state changed, e.g. a host slot was
// freed): a Take waiting on the shard looks at its items again at once,
// instead of after the recheck interval. Cheap and non-blocking; an invalid
// shard is ignored.
func (q *Queue) Nudge(shard int) {
	q.wake(shard, false)
}

// wake makes Take look at shard's items again at once: always (force, after
// this process released or re-queued an item: no child event announces
// that), or only if it turned items down since it last listed.
func (q *Queue) wake(shard int, force bool) {
	if shard < 0 || shard >= len(q.cursors) {
		return
	}
	cur := q.cursors[shard]
	cur.mu.Lock()
	if force || cur.rejected {
		cur.fired = true
		if cur.kick != nil {
			close(cur.kick)
			cur.kick = nil
		}
	}
	cur.mu.Unlock()
}

// waitChange blocks until the shard may have changed: a child event, a
// reconnect, a Nudge, or (when items were rejected) the recheck interval.
func (q *Queue) waitChange(ctx context.Context, sess *Session, watch <-chan zk.Event, epoch, kick <-chan struct{}, rejected bool) error {
	var timer <-chan time.Time
	if rejected {
		t := time.NewTimer(q.recheck)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-watch:
	case <-epoch:
	case <-kick:
	case <-timer:
	case <-ctx.Done():
		return ctx.Err()
	case <-sess.Done():
		return fmt.Errorf("coord: Queue.Take: session %s: %w", sess, ErrSessionExpired)
	}
	return nil
}

// poll notes, without blocking, whether the watch or a reconnect fired.
// cur.mu must be held.
func (cur *cursor) poll() {
	if cur.watch != nil {
		select {
		case <-cur.watch:
			cur.fired, cur.watch = true, nil
		default:
		}
	}
	if cur.epoch != nil {
		select {
		case <-cur.epoch:
			cur.fired, cur.epoch = true, nil
		default:
		}
	}
}

// list re-reads a shard's items (with a child watch) and its claims, both
// requests in flight at once, and installs them in the cursor.
func (q *Queue) list(ctx context.Context, shard int, cur *cursor) error {
	epoch := q.c.reconnected()
	var names, claims []string
	var ev <-chan zk.Event
	var cerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cerr = Retry(ctx, q.c.retry, func(ctx context.Context) error {
			var err error
			claims, _, err = q.c.children(ctx, q.shardPath(claimsDir, shard))
			return err
		})
	}()
	// One armed child watch per shard: a watch that has not fired yet still
	// stands (go-zookeeper keeps each channel until it fires), so re-list
	// without setting another.
	cur.mu.Lock()
	armed := cur.watch
	cur.mu.Unlock()
	if armed != nil && fired(armed) {
		armed = nil
	}
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		if armed != nil {
			names, _, err = q.c.children(ctx, q.shardPath(queueDir, shard))
			ev = armed
			return err
		}
		names, _, ev, err = q.c.childrenW(ctx, q.shardPath(queueDir, shard))
		return err
	})
	wg.Wait()
	if err == nil {
		err = cerr
	}
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("coord: Queue.Take %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
	}
	if err != nil {
		return err
	}
	sortFIFO(names)
	claimed := make(map[string]bool, len(claims))
	for _, c := range claims {
		claimed[c] = true
	}
	cur.mu.Lock()
	if len(cur.items) > 0 {
		present := make(map[string]bool, len(names))
		for _, n := range names {
			present[n] = true
		}
		for n := range cur.items {
			if !present[n] {
				delete(cur.items, n) // finished by someone
			}
		}
	}
	cur.claimed = claimed
	cur.names, cur.next, cur.watch, cur.epoch = names, 0, ev, epoch
	cur.listed, cur.fired, cur.rejected = true, false, false
	cur.mu.Unlock()
	return nil
}

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

// QueueStats is a snapshot of the queue for an operator status display.
type QueueStats struct {
	Shards  []ShardStats
	Queued  int // total items
	Claimed int // total claims
	Failed  int // dead letters in R/failed
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
		return Retry(ctx, q.c.retry, func(ctx context.Context) error {
			ok, zs, err := q.c.exists(ctx, q.shardPath(queueDir, i))
			if err != nil {
				return err
			}
			if ok {
				s.Queued = int(zs.NumChildren)
			}
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
	err = Retry(ctx, q.c.retry, func(ctx context.Context) error {
		ok, zs, err := q.c.exists(ctx, q.root+"/"+failedDir)
		if err == nil && ok {
			st.Failed = int(zs.NumChildren)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("coord: Queue.Stats %s: %w", q.name, err)
	}
	return st, nil
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

func parseSessionHex(s string) (int64, error) {
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	return int64(u), err
}

// Failed lists the dead letters (names "<shard>-<item>", sorted).
func (q *Queue) Failed(ctx context.Context) ([]string, error) {
	if q.initErr != nil {
		return nil, q.initErr
	}
	var names []string
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		names, _, err = q.c.children(ctx, q.root+"/"+failedDir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.Failed %s: %w", q.name, ErrNotInitialized)
	}
	sort.Strings(names)
	return names, err
}

// FailedData returns a dead letter's data (as given to Claim.Fail).
// Errors: ErrNotFound if there is no such dead letter.
func (q *Queue) FailedData(ctx context.Context, name string) ([]byte, error) {
	if _, err := q.failedShard(name); err != nil {
		return nil, err
	}
	var data []byte
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		var err error
		data, _, err = q.c.get(ctx, q.failedPath(name))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.FailedData %s: %w", name, ErrNotFound)
	}
	return data, err
}

// failedShard parses the shard of a dead-letter name "sNNN-<item>".
func (q *Queue) failedShard(name string) (int, error) {
	if q.initErr != nil {
		return 0, q.initErr
	}
	if err := validateName(name); err != nil {
		return 0, fmt.Errorf("coord: dead letter %q: %w", name, err)
	}
	i := strings.IndexByte(name, '-')
	if i < 2 || name[0] != 's' {
		return 0, fmt.Errorf("coord: dead letter %q: want \"sNNN-<item>\": %w", name, ErrInvalidArgument)
	}
	shard, err := strconv.Atoi(name[1:i])
	if err != nil || shard < 0 || shard >= q.shards {
		return 0, fmt.Errorf("coord: dead letter %q: shard %q not in [0, %d): %w", name, name[1:i], q.shards, ErrInvalidArgument)
	}
	return shard, nil
}

// Requeue moves dead letter failedName back to the end of its shard's queue
// in one multi: delete(R/failed/<name>, version) and create(R/queue/<shard>/u-,
// sequential). data replaces the item's data; nil keeps the dead letter's
// data. It returns the new item name. After connection loss the multi is
// retried; a missing dead letter then means the earlier attempt committed,
// so the item is never queued twice.
//
// Errors: ErrNotFound if the dead letter does not exist (someone else
// requeued it); ErrInvalidArgument for a malformed name.
func (q *Queue) Requeue(ctx context.Context, failedName string, data []byte) (string, error) {
	shard, err := q.failedShard(failedName)
	if err != nil {
		return "", err
	}
	fp := q.failedPath(failedName)
	retried := false
	for attempt := 1; ; attempt++ {
		var old []byte
		var st *zk.Stat
		err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
			var err error
			old, st, err = q.c.get(ctx, fp)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			if retried {
				return "", nil
			}
			return "", fmt.Errorf("coord: Queue.Requeue %s: %w", failedName, ErrNotFound)
		}
		if err != nil {
			return "", err
		}
		d := data
		if d == nil {
			d = old
		}
		res, idx, err := q.c.multi(ctx, nil,
			&zk.DeleteRequest{Path: fp, Version: st.Version},
			&zk.CreateRequest{Path: q.shardPath(queueDir, shard) + "/" + itemPrefix, Data: d, Acl: q.c.ACL(), Flags: zk.FlagSequence},
		)
		switch {
		case err == nil:
			return path.Base(res[1].String), nil
		case idx == 0 && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion)):
			// Gone or changed since we read it: look again.
		case idx == 1 && errors.Is(err, zk.ErrNoNode):
			return "", fmt.Errorf("coord: Queue.Requeue %s: %w", failedName, ErrNotInitialized)
		case idx < 0 && IsConnectionLoss(err):
			retried = true
			if attempt >= q.c.retry.Attempts {
				return "", fmt.Errorf("coord: Queue.Requeue %s: gave up after %d attempts: %w", failedName, attempt, err)
			}
			if !sleepCtx(ctx, q.c.retry.Backoff(attempt)) {
				return "", ctx.Err()
			}
		default:
			return "", fmt.Errorf("coord: Queue.Requeue %s: %w", failedName, err)
		}
	}
}
