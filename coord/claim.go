package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// errRejected: Take's reserve turned the item down.
var errRejected = errors.New("coord: item turned down by reserve")

// errReread: the item changed (or its claim vanished) between our read and
// the claim multi; read it again.
var errReread = errors.New("coord: item changed; read again")

// claimRecord is the JSON data of a claim znode (docs/design.md: worker id,
// session id, claimed_at).
type claimRecord struct {
	Owner     string    `json:"owner"`
	Session   string    `json:"session"`
	ClaimedAt time.Time `json:"claimed_at"`
}

// Claim is this worker's hold on one queue item: the ephemeral znode
// R/claims/<shard>/<item>, created under a Session. Exactly one of
// Complete, Release, Reschedule or Fail must end it (or the session's end
// does). Every one of them is fenced: it commits only if the claiming
// session is still alive (its R/sessions marker is checked in the same
// multi) and the claim znode is still ours; otherwise it returns
// ErrClaimLost and changes nothing, and the item stays queued for another
// worker (at-least-once). When the session ends (its Ctx is done) the claim
// is gone: abandon the work without finishing it.
//
// A Claim's methods are safe for concurrent use but meant for one owner.
type Claim struct {
	q            *Queue
	sess         *Session
	shard        int
	name         string
	data         []byte
	claimVersion int32
	fence        string
	readySince   time.Time

	mu             sync.Mutex
	finished       bool
	maybeCommitted bool // an earlier finishing multi's outcome is unknown
}

// ReadySince returns when the item's data was last written (created as a
// ready item or rescheduled), on this process's clock: the reply time of
// this Client's own Commit that created it, else the znode's mtime
// (ZooKeeper's clock, converted with the offset Client.Now estimates, so
// within half a round trip plus a millisecond). Zero when unknown.
func (cl *Claim) ReadySince() time.Time { return cl.readySince }

// Data returns the item's data as read when it was claimed.
func (cl *Claim) Data() []byte { return cl.data }

// Name returns the item's znode name ("u-0000000042").
func (cl *Claim) Name() string { return cl.name }

// Shard returns the item's shard index.
func (cl *Claim) Shard() int { return cl.shard }

// claim claims item name of shard for sess if accept (nil: anything)
// admits it: one multi of check(session fence marker), check(item, version
// read just before) and create of the ephemeral R/claims/<shard>/<name>
// with JSON {owner, session, claimed_at}, so the item's data is current as
// of the claim.
//
// Errors: errRejected; ErrClaimed (another worker, or another goroutine of
// this Client, holds it); ErrGone (no such item: someone finished it);
// ErrSessionExpired (sess ended); ErrNotInitialized; ErrInvalidArgument; ctx
// errors (a claim created after the caller gave up is released in the
// background).
func (q *Queue) claim(ctx context.Context, sess *Session, shard int, name string, accept func(string, []byte, *atomic.Value) bool) (cl *Claim, err error) {
	start := time.Now()
	defer func() {
		if !errors.Is(err, errRejected) {
			q.c.observed("queue_claim", start, &err)
		}
	}()
	if sess == nil {
		return nil, fmt.Errorf("coord: Queue.Claim: nil session: %w", ErrInvalidArgument)
	}
	if !sess.alive() {
		return nil, sess.expired("coord: Queue.Claim")
	}
	cp := q.claimPath(shard, name)
	if !q.c.reserve(cp, sess) {
		// Held here already (a claim of this process made after the shard
		// was listed): turned away before any read.
		return nil, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, ErrClaimed)
	}
	keep := false // set when the reservation passes to a Claim or to an orphan handler
	defer func() {
		if !keep {
			q.c.unreserve(cp, sess)
		}
	}()
	var it cachedItem
	if accept != nil {
		// Judge the candidate before the fence: most candidates a filter
		// sees are turned down (a busy politeness key), each then costing
		// one lookup in the shard's item cache and none of the fence's
		// bookkeeping.
		if it, err = q.peekItem(ctx, shard, name); err != nil {
			return nil, err
		}
		if !accept(name, it.data, it.note) {
			return nil, errRejected
		}
	}
	fence, err := q.fence(ctx, sess)
	if err != nil {
		return nil, err
	}
	// The claim takes the item out of the cache, whatever its outcome
	// (Commit caches the data of the ready items it creates).
	q.cache(shard, name, cachedItem{}, false)
	for judged := accept != nil; ; judged = false {
		if !judged {
			if it, err = q.readItem(ctx, shard, name); err != nil {
				return nil, err
			}
			if accept != nil && !accept(name, it.data, it.note) {
				q.cache(shard, name, it, true)
				return nil, errRejected
			}
		}
		cl, orphaned, err := q.createClaim(ctx, sess, fence, shard, name, it)
		keep = orphaned || err == nil
		if !errors.Is(err, errReread) {
			return cl, err
		}
	}
}

