package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

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
	case <-sess.done():
		return "", sess.expired("coord")
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
	ctx, cancel := context.WithTimeout(sess.Ctx(), retryPol.total+2*q.c.timeout)
	defer cancel()
	p := q.fencePath(sess.id)
	rec, _ := json.Marshal(claimRecord{Owner: q.c.owner, Session: sess.String(), ClaimedAt: time.Now().UTC()})
	err := q.c.retry(ctx, func(ctx context.Context) error {
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
		e.err = sess.expired("coord")
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
