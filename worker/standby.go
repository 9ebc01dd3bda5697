package worker

import (
	"context"

	"github.com/zkcrawl/zkcrawl/coord"
)

// Standby: a worker whose crawl log or WARC writes fail
// claims nothing, but its shards must not stall: at its next heartbeat it
// moves its status node from the worker list R/workers/<id> to
// R/standby/workers/<id> (still ephemeral, still refreshed, with
// storage_error saying why), so the other workers take its shards over
// through the usual handoff, and it owns no shard itself. Once a write
// probe succeeds it joins the worker list again and gains shards like a new
// worker (waiting for their previous owners' claims).

// presence is where this worker's status node is: in the worker list
// (member) or in standby; exactly one is set.
type presence struct {
	member, standby *coord.Member
}

// node returns the status node in use.
func (p *presence) node() *coord.Member {
	if p.standby != nil {
		return p.standby
	}
	return p.member
}

// updatePresence moves the status node between the worker list and standby
// as the outputs fail or work again (probing them while they fail), then
// refreshes it. sess is the session both nodes belong to.
func (w *Worker) updatePresence(ctx context.Context, sess *coord.Session, p *presence) {
	blocked := !w.outputsWritable()
	jctx, cancel := context.WithTimeout(ctx, w.opts.SessionTimeout)
	defer cancel()
	switch {
	case blocked && p.member != nil:
		w.standby.Store(true) // before leaving: our own ownership then excludes us
		sb, err := coord.Join(jctx, sess, coord.StandbyRoot(w.root), w.opts.ID, w.status(sess))
		if err != nil {
			w.standby.Store(false)
			w.log.Warn("could not move to standby", "error", err)
			break
		}
		if err := p.member.Leave(jctx); err != nil {
			w.log.Warn("leaving the worker list failed", "error", err)
		}
		p.member, p.standby = nil, sb
		w.log.Warn("left the worker list while output writes fail: other workers take this worker's shards",
			"standby_node", coord.Store(w.client, coord.StandbyRoot(w.root), coord.WorkersNode, w.opts.ID).String())
	case !blocked && p.standby != nil:
		w.standby.Store(false) // before joining: our own ownership then includes us
		m, err := w.join(jctx, sess)
		if err != nil {
			w.standby.Store(true)
			w.log.Warn("could not rejoin the worker list", "error", err)
			break
		}
		if err := p.standby.Leave(jctx); err != nil {
			w.log.Warn("leaving standby failed", "error", err)
		}
		p.member, p.standby = m, nil
		w.log.Info("output writes work again: rejoined the worker list")
	}
	if err := p.node().Update(ctx, w.status(sess)); err != nil && ctx.Err() == nil {
		w.log.Warn("status node update failed", "error", err)
	}
}
