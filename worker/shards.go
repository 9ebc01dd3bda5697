package worker

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// runSession runs the worker under one ZooKeeper session until the session
// ends or claimCtx is cancelled: it joins R/workers, keeps its status node
// fresh, runs the balancer when it leads (balance), follows the shard
// assignment and runs one claim loop per owned shard (groups are assigned,
// so a politeness key's shards stay together; docs/design.md "Shard
// ownership"). In-flight items run under a
// context derived from workCtx that is also cancelled when the session
// ends, so a lost session abandons them uncompleted.
func (w *Worker) runSession(claimCtx, workCtx context.Context, sess *coord.Session, inflight *sync.WaitGroup) {
	sctx, cancel := context.WithCancel(claimCtx)
	defer cancel()
	swork, cancelWork := context.WithCancel(workCtx)
	context.AfterFunc(sess.Ctx(), func() { cancelWork(); cancel() })
	go w.guardConnection(sctx, sess, func() { cancelWork(); cancel() })

	member := w.joinRetrying(sctx, sess)
	if member == nil {
		return
	}
	if w.current().cfg.MaxPages > 0 {
		w.refreshClusterPages(sctx) // before any claim: the count survives restarts
	}
	var loops sync.WaitGroup
	loops.Add(1)
	go func() {
		defer loops.Done()
		w.heartbeat(sctx, sess, member)
	}()

	members := coord.WatchMembers(sctx, w.client, w.root)
	store := coord.Store(w.client, w.root, coord.AssignmentNode)
	assigned := store.Watch(sctx)
	own := &ownership{sess: sess, member: member, work: swork, inflight: inflight,
		claimers: newLoops(sctx, &loops), managers: newLoops(sctx, &loops)}
	defer func() {
		own.claimers.stopAll()
		own.managers.stopAll()
		loops.Wait()
	}()
	tick := time.NewTicker(balanceInterval)
	defer tick.Stop()
	var ids []string
	bal := newBalancerState()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	round := func() {
		if again := w.balance(sctx, store, ids, bal); again > 0 {
			settle.Reset(again)
		}
	}
	for {
		select {
		case <-sctx.Done():
			return
		case next, ok := <-members:
			if !ok {
				<-sctx.Done()
				return
			}
			left := slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(next, id) })
			ids = next
			if left {
				// Most often a worker that saw a batch crawl done: the
				// others see it too within a done check and exit, so
				// the balancer waits leaveSettle before moving the
				// leaver's groups (a takeover, then an exit, is work and
				// ZooKeeper reads that only delay the last exit).
				w.left.Fire()
				settle.Reset(leaveSettle)
				continue
			}
			round()
		case v, ok := <-assigned:
			if !ok {
				<-sctx.Done()
				return
			}
			runNow := bal.delivered(v)
			w.followAssignment(sctx, own, v)
			if runNow {
				round()
			}
		case <-settle.C:
			round()
		case <-tick.C:
			round()
		}
	}
}

// joinRetryInterval is the pause between tries to join the worker list,
// e.g. while a previous incarnation's session still holds the id (it ends
// within a session timeout).
const joinRetryInterval = time.Second

// joinRetrying joins the crawl's worker list under sess (join), trying
// again every joinRetryInterval while it fails. It returns nil once ctx
// ends.
func (w *Worker) joinRetrying(ctx context.Context, sess *coord.Session) *coord.Member {
	var member *coord.Member
	err := retry(ctx, retryPolicy{pause: every(joinRetryInterval)}, anyError,
		func(_ int, err error) { w.log.Error("could not join the crawl's worker list; retrying", "error", err) },
		func(ctx context.Context) (err error) {
			member, err = w.join(ctx, sess)
			return err
		})
	if err != nil {
		return nil
	}
	return member
}

