package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// errRejected: Take's accept function turned the item down.
var errRejected = errors.New("coord: item rejected by accept")

// claimRecord is the JSON data of a claim znode (docs/design.md: worker id,
// session id, claimed_at).
type claimRecord struct {
	Owner     string    `json:"owner"`
	Session   string    `json:"session"`
	ClaimedAt time.Time `json:"claimed_at"`
}

// Claim is this worker's hold on one queue item: the ephemeral znode
// R/claims/<shard>/<item>, created under Session. Exactly one of Complete,
// Release, Retry or Fail must end it (or the session's end does). Every one
// of them is fenced: it commits only if the claiming session is still alive
// (its R/sessions marker is checked in the same multi) and the claim znode
// is still ours; otherwise it returns ErrClaimLost and changes nothing, and
// the item stays queued for another worker (at-least-once).
//
// A Claim's methods are safe for concurrent use but meant for one owner.
type Claim struct {
	q            *Queue
	sess         *Session
	shard        int
	name         string
	data         []byte
	itemVersion  int32
	claimVersion int32
	fence        string
	claimedAt    time.Time

	mu             sync.Mutex
	finished       bool
	maybeCommitted bool // an earlier finishing multi's outcome is unknown
}

// Data returns the item's data as read when it was claimed.
func (cl *Claim) Data() []byte { return cl.data }

// Name returns the item's znode name ("u-0000000042").
func (cl *Claim) Name() string { return cl.name }

// Shard returns the item's shard index.
func (cl *Claim) Shard() int { return cl.shard }

// Session returns the session that holds the claim.
func (cl *Claim) Session() *Session { return cl.sess }

// ClaimedAt returns when the claim was made (local clock).
func (cl *Claim) ClaimedAt() time.Time { return cl.claimedAt }

// Lost returns a channel closed when the claim's session ends: the claim
// znode is then gone and another worker may take the item; abandon the work
// without completing it.
func (cl *Claim) Lost() <-chan struct{} { return cl.sess.Done() }

// Claim claims item name of shard for sess: one multi of check(session
// fence marker), check(item, version read just before) and create of the
// ephemeral R/claims/<shard>/<name> with JSON {owner, session, claimed_at}.
// A NodeExists on the claim is ErrClaimed unless its ephemeralOwner is sess
// (our own create whose reply was lost to connection loss). The item is read
// first, so its data is current as of the claim.
//
// Errors: ErrClaimed (another worker, or another goroutine of this Client,
// holds it); ErrGone (no such item: someone finished it); ErrSessionExpired
// (sess ended); ErrNotInitialized; ErrInvalidArgument; ctx errors (a claim
// created after the caller gave up is released in the background).
func (q *Queue) Claim(ctx context.Context, sess *Session, shard int, name string) (*Claim, error) {
	if err := q.checkShard("Queue.Claim", shard); err != nil {
		return nil, err
	}
	if err := validateName(name); err != nil {
		return nil, fmt.Errorf("coord: Queue.Claim: item: %w", err)
	}
	return q.tryClaim(ctx, sess, shard, name, nil)
}

func (q *Queue) tryClaim(ctx context.Context, sess *Session, shard int, name string, accept func(string, []byte) bool) (cl *Claim, err error) {
	start := time.Now()
	defer func() {
		if !errors.Is(err, errRejected) {
			q.c.observed("queue_claim", start, &err)
		}
	}()
	return q.tryClaimOnce(ctx, sess, shard, name, accept)
}

