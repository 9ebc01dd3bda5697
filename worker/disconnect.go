package worker

import (
	"context"
	"errors"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// Disconnection guard. The server expires a session one
// session timeout after it last heard from the client, and then another
// worker may claim our items. So once the client is Disconnected, the worker
// cancels every in-flight fetch and claim loop of the session when 2/3 of
// the session timeout have passed since the last packet from the server
// (coord.Client.LastHeard), and claims nothing until it has reconnected and
// the server has confirmed the session lives (or it has a new one).
// go-zookeeper reports Disconnected only after 2/3 of the timeout of silence
// on a black-holed link (its read deadline), so there the cancellation is
// immediate; on a reset connection a reconnect within the remaining time
// costs nothing.

// cutOffLimit is how long after the last word from the server an
// unreachable worker cancels its session's work.
func cutOffLimit(sessionTimeout time.Duration) time.Duration { return sessionTimeout * 2 / 3 }

// guardConnection calls suspend once the client is disconnected and has
// heard nothing from the server for cutOffLimit, while ctx (the session's
// context) lives.
func (w *Worker) guardConnection(ctx context.Context, sess *coord.Session, suspend func()) {
	limit := cutOffLimit(w.opts.SessionTimeout)
	var timer <-chan time.Time
	changes := w.client.Subscribe(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case ch, ok := <-changes:
			if !ok {
				return
			}
			switch ch.State {
			case coord.StateDisconnected:
				if timer == nil {
					wait := limit
					if last := w.client.LastHeard(); !last.IsZero() {
						wait = max(0, time.Until(last.Add(limit)))
					}
					timer = time.After(wait)
				}
			default:
				timer = nil
			}
		case <-timer:
			w.log.Warn("cut off from ZooKeeper too long: cancelling in-flight fetches, claiming nothing until the session is confirmed",
				"session", sess.String(), "session_timeout", w.opts.SessionTimeout, "last_heard", w.client.LastHeard())
			suspend()
			return
		}
	}
}

// awaitSessionConfirmed returns once the client is connected with sess
// still alive (true), or sess has ended or ctx is done (false).
func (w *Worker) awaitSessionConfirmed(ctx context.Context, sess *coord.Session) bool {
	changes := w.client.Subscribe(ctx)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-sess.Ctx().Done():
			return false
		case ch, ok := <-changes:
			if !ok {
				return false
			}
			if ch.State == coord.StateConnected && ch.SessionID == sess.ID() && sess.Ctx().Err() == nil {
				w.log.Info("reconnected to ZooKeeper with the session alive: claiming again", "session", sess.String())
				return true
			}
		}
	}
}

// releaseWhenConnected releases claim in the background, trying every
// second while ZooKeeper is unreachable, until it succeeds, the claim's
// session ends (ErrClaimLost: the claim is gone with it) or the client is
// closed. Used when an item was abandoned while cut off from ZooKeeper: the
// session may survive, and its claim would otherwise hold the item for the
// session's whole life.
func (w *Worker) releaseWhenConnected(claim itemClaim, it frontier.Item) {
	for {
		time.Sleep(persistRetryInterval) // a closed client ends with ErrClaimLost below
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := claim.Release(ctx)
		cancel()
		switch {
		case err == nil:
			w.log.Info("released an item abandoned while cut off from ZooKeeper", "url", it.URL)
			return
		case coord.IsConnectionLoss(err), errors.Is(err, context.DeadlineExceeded):
			continue
		default:
			return // ErrClaimLost...: nothing is held any more
		}
	}
}
