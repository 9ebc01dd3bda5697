package worker

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// runSession runs the worker under one ZooKeeper session until the session
// ends or claimCtx is cancelled: it joins R/workers, keeps its status node
// fresh, follows the member list and runs one claim loop per owned shard
// (rendezvous hashing over shard groups: a host's shards stay together,
// docs/design.md "Shard ownership"). In-flight items
// run under a context derived from workCtx that is also cancelled when the
// session ends, so a lost session abandons them uncompleted.
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
		w.heartbeat(sctx, member)
	}()

	members := coord.WatchMembers(sctx, w.client, w.root)
	own := &ownership{sess: sess, member: member, work: swork, inflight: inflight,
		claimers: newLoops(sctx, &loops), managers: newLoops(sctx, &loops)}
	defer func() {
		own.claimers.stopAll()
		own.managers.stopAll()
		loops.Wait()
	}()
	for {
		select {
		case <-sctx.Done():
			return
		case ids, ok := <-members:
			if !ok {
				<-sctx.Done()
				return
			}
			w.followMembers(sctx, own, ids)
		}
	}
}

// joinRetrying joins the crawl's worker list under sess (join), trying
// again every second while it fails, for example while the id is still
// held by a previous incarnation's session that has not expired yet. It
// returns nil once ctx ends.
func (w *Worker) joinRetrying(ctx context.Context, sess *coord.Session) *coord.Member {
	for {
		member, err := w.join(ctx, sess)
		if err == nil {
			return member
		}
		if ctx.Err() != nil {
			return nil
		}
		w.log.Error("could not join the crawl's worker list; retrying", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
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

// followMembers moves this worker's loops to a new member list ids: it
// gives up the groups and shards it lost and waits until their loops have
// stopped claiming; only then it acknowledges the list in its status node
// (the view a gaining worker waits for, awaitHandoff), and starts the loops
// of what it gained. Not counted in ids while in standby, it owns nothing.
func (w *Worker) followMembers(ctx context.Context, own *ownership, ids []string) {
	if !slices.Contains(ids, w.opts.ID) && !w.standby.Load() {
		ids = append(ids, w.opts.ID)
		slices.Sort(ids)
	}
	groups, shards := w.ownedBy(ids)
	own.managers.keepOnly(groups)
	w.counters.shardsOwned.Store(int64(len(shards)))
	w.setOwnedShards(shards)
	own.claimers.keepOnly(shards)
	view := memberView(ids)
	w.view.Store(&view)
	if err := own.member.Update(ctx, w.status(own.sess)); err != nil && ctx.Err() == nil {
		w.log.Warn("could not acknowledge the member list", "error", err)
	}
	for s := range shards {
		own.claimers.start(s, func(ctx context.Context) { w.claimLoop(ctx, own.work, own.sess, s, own.inflight, view) })
	}
	for g := range groups {
		own.managers.start(g, func(ctx context.Context) { w.owner.Run(ctx, own.sess, g) })
	}
	w.log.Info("shard ownership", "members", len(ids), "owned", len(shards))
}

// ownedBy returns the shard groups this worker owns among the members ids
// (rendezvous hashing over groups, so a host's shards stay together) and
// their shards.
func (w *Worker) ownedBy(ids []string) (groups, shards map[int]bool) {
	groups, shards = map[int]bool{}, map[int]bool{}
	for _, g := range coord.OwnedShards(w.opts.ID, w.layout.Groups(), ids) {
		groups[g] = true
		for _, s := range w.layout.GroupShards(g) {
			shards[s] = true
		}
	}
	return groups, shards
}

// claimLoop claims the items of one owned shard while ctx lives: while the
// crawl is not paused it takes the first claimable item in FIFO order whose
// not_before has passed and whose host has a free claim slot, waits for a
// fetch slot (worker_concurrency) and starts processing it. No slot is held
// while waiting for items, so an empty shard never starves a busy one; each
// shard holds at most takersPerShard claims that wait for a slot.
func (w *Worker) claimLoop(ctx, work context.Context, sess *coord.Session, shard int, inflight *sync.WaitGroup, view string) {
	if err := w.awaitHandoff(ctx, shard, view); err != nil {
		return
	}
	var takers sync.WaitGroup
	for range takersPerShard {
		takers.Go(func() { w.takeLoop(ctx, work, sess, shard, inflight) })
	}
	takers.Wait()
}

// takersPerShard is how many claims one owned shard has under way at once.
// A claim is a ZooKeeper write (about a millisecond with forceSync); one
// taker per shard caps a single-host crawl at one page per claim round trip,
// while concurrent takers' claims share one group-committed multi.
const takersPerShard = 4

// takeLoop is one of a shard's takers: claim, wait for a fetch slot, start
// processing, repeat while ctx lives.
func (w *Worker) takeLoop(ctx, work context.Context, sess *coord.Session, shard int, inflight *sync.WaitGroup) {
	for ctx.Err() == nil {
		if err := w.waitRunnable(ctx); err != nil {
			return
		}
		var t taken
		claim, err := w.queue.Take(ctx, sess, shard, w.reserveFor(shard, &t))
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, coord.ErrSessionExpired) {
				return
			}
			w.log.Warn("claim failed; retrying", "shard", coord.ShardName(shard), "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		w.metrics.claimed()
		if t.err != nil {
			// Undecodable item: a dead letter, not a crash.
			w.failUndecodable(work, claim, t.err)
			continue
		}
		it, host := t.item, t.host
		if err := w.acquireSlot(ctx); err != nil {
			w.freeHostSlot(host)
			w.abandon(work, claim, it, err)
			return
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer w.releaseSlot()
			fetched := sync.OnceFunc(func() { w.freeHostSlot(host) })
			defer fetched()
			w.process(work, claim, it, host, fetched)
		}()
	}
}

// awaitHandoff runs when this worker gains a shard, before it claims
// there. It waits until (1) every other live worker has acknowledged the
// member list this worker computed its ownership from (their status nodes
// carry the view), so no worker still believes it owns the shard and is
// still claiming in it (bounded by twice the session timeout plus a margin);
// (2) no other worker holds a claim in the shard (the previous owner
// finishes or releases its in-flight items; a dead owner's claims vanish
// with its session), for as long as that takes: a claim lives only as long
// as its owner's session, and a fetch longer than any fixed bound must not
// overlap ours. If another worker was there, the shard is then recorded as
// handed over (handedOver), so the first request to each of its hosts waits
// one effective interval, Crawl-delay included (coolAfterHandoff). So a
// host's request spacing holds across ownership changes, not only inside one
// worker. If the member list changes meanwhile and the shard stays ours, the
// newest view counts; if the shard is lost, ctx is cancelled.
func (w *Worker) awaitHandoff(ctx context.Context, shard int, view string) error {
	deadline := time.Now().Add(2*w.opts.SessionTimeout + 2*time.Second)
	others := true // unknown until the member list is read: assume a handoff
	pause := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
			return nil
		}
	}
	for time.Now().Before(deadline) {
		ids, data, err := coord.Members(ctx, w.client, w.root)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			break
		}
		view := view
		if v := w.view.Load(); v != nil {
			view = *v // a newer member list that still gives us the shard
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
	if others {
		w.handedOver(shard, time.Now())
	}
	return nil
}

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

// memberView names a member list: a short hash of the sorted ids.
func memberView(ids []string) string {
	h := fnv.New64a()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// hostSlots counts the claims this worker holds per host that wait for or
// are in a fetch, so that a host never has more than
// per_host_max_in_flight + 1 of them here (one prefetched item waits on
// politeness while another is fetched; worker_concurrency slots are not
// spent on items that only wait for a busy host). A claim's slot is freed
// when its fetch ends: writing the records, the group fsync and the
// completion multi (about 5 ms, far longer than a fetch on a fast server)
// no longer keep the host's next item from being claimed; the host's ready
// window (frontier.ReadyWindow) bounds its claims in all. It also
// remembers which shards turned a busy host's items away, oldest first, so
// a freed slot wakes the shard that waited longest.
type hostSlots struct {
	mu      sync.Mutex
	held    map[string]int   // host -> claims held or reserved
	waiting map[string][]int // host -> shards that turned its items away
}

func newHostSlots() *hostSlots {
	return &hostSlots{held: map[string]int{}, waiting: map[string][]int{}}
}

// reserveFor returns shard's Take filter (coord.Reserve): an item is taken
// when its retry time has come and its host has a free claim slot, which
// the filter reserves at once, so a host's several shards cannot all pass
// at the same moment. coord gives the slot back if the item is not claimed
// after all; a claimed item's slot is freed by freeHostSlot when it is done.
// The filter stores what it admitted in *t (coord calls it for one
// candidate at a time and gives an acceptance back before the next, and a
// claim re-reads and re-admits an item that changed, so after Take returns
// a claim *t is that item's): the caller uses the decoded item and frees
// the very slot that was taken, without decoding the item or computing its
// key again.
func (w *Worker) reserveFor(shard int, t *taken) coord.Reserve {
	return func(_ string, data []byte) (func(), bool) {
		it, err := frontier.DecodeItem(data)
		if err != nil {
			*t = taken{err: err}
			return nil, true // claimed, then moved to failed with the reason
		}
		if !it.NotBefore.IsZero() && w.clusterNow().Before(it.NotBefore) { // ZooKeeper's clock, as retryAt
			return nil, false
		}
		if w.current().cfg.Paused {
			return nil, false // paused since waitRunnable looked: claim nothing
		}
		limit := w.current().cfg.PerHostMaxInFlight + 1
		host := w.layout.Key(it.URL)
		hs := w.slots
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if hs.held[host] >= limit {
			if !slices.Contains(hs.waiting[host], shard) {
				hs.waiting[host] = append(hs.waiting[host], shard)
			}
			return nil, false
		}
		hs.held[host]++
		*t = taken{item: it, host: host}
		return func() { w.freeHostSlot(host) }, true
	}
}

// taken is what a claim filter (reserveFor) admitted last: the decoded
// item and the key whose claim slot it reserved, or why the data did not
// decode (then no slot is reserved).
type taken struct {
	item frontier.Item
	host string
	err  error
}

// freeLocked frees one claim slot of host and pops the shard that has
// waited longest for it (or -1). hs.mu must be held.
func (w *Worker) freeLocked(host string) int {
	hs := w.slots
	if hs.held[host]--; hs.held[host] <= 0 {
		delete(hs.held, host)
	}
	q := hs.waiting[host]
	if len(q) == 0 {
		return -1
	}
	if len(q) == 1 {
		delete(hs.waiting, host)
	} else {
		hs.waiting[host] = q[1:]
	}
	return q[0]
}

// freeHostSlot frees the claim slot of a finished item and makes the shard that
// waited longest for one of that host look at its items again at once
// (instead of after coord's recheck interval).
func (w *Worker) freeHostSlot(host string) {
	w.slots.mu.Lock()
	wake := w.freeLocked(host)
	w.slots.mu.Unlock()
	if wake >= 0 {
		w.queue.Nudge(wake)
	}
}

// waitRunnable waits until the crawl is neither paused nor past max_pages.
func (w *Worker) waitRunnable(ctx context.Context) error {
	for {
		wake := w.wake.Wait()
		cfg := w.current().cfg
		if !cfg.Paused && !w.capped(cfg) && w.outputsWritable() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-time.After(time.Second): // max_pages is re-read from the member list
		}
	}
}

// acquireSlot waits for a fetch slot: fewer than worker_concurrency items
// in flight.
func (w *Worker) acquireSlot(ctx context.Context) error {
	for {
		wake := w.wake.Wait()
		n := w.counters.inFlight.Add(1)
		if n <= int64(w.current().cfg.WorkerConcurrency) {
			return nil
		}
		w.counters.inFlight.Add(-1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

func (w *Worker) releaseSlot() {
	w.counters.inFlight.Add(-1)
	w.wake.Fire()
}