// ownership is what runSession runs in one session for the shard groups
// this worker owns.
type ownership struct {
	sess     *coord.Session
	member   *coord.Member   // this worker's status node in R/workers
	work     context.Context // in-flight items' context: ends with the session
	inflight *sync.WaitGroup // in-flight items, waited for at stop
	claimers *loops          // claim loops by shard
	managers *loops          // group managers by group
}

// followAssignment moves this worker's loops to a new value v of
// R/assignment: it gives up the groups and shards it lost and waits until
// their loops have stopped claiming; only then it acknowledges the value
// in its status node (the view a gaining worker waits for, awaitHandoff),
// and starts the loops of what it gained. It owns nothing while the znode
// is absent or bad, or does not name it (in standby, or not yet balanced).
func (w *Worker) followAssignment(ctx context.Context, own *ownership, v coord.ConfigValue) {
	var a *assignment
	if v.Data != nil {
		var err error
		if a, err = decodeAssignment(v.Data, w.layout.Groups()); err != nil {
			w.log.Warn("ignoring a bad shard assignment until the balancer replaces it", "error", err)
		}
	}
	if w.standby.Load() {
		a = nil
	}
	groups, shards := w.ownedBy(a)
	own.managers.keepOnly(groups)
	w.counters.shardsOwned.Store(int64(len(shards)))
	w.setOwnedShards(shards)
	own.claimers.keepOnly(shards)
	view := assignmentView(v.Data)
	w.view.Store(&view)
	if err := own.member.Update(ctx, w.status(own.sess)); err != nil && ctx.Err() == nil {
		w.log.Warn("could not acknowledge the shard assignment", "error", err)
	}
	gainedAt := assignedView{id: view, first: v.Version == 0}
	for s := range shards {
		own.claimers.start(s, func(ctx context.Context) { w.claimLoop(ctx, own.work, own.sess, s, own.inflight, gainedAt) })
	}
	for g := range groups {
		own.managers.start(g, func(ctx context.Context) { w.owner.Run(ctx, own.sess, g) })
	}
	members := 0
	if a != nil {
		members = len(a.Members)
		if slices.Contains(a.Members, w.opts.ID) {
			w.placed.Fire()
		}
	}
	w.log.Info("shard ownership", "members", members, "owned", len(shards))
}

// ownedBy returns the shard groups a gives this worker (groups, not shards,
// are assigned, so a politeness key's shards stay together) and their
// shards.
func (w *Worker) ownedBy(a *assignment) (groups, shards map[int]bool) {
	groups, shards = map[int]bool{}, map[int]bool{}
	for _, g := range a.owned(w.opts.ID) {
		groups[g] = true
		for _, s := range w.layout.GroupShards(g) {
			shards[s] = true
		}
	}
	return groups, shards
}

// assignedView is the value of R/assignment a worker gained a shard
// under: its view (assignmentView, what the members acknowledge) and
// whether it is the crawl's first assignment (the znode's version 0,
// written by the balancer's create: no member owned any group before it).
type assignedView struct {
	id    string
	first bool
}