func (q *Queue) tryClaimOnce(ctx context.Context, sess *Session, shard int, name string, accept func(string, []byte) bool) (*Claim, error) {
	if sess == nil {
		return nil, fmt.Errorf("coord: Queue.Claim: nil session: %w", ErrInvalidArgument)
	}
	if !sess.alive() {
		return nil, fmt.Errorf("coord: Queue.Claim: session %s: %w", sess, ErrSessionExpired)
	}
	cp, ip := q.claimPath(shard, name), q.itemPath(shard, name)
	if !q.c.reserve(cp, sess) {
		return nil, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, ErrClaimed)
	}
	keep := false // set when the reservation passes to a Claim or to an orphan handler
	defer func() {
		if !keep {
			q.c.unreserve(cp, sess)
		}
	}()

	fence, err := q.fence(ctx, sess)
	if err != nil {
		return nil, err
	}
	for {
		var data []byte
		var ist *zk.Stat
		if c, ok := q.cached(shard, name); ok && accept != nil {
			data, ist = c.data, &zk.Stat{Version: c.version}
		} else {
			err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
				var err error
				data, ist, err = q.c.get(ctx, ip)
				return err
			})
			if errors.Is(err, zk.ErrNoNode) {
				q.cache(shard, name, cachedItem{}, false)
				return nil, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, ErrGone)
			}
			if err != nil {
				return nil, err
			}
		}
		if accept != nil && !accept(name, data) {
			q.cache(shard, name, cachedItem{data: data, version: ist.Version}, true)
			return nil, errRejected
		}
		q.cache(shard, name, cachedItem{}, false)
		now := time.Now()
		rec, _ := json.Marshal(claimRecord{Owner: q.owner, Session: sess.String(), ClaimedAt: now.UTC()})
		ops := []any{
			&zk.CheckVersionRequest{Path: fence, Version: -1},
			&zk.CheckVersionRequest{Path: ip, Version: ist.Version},
			&zk.CreateRequest{Path: cp, Data: rec, Acl: q.c.ACL(), Flags: zk.FlagEphemeral},
		}
		claimVersion := int32(0)
		orphan := func(_ []zk.MultiResponse, err error) {
			// The caller gave up while the claim multi was in flight: undo it
			// if it committed (or may have), then free the reservation.
			defer q.c.unreserve(cp, sess)
			if err == nil || IsConnectionLoss(err) {
				q.releaseOrphan(sess, fence, cp)
			}
		}
		reread := false
		for attempt := 1; ; attempt++ {
			_, idx, err := q.c.multi(ctx, orphan, ops...)
			if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				keep = true // the orphan handler owns the reservation now
				return nil, err
			}
			switch {
			case err == nil:
			case idx == 0:
				return nil, fmt.Errorf("coord: Queue.Claim: session %s fence gone: %w", sess, ErrSessionExpired)
			case idx == 1 && errors.Is(err, zk.ErrNoNode):
				return nil, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, ErrGone)
			case idx == 1 && errors.Is(err, zk.ErrBadVersion):
				reread = true // item data changed since we read it
			case idx == 2 && errors.Is(err, zk.ErrNodeExists):
				var ok bool
				var cst *zk.Stat
				if err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
					var err error
					ok, cst, err = q.c.exists(ctx, cp)
					return err
				}); err != nil {
					return nil, err
				}
				if !ok {
					reread = true // released meanwhile: try again
					break
				}
				if cst.EphemeralOwner != sess.id {
					return nil, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, ErrClaimed)
				}
				// Our own claim: an earlier attempt committed before the
				// connection was lost.
				claimVersion = cst.Version
			case idx == 2 && errors.Is(err, zk.ErrNoNode):
				return nil, fmt.Errorf("coord: Queue.Claim %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
			case isExpired(err):
				return nil, fmt.Errorf("coord: Queue.Claim: %w", err)
			case idx < 0 && IsConnectionLoss(err):
				if attempt >= q.c.retry.Attempts || !sess.alive() {
					if !sess.alive() {
						return nil, fmt.Errorf("coord: Queue.Claim: session %s: %w", sess, ErrSessionExpired)
					}
					// Outcome unknown and we stop here: undo in the background.
					keep = true
					go orphan(nil, err)
					return nil, fmt.Errorf("coord: Queue.Claim %s/%s: gave up after %d attempts: %w", ShardName(shard), name, attempt, err)
				}
				if !sleepCtx(ctx, q.c.retry.Backoff(attempt)) {
					keep = true
					go orphan(nil, err)
					return nil, ctx.Err()
				}
				continue
			default:
				return nil, fmt.Errorf("coord: Queue.Claim %s/%s: %w", ShardName(shard), name, err)
			}
			break
		}
		if reread {
			continue
		}
		keep = true
		return &Claim{
			q: q, sess: sess, shard: shard, name: name, data: data,
			itemVersion: ist.Version, claimVersion: claimVersion, fence: fence, claimedAt: now,
		}, nil
	}
}

