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
// (rendezvous hashing over shard groups: a politeness key's shards stay
// together, docs/design.md "Shard ownership"). In-flight items run under a
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
		own.managers.start(g, func(ctx context.Context) { w.manageGroup(ctx, own.sess, g) })
	}
	w.log.Info("shard ownership", "members", len(ids), "owned", len(shards))
}

// ownedBy returns the shard groups this worker owns among the members ids
// (rendezvous hashing over groups, so a politeness key's shards stay
// together) and their shards.
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
// not_before has passed and whose politeness key has a free claim slot
// (keySlots), waits for a fetch slot (worker_concurrency) and starts
// processing it. No slot is held while waiting for items, so an empty shard
// never starves a busy one; each shard holds at most takersPerShard claims
// that wait for a slot.
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
// taker per shard caps a single-key crawl at one page per claim round trip,
// while concurrent takers' claims are batched into one multi by coord.
const takersPerShard = 4

// claimRetryPause is how long a taker waits after a claim failed (other
// than by session expiry) before it tries again.
const claimRetryPause = time.Second

// takeLoop is one of a shard's takers: claim, wait for a fetch slot, start
// processing, repeat while ctx lives.
func (w *Worker) takeLoop(ctx, work context.Context, sess *coord.Session, shard int, inflight *sync.WaitGroup) {
	notExpired := func(err error) bool { return !errors.Is(err, coord.ErrSessionExpired) }
	for ctx.Err() == nil {
		var t taken
		var claim *coord.Claim
		// Wait until claiming is allowed, then claim; a failed claim is
		// tried again after claimRetryPause, until the session expires.
		err := retry(ctx, retryPolicy{pause: every(claimRetryPause)}, notExpired,
			func(_ int, err error) {
				w.log.Warn("claim failed; retrying", "shard", coord.ShardName(shard), "error", err)
			},
			func(ctx context.Context) (err error) {
				if err := w.waitRunnable(ctx); err != nil {
					return err
				}
				t = taken{}
				claim, err = w.front.Queue().Take(ctx, sess, shard, w.reserveFor(shard, &t))
				return err
			})
		if err != nil {
			return
		}
		w.metrics.claimed()
		if t.err != nil {
			// Undecodable item: a dead letter, not a crash.
			w.failUndecodable(work, claim, t.err)
			continue
		}
		it, key := t.item, t.key
		if err := w.acquireSlot(ctx); err != nil {
			w.freeKeySlot(key)
			w.abandon(work, claim, it, err)
			return
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer w.releaseSlot()
			fetched := sync.OnceFunc(func() { w.freeKeySlot(key) })
			defer fetched()
			w.process(work, claim, it, key, fetched)
		}()
	}
}