// awaitHandoff runs when this worker gains a shard, before it claims
// there. It waits until (1) every other live worker has acknowledged the
// shard assignment this worker computed its ownership from (their status nodes
// carry the view), so no worker still believes it owns the shard and is
// still claiming in it (bounded by handoffAckWait; not under the crawl's
// first assignment, before which no worker owned anything);
// (2) no other worker holds a claim in the shard (the previous owner
// finishes or releases its in-flight items; a dead owner's claims vanish
// with its session), for as long as that takes: a claim lives only as long
// as its owner's session, and a fetch longer than any fixed bound must not
// overlap ours. If the shard may have had another owner (other workers
// are live, or were, and the assignment is not the crawl's first), it is
// then recorded as handed over (handedOver), so the first request to each
// of its politeness keys waits one effective interval, Crawl-delay
// included (coolAfterHandoff). So a key's request spacing holds across
// ownership changes, not only inside one worker; under the crawl's first
// assignment nobody fetched before, and workers started together begin at
// once. If the assignment changes meanwhile and the shard stays ours, the
// newest view counts; if the shard is lost, ctx is cancelled.
func (w *Worker) awaitHandoff(ctx context.Context, shard int, gained assignedView) error {
	view := gained.id
	deadline := time.Now().Add(handoffAckWait(w.opts.SessionTimeout))
	others := true // unknown until the member list is read: assume a handoff
	pause := func() error {
		if !sleepCtx(ctx, handoffPoll) {
			return ctx.Err()
		}
		return nil
	}
	// Under the crawl's first assignment no worker owned a shard before
	// it, so none can be claiming in this one, acknowledged or not (the
	// wait cost a fresh crawl's first claims about 130 ms: every member's
	// acknowledgement, polled every handoffPoll).
	for !gained.first && time.Now().Before(deadline) {
		ids, data, err := coord.Members(ctx, w.client, w.root)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			break
		}
		view := view
		if v := w.view.Load(); v != nil {
			view = *v // a newer assignment that still gives us the shard
		}
		others = len(ids) > 1 || (len(ids) == 1 && ids[0] != w.opts.ID)
		acked := true
		for _, id := range ids {
			var st Status
			if id != w.opts.ID && (json.Unmarshal(data[id], &st) != nil || st.View != view) {
				acked = false
				break
			}
		}
		if acked {
			break
		}
		if err := pause(); err != nil {
			return err
		}
	}
	if err := w.awaitOthersClaims(ctx, shard, pause); err != nil {
		return err
	}
	if others && !gained.first {
		w.handoffs.handedOver(shard, time.Now())
		// The previous owner finished the ready items it held here: the
		// group's loop, which loaded them as ready, sees their places free.
		if w.owner != nil {
			w.owner.Resync(w.layout.GroupOf(shard))
		}
	}
	return nil
}

// handoffAckWait bounds how long a worker gaining a shard waits for every
// other live worker to acknowledge its assignment: two session timeouts
// plus handoffAckMargin. A worker that has not acknowledged by then is cut
// off from ZooKeeper: its disconnection guard stopped its claim loops
// after 2/3 of a session timeout, and its session, with its claims, has
// expired.
func handoffAckWait(sessionTimeout time.Duration) time.Duration {
	return 2*sessionTimeout + handoffAckMargin
}

// handoffAckMargin covers the delays of the member-list watch and the
// status node update that carries an acknowledgement.
const handoffAckMargin = 2 * time.Second

// handoffPoll is how often awaitHandoff reads the member list and the
// gained shard's claims again (a children read and one get per member, or
// one children read): claiming in the gained shard waits for it.
const handoffPoll = 50 * time.Millisecond

// loops are goroutines keyed by shard or group, each with its own
// cancellable context under parent, counted in wg.
type loops struct {
	parent context.Context
	wg     *sync.WaitGroup
	m      map[int]loopHandle
}

type loopHandle struct {
	stop context.CancelFunc
	done chan struct{}
}

func newLoops(parent context.Context, wg *sync.WaitGroup) *loops {
	return &loops{parent: parent, wg: wg, m: map[int]loopHandle{}}
}

// start runs fn for key unless a loop for key runs already.
func (ls *loops) start(key int, fn func(ctx context.Context)) {
	if _, ok := ls.m[key]; ok {
		return
	}
	ctx, stop := context.WithCancel(ls.parent)
	h := loopHandle{stop: stop, done: make(chan struct{})}
	ls.m[key] = h
	ls.wg.Add(1)
	go func() {
		defer ls.wg.Done()
		defer close(h.done)
		fn(ctx)
	}()
}

// keepOnly stops the loops whose key is not in keep and waits until they
// have returned.
func (ls *loops) keepOnly(keep map[int]bool) {
	for k, h := range ls.m {
		if !keep[k] {
			h.stop()
			<-h.done
			delete(ls.m, k)
		}
	}
}

// stopAll cancels every loop (without waiting).
func (ls *loops) stopAll() {
	for _, h := range ls.m {
		h.stop()
	}
}