// releaseOrphan deletes a claim of ours that no caller owns (best effort,
// in the background, fenced by the session marker).
func (q *Queue) releaseOrphan(sess *Session, fence, cp string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*q.c.timeout+5*time.Second)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = Retry(ctx, q.c.retry, func(ctx context.Context) error {
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

// fenceEntry is the per-session marker state of a Queue.
type fenceEntry struct {
	sess  *Session
	ready chan struct{}
	path  string
	err   error
}

// fence returns the path of sess's marker R/sessions/<id>, creating it on
// first use. The marker is an ephemeral znode of sess, so it exists exactly
// while sess lives; checking it inside a multi makes that multi commit only
// in sess, even when go-zookeeper sends a request queued during a
// disconnection after a NEW session has replaced sess.
func (q *Queue) fence(ctx context.Context, sess *Session) (string, error) {
	q.fenceMu.Lock()
	for id, e := range q.fences {
		if !e.sess.alive() {
			delete(q.fences, id)
		}
	}
	e := q.fences[sess.id]
	if e == nil {
		e = &fenceEntry{sess: sess, ready: make(chan struct{})}
		q.fences[sess.id] = e
		go q.makeFence(e)
	}
	q.fenceMu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-sess.Done():
		return "", fmt.Errorf("coord: session %s: %w", sess, ErrSessionExpired)
	}
	if e.err != nil {
		return "", e.err
	}
	return e.path, nil
}

// makeFence creates and verifies a session marker; on failure other than
// expiry the entry is dropped so the next call tries again.
func (q *Queue) makeFence(e *fenceEntry) {
	defer close(e.ready)
	sess := e.sess
	ctx, cancel := context.WithTimeout(context.Background(), q.c.retry.Total+2*q.c.timeout)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	p := q.fencePath(sess.id)
	rec, _ := json.Marshal(claimRecord{Owner: q.owner, Session: sess.String(), ClaimedAt: time.Now().UTC()})
	err := Retry(ctx, q.c.retry, func(ctx context.Context) error {
		_, err := q.c.create(ctx, p, rec, zk.FlagEphemeral, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		ok, st, err := q.c.exists(ctx, p)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("coord: session marker %s vanished: %w", p, ErrSessionExpired)
		}
		if st.EphemeralOwner != sess.id {
			// Our create ran in a newer session (it was queued while
			// disconnected): that marker would vouch for a dead session.
			_ = q.c.del(ctx, p, st.Version)
			return fmt.Errorf("coord: session marker %s made by session %s: %w", p, sessionHex(st.EphemeralOwner), ErrSessionExpired)
		}
		return nil
	})
	switch {
	case err == nil:
		e.path = p
		return
	case errors.Is(err, zk.ErrNoNode):
		e.err = fmt.Errorf("coord: queue %s: %w", q.name, ErrNotInitialized)
	case !sess.alive():
		e.err = fmt.Errorf("coord: session %s: %w", sess, ErrSessionExpired)
	default:
		e.err = fmt.Errorf("coord: create session marker %s: %w", p, err)
	}
	if !isExpired(e.err) {
		q.fenceMu.Lock()
		if q.fences[sess.id] == e {
			delete(q.fences, sess.id)
		}
		q.fenceMu.Unlock()
	}
}

// Complete finishes the item: one multi of check(session marker),
// check(claim, version), delete(item), delete(claim). Call it only after the
// item's follow-up work is durable (for the crawler: its links enqueued).
//
// Errors: ErrClaimLost (session ended or claim gone; nothing changed, the
// item stays queued); ErrGone (the item vanished under the claim; the claim
// is dropped); ErrClaimFinished; ctx errors and connection loss after
// retries (outcome unknown; calling Complete again is safe and detects an
// earlier commit).
func (cl *Claim) Complete(ctx context.Context) error {
	return cl.finish(ctx, "Complete", 2, []any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.CheckVersionRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
		&zk.DeleteRequest{Path: cl.q.itemPath(cl.shard, cl.name), Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
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

// Retry puts the item back in place with newData (for example an attempt
// counter and a not-before time) and drops the claim: one multi of
// check(session marker), check(claim, version), setData(item, newData),
// delete(claim). The item keeps its place in FIFO order. Errors as Complete.
func (cl *Claim) Retry(ctx context.Context, newData []byte) error {
	return cl.finish(ctx, "Retry", 2, []any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.CheckVersionRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
		&zk.SetDataRequest{Path: cl.q.itemPath(cl.shard, cl.name), Data: newData, Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
	})
}

// Fail moves the item to the dead letters with data (the item plus its last
// error): one multi of check(session marker), check(claim, version),
// create(R/failed/<shard>-<item>, data), delete(item), delete(claim).
// Errors as Complete.
func (cl *Claim) Fail(ctx context.Context, data []byte) error {
	return cl.finish(ctx, "Fail", 3, []any{
		&zk.CheckVersionRequest{Path: cl.fence, Version: -1},
		&zk.CheckVersionRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
		&zk.CreateRequest{Path: cl.q.failedPath(ShardName(cl.shard) + "-" + cl.name), Data: data, Acl: cl.q.c.ACL(), Flags: zk.FlagPersistent},
		&zk.DeleteRequest{Path: cl.q.itemPath(cl.shard, cl.name), Version: -1},
		&zk.DeleteRequest{Path: cl.q.claimPath(cl.shard, cl.name), Version: cl.claimVersion},
	})
}

// finish runs one fenced, finishing multi. ops[0] is the session-marker
// check and ops[1] the claim check (or delete); itemIdx is the index of the
// op on the item (-1 if none).
func (cl *Claim) finish(ctx context.Context, op string, itemIdx int, ops []any) (err error) {
	defer cl.q.c.observed("queue_"+strings.ToLower(op), time.Now(), &err)
	err = cl.finishOnce(ctx, op, itemIdx, ops)
	if err == nil && (op == "Release" || op == "Retry") {
		// The item is claimable again, and no child event says so.
		cl.q.wake(cl.shard, true)
	}
	return err
}

func (cl *Claim) finishOnce(ctx context.Context, op string, itemIdx int, ops []any) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	where := fmt.Sprintf("coord: Claim.%s %s/%s", op, ShardName(cl.shard), cl.name)
	if cl.finished {
		return fmt.Errorf("%s: %w", where, ErrClaimFinished)
	}
	cp := cl.q.claimPath(cl.shard, cl.name)
	done := func(err error) error {
		cl.finished = true
		cl.q.c.unreserve(cp, cl.sess)
		return err
	}
	for attempt := 1; ; attempt++ {
		if !cl.sess.alive() {
			return done(fmt.Errorf("%s: session %s ended: %w", where, cl.sess, ErrClaimLost))
		}
		_, idx, err := cl.q.c.multi(ctx, nil, ops...)
		switch {
		case err == nil:
			return done(nil)
		case idx == 0:
			return done(fmt.Errorf("%s: session %s ended: %w", where, cl.sess, ErrClaimLost))
		case idx == 1 && errors.Is(err, zk.ErrNoNode):
			if cl.maybeCommitted {
				// The session is alive (its marker check passed) and only we
				// delete our claim: our earlier attempt committed.
				return done(nil)
			}
			return done(fmt.Errorf("%s: claim znode gone: %w", where, ErrClaimLost))
		case idx == 1:
			return done(fmt.Errorf("%s: claim znode changed (%v): %w", where, err, ErrClaimLost))
		case itemIdx >= 0 && idx == itemIdx && errors.Is(err, zk.ErrNoNode):
			cl.q.releaseOrphan(cl.sess, cl.fence, cp)
			return done(fmt.Errorf("%s: %w", where, ErrGone))
		case idx >= 0:
			return fmt.Errorf("%s: %w", where, err)
		case isExpired(err):
			return done(fmt.Errorf("%s: %w: %w", where, ErrClaimLost, err))
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			cl.maybeCommitted = true
			return err
		case IsConnectionLoss(err):
			cl.maybeCommitted = true
			if attempt >= cl.q.c.retry.Attempts {
				return fmt.Errorf("%s: gave up after %d attempts: %w", where, attempt, err)
			}
			if !sleepCtx(ctx, cl.q.c.retry.Backoff(attempt)) {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
			}
		default:
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}