// awaitHandoff runs when this worker gains a shard, before it claims
// there. It waits until (1) every other live worker has acknowledged the
// member list this worker computed its ownership from (their status nodes
// carry the view), so no worker still believes it owns the shard and is
// still claiming in it (bounded by handoffAckWait);
// (2) no other worker holds a claim in the shard (the previous owner
// finishes or releases its in-flight items; a dead owner's claims vanish
// with its session), for as long as that takes: a claim lives only as long
// as its owner's session, and a fetch longer than any fixed bound must not
// overlap ours. If another worker was there, the shard is then recorded as
// handed over (handedOver), so the first request to each of its politeness
// keys waits one effective interval, Crawl-delay included
// (coolAfterHandoff). So a key's request spacing holds across ownership
// changes, not only inside one worker. If the member list changes meanwhile and the shard stays ours, the
// newest view counts; if the shard is lost, ctx is cancelled.
func (w *Worker) awaitHandoff(ctx context.Context, shard int, view string) error {
	deadline := time.Now().Add(handoffAckWait(w.opts.SessionTimeout))
	others := true // unknown until the member list is read: assume a handoff
	pause := func() error {
		if !sleepCtx(ctx, handoffPoll) {
			return ctx.Err()
		}
		return nil
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

// handoffAckWait bounds how long a worker gaining a shard waits for every
// other live worker to acknowledge its member list: two session timeouts
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

// memberView names a member list: a short hash of the sorted ids.
func memberView(ids []string) string {
	h := fnv.New64a()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// keySlots counts the claims this worker holds per politeness key that
// wait for or are in a fetch, so that a key never has more than
// per_host_max_in_flight + 1 of them here (one prefetched item waits on
// politeness while another is fetched; worker_concurrency slots are not
// spent on items that only wait for a busy key). A claim's slot is freed
// when its fetch ends: writing the records, the fsync batch and the
// completion multi (about 5 ms, far longer than a fetch on a fast server)
// no longer keep the key's next item from being claimed; the key's ready
// window (ReadyWindow) bounds its claims in all. It also remembers which
// shards turned a busy key's items away, oldest first, so a freed slot
// wakes the shard that waited longest. Memory: one map entry per key with
// a claim held or a shard waiting. Safe for concurrent use.
type keySlots struct {
	mu      sync.Mutex
	held    map[string]int   // key -> claims held or reserved
	waiting map[string][]int // key -> shards that turned its items away
}

func newKeySlots() *keySlots {
	return &keySlots{held: map[string]int{}, waiting: map[string][]int{}}
}

// reserve takes one of key's limit claim slots for an item of shard and
// reports true; with none free it notes that shard waits for key and
// reports false.
func (ks *keySlots) reserve(key string, limit, shard int) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.held[key] >= limit {
		if !slices.Contains(ks.waiting[key], shard) {
			ks.waiting[key] = append(ks.waiting[key], shard)
		}
		return false
	}
	ks.held[key]++
	return true
}

// free gives one claim slot of key back and returns the shard that has
// waited longest for one (forgetting it), or -1.
func (ks *keySlots) free(key string) int {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.held[key]--; ks.held[key] <= 0 {
		delete(ks.held, key)
	}
	q := ks.waiting[key]
	if len(q) == 0 {
		return -1
	}
	if len(q) == 1 {
		delete(ks.waiting, key)
	} else {
		ks.waiting[key] = q[1:]
	}
	return q[0]
}

// reserveFor returns shard's Take filter (coord.Reserve): an item is taken
// when its retry time has come and its politeness key has a free claim
// slot, which the filter reserves at once (keySlots.reserve), so a key's
// several shards cannot all pass at the same moment. coord gives the slot
// back if the item is not claimed after all; a claimed item's slot is
// freed by freeKeySlot when its fetch is over. The filter stores what it
// admitted in *t (coord calls it for one candidate at a time and gives an
// acceptance back before the next, and a claim re-reads and re-admits an
// item that changed, so after Take returns a claim *t is that item's): the
// caller uses the decoded item and frees the very slot that was taken,
// without decoding the item or computing its key again.
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
		cfg := w.current().cfg
		if cfg.Paused {
			return nil, false // paused since waitRunnable looked: claim nothing
		}
		key := w.layout.Key(it.URL)
		if !w.slots.reserve(key, cfg.PerHostMaxInFlight+1, shard) {
			return nil, false
		}
		*t = taken{item: it, key: key}
		return func() { w.freeKeySlot(key) }, true
	}
}

// taken is what a claim filter (reserveFor) admitted last: the decoded
// item and the politeness key whose claim slot it reserved, or why the
// data did not decode (then no slot is reserved).
type taken struct {
	item frontier.Item
	key  string
	err  error
}

// freeKeySlot frees the claim slot of an item whose fetch is over and makes
// the shard that waited longest for one of that key look at its items
// again at once (instead of after coord's recheck interval).
func (w *Worker) freeKeySlot(key string) {
	if wake := w.slots.free(key); wake >= 0 {
		w.front.Queue().Nudge(wake)
	}
}

// capRecheck is how often waitRunnable looks at max_pages again: the
// crawl-wide count changes with the heartbeat, which fires no wake.
const capRecheck = time.Second

// waitRunnable waits until the crawl is neither paused nor past max_pages
// and the outputs take writes.
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
		case <-time.After(capRecheck):
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
