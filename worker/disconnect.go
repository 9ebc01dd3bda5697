package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// Disconnection guard (docs/design.md, "Sessions: connection loss vs
// expiry"). The server expires a session one session timeout after it last
// heard from the client, and then another worker may claim our items and
// fetch from their hosts. The only proof that the server hears us is an
// answer to one of our own requests: coord.Client.LastHeard is the send
// time of the latest request (ping, handshake) a server answered, on the
// monotonic clock; watch events prove nothing (under a one-way partition
// they keep arriving while the server hears nothing). The limit is 2/3 of
// the session timeout the server granted (coord.Client.SessionTimeout, read
// afresh at every check, so a new session's or a new server's grant
// counts), not the one asked for. So:
//   - guardConnection cancels every in-flight fetch and claim loop of the
//     session once LastHeard is older than the limit, whatever the
//     connection state says (a one-way partition can leave it Connected);
//   - fetchItem checks freshness right before a request goes out
//     (checkHeard), since after a process pause (SIGSTOP, a long GC) a
//     resumed fetch goroutine can run before the guard's timer does;
//   - the worker claims nothing more in the session until a server has
//     answered a request sent after the suspension, with the session alive
//     (awaitSessionConfirmed), or the session ended.
// go-zookeeper pings every third of the session timeout, so a live link
// keeps LastHeard within about a third of it.

// cutOffLimit is how long after LastHeard an unconfirmed worker cancels its
// session's work, for a granted session timeout.
func cutOffLimit(sessionTimeout time.Duration) time.Duration { return sessionTimeout * 2 / 3 }

// errNotHeard is the cause of a fetch refused by checkHeard.
var errNotHeard = errors.New("ZooKeeper has not answered recently enough: the session may have expired")

// heardRecently reports whether a server answered a request sent less than
// the cut-off limit ago (with the granted timeout), and how long ago it was
// sent. A Worker without a client (pipeline tests) always passes.
func (w *Worker) heardRecently() (ok bool, ago, limit time.Duration) {
	if w.client == nil {
		return true, 0, 0
	}
	heard, timeout := w.client.Lease()
	limit, ago = cutOffLimit(timeout), time.Since(heard)
	return ago < limit, ago, limit
}

// checkHeard returns nil if the server is known to have heard this worker
// within the cut-off limit, else an error wrapping errNotHeard, naming how
// long ago and the limit.
func (w *Worker) checkHeard() error {
	if ok, ago, limit := w.heardRecently(); !ok {
		return fmt.Errorf("last answered request sent %v ago, cut-off %v: %w", ago.Round(time.Millisecond), limit, errNotHeard)
	}
	return nil
}

// guardConnection calls suspend once no server has answered a request sent
// within the cut-off limit (heardRecently), while ctx (the session's
// context) lives.
func (w *Worker) guardConnection(ctx context.Context, sess *coord.Session, suspend func()) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, ago, limit := w.heardRecently()
		if !ok {
			w.log.Warn("ZooKeeper has not answered for too long: cancelling in-flight fetches, claiming nothing until the session is confirmed; the items in flight stay queued",
				"session", sess.String(), "session_timeout", leaseTimeout(w.client), "last_answered_ago", ago.Round(time.Millisecond),
				"items_in_flight", w.counters.inFlight.Load())
			suspend()
			return
		}
		t.Reset(limit - ago)
	}
}

// confirmPoll is how often awaitSessionConfirmed looks at LastHeard;
// cutOffReport how often it says that the worker is still cut off.
const (
	confirmPoll  = 50 * time.Millisecond
	cutOffReport = time.Minute
)

// awaitSessionConfirmed returns true once a server has answered a request
// sent after since (and within the cut-off limit) with sess still alive,
// false once sess has ended or ctx is done. It holds no subscription.
// While no server answers it logs a warning every cutOffReport: a worker
// waits for ZooKeeper for ever (an ensemble's failover ends), and go-zookeeper's
// own lines say only that each try failed.
func (w *Worker) awaitSessionConfirmed(ctx context.Context, sess *coord.Session, since time.Time) bool {
	t := time.NewTicker(confirmPoll)
	defer t.Stop()
	report := time.Now().Add(cutOffReport)
	for {
		if now := time.Now(); now.After(report) {
			w.log.Warn("still cut off from ZooKeeper: claiming nothing, waiting for a server to answer (stop the worker with SIGTERM; its claims end with its session)",
				"cut_off_for", now.Sub(since).Round(time.Second), "session", sess.String())
			report = now.Add(cutOffReport)
		}
		// LastHeard moves past a new session's handshake only after the old
		// session has been ended (coord ends it in the handshake's event),
		// so a fresh LastHeard with sess alive is sess's own.
		if ok, _, _ := w.heardRecently(); ok && leaseHeard(w.client).After(since) && sess.Ctx().Err() == nil {
			w.log.Info("ZooKeeper answers again with the session alive: claiming again", "session", sess.String())
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-sess.Ctx().Done():
			return false
		case <-t.C:
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
		case errors.Is(err, coord.ErrConnectionLoss), errors.Is(err, context.DeadlineExceeded):
			continue
		case errors.Is(err, coord.ErrClosed):
			// The worker stopped: its session, and the claim, end with it.
			w.log.Debug("release of an item abandoned while cut off ended with the worker", "url", it.URL)
			return
		default:
			// ErrClaimLost...: nothing should be held any more; logged so
			// that a claim left behind anyway can be traced.
			w.log.Warn("release of an item abandoned while cut off gave up", "url", it.URL, "error", err)
			return
		}
	}
}

// leaseHeard and leaseTimeout are the parts of c.Lease().
func leaseHeard(c *coord.Client) time.Time {
	heard, _ := c.Lease()
	return heard
}

func leaseTimeout(c *coord.Client) time.Duration {
	_, timeout := c.Lease()
	return timeout
}