// peekItem returns an item's data and version from Take's cache, or read
// from ZooKeeper and then cached, so that a candidate turned down is not
// read again until it changes.
// Errors: ErrGone; ZooKeeper errors after retries.
func (q *Queue) peekItem(ctx context.Context, shard int, name string) (cachedItem, error) {
	cur := q.cursors[shard]
	cur.mu.Lock()
	it, ok := cur.items[name]
	cur.mu.Unlock()
	if ok {
		return it, nil
	}
	it, err := q.readItem(ctx, shard, name)
	if err == nil {
		q.cache(shard, name, it, true)
	}
	return it, err
}

// readItem reads an item's data and version from ZooKeeper.
// Errors: ErrGone (and its cache entry is dropped); ZooKeeper errors after
// retries.
func (q *Queue) readItem(ctx context.Context, shard int, name string) (cachedItem, error) {
	data, st, err := q.c.readData(ctx, q.itemPath(shard, name))
	if errors.Is(err, zk.ErrNoNode) {
		q.cache(shard, name, cachedItem{}, false)
		return cachedItem{}, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, ErrGone)
	}
	if err != nil {
		return cachedItem{}, err
	}
	return newCachedItem(data, st.Version, q.c.clock.localOf(st.Mtime)), nil
}

// createClaim sends the claim multi for item it (as read) of shard, and
// again after connection loss: a NodeExists whose ephemeralOwner is sess is
// then our own earlier create. orphaned reports that the reservation passed
// to an orphan handler, which undoes a claim the caller gave up on once its
// outcome is known. errReread: the item changed, or a claim found in the
// way vanished meanwhile.
func (q *Queue) createClaim(ctx context.Context, sess *Session, fence string, shard int, name string, it cachedItem) (cl *Claim, orphaned bool, err error) {
	where := fmt.Sprintf("coord: Queue.Claim %s/%s", ShardName(shard), name)
	cp, ip := q.claimPath(shard, name), q.itemPath(shard, name)
	rec, _ := json.Marshal(claimRecord{Owner: q.c.owner, Session: sess.String(), ClaimedAt: time.Now().UTC()})
	ops := []any{
		&zk.CheckVersionRequest{Path: fence, Version: -1},
		&zk.CheckVersionRequest{Path: ip, Version: it.version},
		&zk.CreateRequest{Path: cp, Data: rec, Acl: q.c.acl(), Flags: zk.FlagEphemeral},
	}
	orphan := func(_ []zk.MultiResponse, err error) {
		// The caller gave up while the claim multi was in flight: undo a
		// claim of ours if one exists, then free the reservation. Whatever
		// this attempt's answer (err): a failed resend (NodeExists after a
		// lost reply) may stand on an earlier attempt's committed create,
		// and releaseOrphan deletes only a claim our session holds.
		defer q.c.unreserve(cp, sess)
		q.releaseOrphan(sess, fence, cp)
	}
	claimVersion, lost := int32(0), false
	err = q.c.retryWrite(ctx, func(ctx context.Context) error {
		if !sess.alive() {
			return fmt.Errorf("session %s: %w", sess, ErrSessionExpired)
		}
		_, idx, err := q.c.multi(ctx, orphan, ops...)
		switch {
		case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
			orphaned = true // the multi's orphan handler owns the reservation now
			return err
		case err == nil:
			return nil
		case idx == 0:
			return fmt.Errorf("session %s fence gone: %w", sess, ErrSessionExpired)
		case idx == 1 && errors.Is(err, zk.ErrNoNode):
			return ErrGone
		case idx == 1 && errors.Is(err, zk.ErrBadVersion):
			return errReread // item data changed since we read it
		case idx == 2 && errors.Is(err, zk.ErrNodeExists):
			claimVersion, err = q.ownClaim(ctx, sess, cp)
			return err
		case idx == 2 && errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("queue %s: %w", q.name, ErrNotInitialized)
		}
		lost = lost || isConnectionLoss(err)
		return err
	}, nil)
	if err != nil {
		if lost && !orphaned && sess.alive() && (isConnectionLoss(err) || ctx.Err() != nil) {
			// Outcome unknown and we stop here: undo in the background.
			orphaned = true
			go orphan(nil, err)
		}
		return nil, orphaned, fmt.Errorf("%s: %w", where, err)
	}
	return &Claim{q: q, sess: sess, shard: shard, name: name, data: it.data,
		claimVersion: claimVersion, fence: fence, readySince: it.since}, false, nil
}

