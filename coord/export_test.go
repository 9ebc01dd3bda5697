package coord

// Test-only API: layout 1's exactly-once Put (a seen-set marker per key in
// the same multi as the item, R/seen/<key[:2]>/<key>), which coord's own
// tests use to fill queues, and accessors of internals. Production code
// creates ready items through Commit's OpReady (frontier.Group.Apply) and
// Requeue only.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// CommitStats returns how many combined multis this Client has sent and how
// many callers' multis they carried in total (a request put back after
// another request's op failed counts again when resent), since Connect;
// requests/multis is the mean number of multis per ZooKeeper transaction
// (group commit). Both are 0 after Close.
func (c *Client) CommitStats() (multis, requests int64) {
	if v, ok := committers.Load(c); ok {
		b := v.(*committer)
		return b.multis.Load(), b.requests.Load()
	}
	return 0, 0
}

// Subscriptions returns the number of open Subscribe channels (each costs
// a buffer of 16 changes until its context ends), for leak checks.
func (c *Client) Subscriptions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

// State returns the client's current state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SetRecheck sets how long Take waits before looking again at items its
// reserve turned down.
func (q *Queue) SetRecheck(d time.Duration) { q.recheck = d }

// Claim claims item name of shard for sess (see claim).
func (q *Queue) Claim(ctx context.Context, sess *Session, shard int, name string) (*Claim, error) {
	if err := q.checkShard("Queue.Claim", shard); err != nil {
		return nil, err
	}
	if err := validateName(name); err != nil {
		return nil, fmt.Errorf("coord: Queue.Claim: item: %w", err)
	}
	return q.claim(ctx, sess, shard, name, nil)
}

// Items returns the item names of shard in FIFO order and a child watch.
func (q *Queue) Items(ctx context.Context, shard int) ([]string, <-chan zk.Event, error) {
	if err := q.checkShard("Queue.Items", shard); err != nil {
		return nil, nil, err
	}
	var names []string
	var ev <-chan zk.Event
	err := q.c.retry(ctx, func(ctx context.Context) error {
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

func (q *Queue) seenPath(key string) string {
	return q.root + "/seen/" + key[:2] + "/" + key
}

// Put enqueues data on shard exactly once per key: one multi of
// create(R/seen/<key[:2]>/<key>) and create(R/queue/<shard>/u-, sequential).
// It returns true if this call enqueued the item, false if key was already
// in the seen-set (a duplicate). After connection loss the multi is sent
// again: a seen marker found then proves that either our earlier multi
// committed or someone else enqueued the key; the marker's random nonce
// tells which (true if the earlier attempt was ours).
func (q *Queue) Put(ctx context.Context, shard int, key string, data []byte) (queued bool, err error) {
	defer q.c.observed("queue_put", time.Now(), &err)
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
		&zk.CreateRequest{Path: seen, Data: mark, Acl: q.c.acl(), Flags: zk.FlagPersistent},
		q.readyCreate(shard, data),
	}
	lost := false
	err = q.c.retryWrite(ctx, func(ctx context.Context) error {
		for {
			_, idx, err := q.c.multi(ctx, nil, ops...)
			switch {
			case err == nil:
				queued = true
				return nil
			case idx == 0 && errors.Is(err, zk.ErrNodeExists) && !lost:
				return nil // a duplicate
			case idx == 0 && errors.Is(err, zk.ErrNodeExists):
				// Was the committed multi ours? Compare the nonce.
				have, _, err := q.c.get(ctx, seen)
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
				queued = bytes.Equal(have, mark)
				return nil
			case idx == 0 && errors.Is(err, zk.ErrNoNode):
				// First key under this R/seen/<xx>: create the parent, go again.
				if err := q.c.ensurePath(ctx, path.Dir(seen)); err != nil {
					return err
				}
				continue
			case idx == 1 && errors.Is(err, zk.ErrNoNode):
				return fmt.Errorf("shard %s: %w", ShardName(shard), ErrNotInitialized)
			}
			lost = lost || isConnectionLoss(err)
			return err
		}
	}, nil)
	if err != nil {
		return false, fmt.Errorf("coord: Queue.Put %s %s: %w", q.name, key, err)
	}
	return queued, nil
}

// PutItem is one item of PutBatch.
type PutItem struct {
	Shard int
	Key   string
	Data  []byte
}

// PutBatch runs Puts concurrently (pipelined on the one connection);
// queued[i] reports whether items[i] was newly enqueued. Errors: the first
// item's error, naming its index and key.
func (q *Queue) PutBatch(ctx context.Context, items []PutItem) ([]bool, error) {
	queued := make([]bool, len(items))
	err := parallel(ctx, len(items), createConcurrency, func(ctx context.Context, i int) error {
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
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	var ok bool
	err := q.c.retry(ctx, func(ctx context.Context) error {
		var err error
		ok, _, err = q.c.exists(ctx, q.seenPath(key))
		return err
	})
	return ok, err
}

// ID returns the ZooKeeper session id (the ephemeralOwner of the session's
// ephemeral znodes).
func (s *Session) ID() int64 { return s.id }

// Session returns the session the member znode belongs to; the member
// lives as long as it.
func (m *Member) Session() *Session { return m.sess }

// IsConnectionLoss is isConnectionLoss, for tests that classify raw
// go-zookeeper errors.
var IsConnectionLoss = isConnectionLoss

// NewQueue returns the queue handle of the crawl rooted at root with
// shards shards, without I/O (Init creates its znodes).
func NewQueue(c *Client, root string, shards int) *Queue { return newQueue(c, root, shards) }

// Init creates the queue's znodes and levels, as CreateQueue.
func (q *Queue) Init(ctx context.Context, levels ...[]string) error { return q.init(ctx, levels...) }

// MapErr is mapErr: how coord classifies a go-zookeeper error.
func (c *Client) MapErr(err error) error { return c.mapErr(err) }

// ReleaseOrphan hands cl to the orphan handler's release, as when the
// caller of the claim multi that created it gave up on it.
func (cl *Claim) ReleaseOrphan() {
	cl.q.releaseOrphan(cl.sess, cl.fence, cl.q.claimPath(cl.shard, cl.name))
}