// ownClaim tells whose the claim znode cp in our way is: ours (an earlier
// attempt committed before its reply was lost; its version is returned),
// another session's (ErrClaimed), or nobody's any more (errReread).
func (q *Queue) ownClaim(ctx context.Context, sess *Session, cp string) (int32, error) {
	var ok bool
	var st *zk.Stat
	err := q.c.retry(ctx, func(ctx context.Context) error {
		var err error
		ok, st, err = q.c.exists(ctx, cp)
		return err
	})
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, errReread // released meanwhile: try again
	case st.EphemeralOwner != sess.id:
		return 0, ErrClaimed
	}
	return st.Version, nil
}

// orphanRetryInterval is the pause between the background tries of
// releaseOrphan while ZooKeeper stays unreachable.
const orphanRetryInterval = time.Second

// releaseOrphan deletes a claim of ours that no caller owns, fenced by the
// session marker: one try of at most two session timeouts plus 5 s (the
// caller waits for it), then, while that try ended cut off from ZooKeeper
// (connection loss, or its deadline) and the session lives, another try
// every orphanRetryInterval in the background until the claim is gone (or
// is not ours), the session ends or the client closes (which ends the
// session). An outage can outlast any fixed bound and the session survive
// it (a restarted ensemble restores its sessions): a claim given up then
// would hold its item for the session's whole life. Cost: one goroutine
// per orphaned claim while ZooKeeper is unreachable.
func (q *Queue) releaseOrphan(sess *Session, fence, cp string) {
	if q.tryReleaseOrphan(sess, fence, cp) {
		return
	}
	go func() {
		for sleepCtx(sess.Ctx(), orphanRetryInterval) {
			if q.tryReleaseOrphan(sess, fence, cp) {
				return
			}
		}
	}()
}

// tryReleaseOrphan makes one bounded, retried attempt of releaseOrphan; it
// reports false when the attempt ended cut off from ZooKeeper while the
// session lives (try again), true otherwise.
func (q *Queue) tryReleaseOrphan(sess *Session, fence, cp string) bool {
	ctx, cancel := context.WithTimeout(sess.Ctx(), 2*q.c.timeout+5*time.Second)
	defer cancel()
	err := q.c.retry(ctx, func(ctx context.Context) error {
		ok, st, err := q.c.exists(ctx, cp)
		if err != nil || !ok || st.EphemeralOwner != sess.id {
			return err
		}
		_, idx, err := q.c.multi(ctx, nil,
			&zk.CheckVersionRequest{Path: fence, Version: -1},
			&zk.DeleteRequest{Path: cp, Version: st.Version})
		if idx >= 0 {
			return nil // fence or claim gone: nothing left to undo
		}
		return err
	})
	cutOff := isConnectionLoss(err) || errors.Is(err, context.DeadlineExceeded)
	return !cutOff || !sess.alive() || q.c.isClosed()
}

// reserve records that this process is claiming path for s; false if a live
// session of this Client already holds or is taking it.
func (c *Client) reserve(path string, s *Session) bool {
	for {
		v, loaded := c.held.LoadOrStore(path, s)
		if !loaded {
			return true
		}
		old := v.(*Session)
		if old.alive() {
			return false
		}
		if c.held.CompareAndSwap(path, old, s) {
			return true
		}
	}
}

func (c *Client) unreserve(path string, s *Session) { c.held.CompareAndDelete(path, s) }

// Complete finishes the item: one multi of check(session marker),
// delete(claim, version), delete(item) (the versioned delete is the claim's
// check: one op fewer than a check before it, as every finishing multi
// here). Call it only after the item's follow-up work is durable (for the
// crawler: its links enqueued).
//
// Errors: ErrClaimLost (session ended, claim gone, or the claim already
// finished; nothing changed, the item stays queued); ErrGone (the item
// vanished under the claim; the claim is dropped); ctx errors and
// connection loss after retries (outcome unknown; calling Complete again is
// safe and detects an earlier commit).
func (cl *Claim) Complete(ctx context.Context) error {
	return cl.finish(ctx, "Complete", 2, []any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
		&zk.DeleteRequest{Path: cl.q.itemPath(cl.shard, cl.name), Version: -1},
	})
}

// Release gives the item back without changing it: one multi of
// check(session marker) and delete(claim, version). Errors as Complete.
func (cl *Claim) Release(ctx context.Context) error {
	return cl.finish(ctx, "Release", -1, []any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
	})
}

// Reschedule gives the item back with newData (for the crawler: an attempt
// counter and a not-before time) and drops the claim: one multi of
// check(session marker), delete(claim, version), setData(item, newData).
// The item keeps its place in FIFO order. Errors as Complete.
func (cl *Claim) Reschedule(ctx context.Context, newData []byte) error {
	return cl.finish(ctx, "Reschedule", 2, []any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
		&zk.SetDataRequest{Path: cl.q.itemPath(cl.shard, cl.name), Data: newData, Version: -1},
	})
}

// fail moves the item to the dead letters with data: one multi of
// check(session marker), delete(claim, version), the guard ops (Fail's
// cap: a versioned set of R/failed), create(R/failed/<shard>-<item>,
// data), delete(item).
func (cl *Claim) fail(ctx context.Context, data []byte, guard ...any) error {
	ops := append([]any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
	}, guard...)
	ops = append(ops,
		&zk.CreateRequest{Path: cl.q.failedPath(ShardName(cl.shard) + "-" + cl.name), Data: data, Acl: cl.q.c.acl(), Flags: zk.FlagPersistent},
		&zk.DeleteRequest{Path: cl.q.itemPath(cl.shard, cl.name), Version: -1},
	)
	return cl.finish(ctx, "Fail", 3+len(guard), ops)
}

// finish runs one fenced, finishing multi. ops[0] is the session-marker
// check and ops[1] the claim's versioned delete; itemIdx is the index of
// the op on the item (-1 if none).
func (cl *Claim) finish(ctx context.Context, op string, itemIdx int, ops []any) (err error) {
	metric := "queue_" + strings.ToLower(op)
	if op == "Reschedule" {
		metric = "queue_retry" // its name in the metrics since zkcrawl 0.1
	}
	defer cl.q.c.observed(metric, time.Now(), &err)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	where := fmt.Sprintf("coord: Claim.%s %s/%s", op, ShardName(cl.shard), cl.name)
	if cl.finished {
		return fmt.Errorf("%s: claim already finished: %w", where, ErrClaimLost)
	}
	settled := false // the claim is over, whatever err says
	err = cl.q.c.retryWrite(ctx, func(ctx context.Context) error {
		if !cl.sess.alive() {
			settled = true
			return fmt.Errorf("session %s ended: %w", cl.sess, ErrClaimLost)
		}
		_, idx, err := cl.q.c.multi(ctx, nil, ops...)
		if idx >= 0 || err == nil {
			settled, err = cl.outcome(idx, itemIdx, err)
			return err
		}
		if isConnectionLoss(err) || ctx.Err() != nil {
			cl.maybeCommitted = true // outcome unknown
		}
		return err
	}, nil)
	if isExpired(err) {
		settled, err = true, fmt.Errorf("%w: %w", ErrClaimLost, err)
	}
	if settled {
		cl.finished = true
		cl.q.c.unreserve(cl.q.claimPath(cl.shard, cl.name), cl.sess)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if op == "Release" || op == "Reschedule" {
		// The item is claimable again, and no child event says so.
		cl.q.wake(cl.shard, true)
	}
	return nil
}

// outcome interprets a finishing multi's answer (idx -1 and err nil:
// committed; idx >= 0: the failing op): settled reports that the claim is
// over either way.
func (cl *Claim) outcome(idx, itemIdx int, err error) (settled bool, _ error) {
	switch {
	case err == nil:
		return true, nil
	case idx == 0:
		return true, fmt.Errorf("session %s ended: %w", cl.sess, ErrClaimLost)
	case idx == 1 && errors.Is(err, zk.ErrNoNode) && cl.maybeCommitted:
		// The session is alive (its marker check passed) and only we
		// delete our claim: our earlier attempt committed.
		return true, nil
	case idx == 1 && errors.Is(err, zk.ErrNoNode):
		return true, fmt.Errorf("claim znode gone: %w", ErrClaimLost)
	case idx == 1:
		return true, fmt.Errorf("claim znode changed (%v): %w", err, ErrClaimLost)
	case itemIdx >= 0 && idx == itemIdx && errors.Is(err, zk.ErrNoNode):
		cl.q.releaseOrphan(cl.sess, cl.fence, cl.q.claimPath(cl.shard, cl.name))
		return true, ErrGone
	}
	return false, err
}
