package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// The claimer: one claim loop per owned shard (claimLoop), each with
// takersFor takers that claim an item (taking one of the worker's
// claimCap claim slots as the claim filter admits it) and hand it to the
// pipeline (process). An item is claimed only while the
// crawl runs (not paused, under max_pages, outputs writable), when its
// not_before has come, its politeness key has a claim slot here (keySlots)
// and the worker holds fewer than claimCap claims. No request slot is
// taken here: the pipeline takes one of the request budget's slots only
// once the key's politeness admits the request (fetch.Politeness.Acquire),
// so items that wait for their key's turn cost a claim, not a request.

// claimLoop claims the items of one owned shard while ctx lives: while the
// crawl is not paused it takes the first claimable item in FIFO order whose
// not_before has passed and whose politeness key has a free claim slot
// (keySlots), within the worker's claim cap (claimCap), and starts
// processing it. A claim slot is taken when an item is admitted, so a Take
// waiting for an item holds none; each shard has at most takersFor(owned
// shards) Takes under way.
func (w *Worker) claimLoop(ctx, work context.Context, sess *coord.Session, shard int, inflight *sync.WaitGroup, gained assignedView) {
	if err := w.awaitHandoff(ctx, shard, gained); err != nil {
		return
	}
	var takers sync.WaitGroup
	for range takersFor(w.counters.shardsOwned.Load(), &w.current().cfg) {
		takers.Go(func() { w.takeLoop(ctx, work, sess, shard, inflight) })
	}
	takers.Wait()
}

// takersPerShard is the fewest claims one owned shard has under way at
// once under a per-host rate, takersPerShardUnrated without one. A claim
// is a ZooKeeper write (4-5 ms with forceSync on two busy cores); the
// shard's takers cap its pages/s at takers per claim round trip, while
// concurrent takers' claims are batched into one multi by coord. Under a
// rate a shard's keys need far less (5,000 hosts at 1/s over 64 shards:
// 78 claims/s a shard), and more takers only cost CPU: every freed key
// slot wakes them all (5,000 hosts x 8 at 0.05/s, one worker: 167.6 s of
// CPU at 16, 137.1 s at 4). Without a rate one key goes as fast as claims
// come: one worker owning all 64 shards had 4 takers each, and a one-host
// crawl (make demo-real with one worker) was capped near 800 pages/s, its
// items waiting 12-15 ms in the ready window for a taker (2 ms at 16, the
// two cores then the limit). A taker waiting on an empty shard costs a
// goroutine, no ZooKeeper request (the shard's takers share one cursor).
const (
	takersPerShard        = 4
	takersPerShardUnrated = 16
)

// takersPerWorker is the fewest Takes a worker keeps under way over all the
// shards it owns, what one worker of a 64-shard crawl has: with few shards
// each (many workers), each shard gets more takers, so a worker's claim
// pipeline (takers / claim round trip) does not shrink as workers are
// added. On 16 cores 12 workers at 20 takers each were capped near 1,000
// claims/s a worker by a 50 ms claim; the claims ride in group-committed
// multis, so more takers mean fuller multis, not more of them.
const takersPerWorker = 256

// takersFor returns the takers of each shard of a worker owning owned
// shards under cfg: takersPerShard (takersPerShardUnrated without a
// per-host rate), or more to reach takersPerWorker in all. A shard's claim
// loop starts them when it gains the shard: a later change of the rate
// applies from the shard's next gain (a session, a rebalance).
func takersFor(owned int64, cfg *config.Config) int {
	least := takersPerShard
	if cfg.PerHostRatePerS <= 0 {
		least = takersPerShardUnrated
	}
	if owned <= 0 {
		return least
	}
	return max(least, int((takersPerWorker+owned-1)/owned))
}

// claimRetryPause is how long a taker waits after a claim failed (other
// than by session expiry) before it tries again.
const claimRetryPause = time.Second

// takeLoop is one of a shard's takers: claim (the filter takes a claim
// slot), start processing, repeat while ctx lives.
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
			return // Take gave back the claim slot of an admission it did not claim
		}
		claimed := time.Now()
		w.metrics.claimed()
		w.counters.inFlight.Add(1)
		if t.err != nil {
			// Undecodable item: a dead letter, not a crash.
			w.failUndecodable(work, claim, t.err)
			w.releaseSlot()
			continue
		}
		it, key := t.item, t.key
		w.metrics.stage(stageClaim, claimed.Sub(t.admitted))
		if since := claim.ReadySince(); !since.IsZero() {
			w.metrics.stage(stageReady, t.admitted.Sub(since))
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer w.releaseSlot()
			fetched := sync.OnceFunc(func() { w.freeKeySlot(key) })
			defer fetched()
			w.process(work, claim, it, key, claimed, fetched)
		}()
	}
}

// claimSlotsPerKey is how many claims a worker may hold per politeness key
// for items waiting for or in a fetch (keySlots). Under a per-host rate,
// per_host_max_in_flight + 1: one prefetched item waits on politeness while
// another is fetched, so the claim's round trip (p99 about 350 ms on two
// busy cores) is not spent between two requests; from an interval of
// prefetchUntil on, per_host_max_in_flight: the next item is claimed after
// the fetch with time to spare, and a prefetched claim would only wait
// (a goroutine and an item held for the whole interval per key: at 5,000
// hosts and 0.05 requests/s, 2,479 such claims in a goroutine profile).
// Without a rate a key's fetches follow each other as fast as claims come,
// and a claim (a ZooKeeper write, 5-10 ms on two cores) outlasts a fast
// fetch (1 ms on loopback nginx) several times over, so
// 4 x per_host_max_in_flight claims keep its in-flight cap busy (make
// demo-real: about 850 pages/s at in-flight 8 with 9 slots). Never more
// than the key's ready window (frontier.ReadyWindow,
// 4 x per_host_max_in_flight + 1).
func claimSlotsPerKey(cfg *config.Config) int {
	switch {
	case cfg.PerHostRatePerS <= 0:
		return 4 * cfg.PerHostMaxInFlight
	case time.Duration(float64(time.Second)/cfg.PerHostRatePerS) >= prefetchUntil:
		return cfg.PerHostMaxInFlight
	default:
		return cfg.PerHostMaxInFlight + 1
	}
}

// prefetchUntil is the per-host interval (1 / per_host_rate_per_s) from
// which a key gets no prefetched claim (claimSlotsPerKey): ten times a
// claim's p99 on two busy cores.
const prefetchUntil = 4 * time.Second

// claimLead is how long before its politeness key's turn an item is
// claimed (fetch.Politeness.NextTurn): a key whose next request may not
// start for longer has its items turned down, and its shard nudged
// claimLead before the turn (keySlots.wakeIn). So under a slow rate (5,000
// hosts at 0.1/s) a host's next item is not claimed when its last fetch
// ends and held for the whole interval (a goroutine, the item and an
// ephemeral claim znode per host), yet is claimed with time to spare: 1 s
// is about three times a claim's p99 on two busy cores. Under a rate of
// one request a claimLead or faster it changes nothing.
const claimLead = time.Second

// keySlots counts the claims this worker holds per politeness key that
// wait for or are in a fetch, so that a key never has more than
// claimSlotsPerKey of them here (claims, within claimCap, are not spent on
// many items that only wait for a busy key). A claim's slot is freed
// when its fetch ends: writing the records, the fsync batch and the
// completion multi (about 5 ms, far longer than a fetch on a fast server)
// no longer keep the key's next item from being claimed; the key's ready
// window (frontier.ReadyWindow) bounds its claims in all. It also remembers which
// shards turned a busy key's items away, oldest first, and which items,
// so a freed slot (free) or the key's coming turn (wakeIn) makes coord
// judge just those items again (coord.Queue.Nudge with names; coord
// parks the items it turned down until then). Memory: one map entry per
// key with a claim held or a shard waiting, the names of its turned-down
// items (at most maxWaitingNames a shard) and one timer per key waiting
// for its turn. Safe for concurrent use.
type keySlots struct {
	mu      sync.Mutex
	held    map[string]int         // key -> claims held or reserved
	waiting map[string][]keyWaiter // key -> shards that turned its items away
	timers  map[string]*time.Timer // key -> its wake before its turn (wakeIn)
}

// keyWaiter is a shard that turned a busy key's items away, and those
// items (znode names, oldest first; nil: too many, judge the whole shard).
type keyWaiter struct {
	shard int
	names []string
}

// maxWaitingNames bounds the names keySlots keeps per key and shard: a
// key's ready window (frontier.ReadyWindow) is 4 x per_host_max_in_flight
// + 1 items; past the bound the shard is woken whole (coord.Queue.Nudge
// without names).
const maxWaitingNames = 64

func newKeySlots() *keySlots {
	return &keySlots{held: map[string]int{}, waiting: map[string][]keyWaiter{}, timers: map[string]*time.Timer{}}
}

// wait notes that shard turned key's item name away, or all its items
// when name is "" (no znode is named so). ks.mu must be held.
func (ks *keySlots) wait(key string, shard int, name string) {
	ws := ks.waiting[key]
	i := slices.IndexFunc(ws, func(w keyWaiter) bool { return w.shard == shard })
	switch {
	case i < 0 && name == "":
		ks.waiting[key] = append(ws, keyWaiter{shard: shard})
	case i < 0:
		ks.waiting[key] = append(ws, keyWaiter{shard: shard, names: []string{name}})
	case name == "":
		ws[i].names = nil
	case ws[i].names == nil || slices.Contains(ws[i].names, name):
	case len(ws[i].names) < maxWaitingNames:
		ws[i].names = append(ws[i].names, name)
	default:
		ws[i].names = nil // too many: wake the whole shard
	}
}

// wakeIn notes that shard turned key's item name away until key's turn
// comes near, and makes sure key has a timer that, after d, nudges the
// shards then waiting for key with their items' names (forgetting them). A
// key has at most one timer: one already set stays (its items judged too
// early are turned down again and set a new one). Memory: one timer per
// key waiting for its turn.
func (ks *keySlots) wakeIn(key string, shard int, name string, d time.Duration, nudge func(shard int, names ...string)) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.wait(key, shard, name)
	ks.arm(key, d, nudge)
}

// arm sets key's timer (wakeIn) unless one is set. ks.mu must be held.
func (ks *keySlots) arm(key string, d time.Duration, nudge func(shard int, names ...string)) {
	if ks.timers[key] != nil {
		return
	}
	ks.timers[key] = time.AfterFunc(d, func() {
		ks.mu.Lock()
		ws := ks.waiting[key]
		delete(ks.waiting, key)
		delete(ks.timers, key)
		ks.mu.Unlock()
		for _, w := range ws {
			nudge(w.shard, w.names...)
		}
	})
}

// reserve takes one of key's limit claim slots for item name of shard and
// reports true; with none free it notes that shard's item waits for key
// and reports false.
func (ks *keySlots) reserve(key string, limit, shard int, name string) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.held[key] >= limit {
		ks.wait(key, shard, name)
		return false
	}
	ks.held[key]++
	return true
}

// free gives one claim slot of key back and returns the shard that has
// waited longest for one and the names of its items turned away (nil:
// all), forgetting them, or shard -1.
func (ks *keySlots) free(key string) (shard int, names []string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.held[key]--; ks.held[key] <= 0 {
		delete(ks.held, key)
	}
	q := ks.waiting[key]
	if len(q) == 0 {
		return -1, nil
	}
	if len(q) == 1 {
		delete(ks.waiting, key)
	} else {
		ks.waiting[key] = q[1:]
	}
	return q[0].shard, q[0].names
}

// later puts shard's turned-away names back as waiting for key and arms
// key's timer to nudge them after d (freeKeySlot, when key's turn is
// still far).
func (ks *keySlots) later(key string, shard int, names []string, d time.Duration, nudge func(shard int, names ...string)) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if names == nil {
		ks.wait(key, shard, "") // all of the shard's items
	}
	for _, n := range names {
		ks.wait(key, shard, n)
	}
	ks.arm(key, d, nudge)
}

// reserveFor returns shard's Take filter (Queue.Take's reserve): an item is taken
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
//
// An item whose key's next turn is more than claimLead away is turned
// down too, and named to coord a lead before that turn (keySlots.wakeIn),
// so no claim waits out a politeness interval.
//
// An item it turns down keeps its key, retry time and lead in the item's
// note (a candidate), so each version of an item is decoded to be judged
// once, however often it is judged again (coord's recheck, a Nudge without
// names): on the wide web (5,000 hosts at 0.1/s, one worker) decoding
// again had been 18% of the worker's CPU. An admitted item is decoded in
// full.
func (w *Worker) reserveFor(shard int, t *taken) func(name string, data []byte, note *atomic.Value) (release func(), ok bool) {
	return func(name string, data []byte, note *atomic.Value) (func(), bool) {
		c, known := note.Load().(candidate)
		var it frontier.Item
		if !known {
			var err error
			if it, err = frontier.DecodeItem(data); err != nil {
				if !w.tryClaimSlot(shard) {
					return nil, false
				}
				*t = taken{err: err}
				return w.releaseClaimSlot, true // claimed, then moved to failed with the reason
			}
			c = candidate{key: w.layout.Key(it.URL), notBefore: notBeforeNanos(it.NotBefore)}
		}
		if c.notBefore != 0 && w.clusterNow().UnixNano() < c.notBefore { // ZooKeeper's clock, as retryAt
			note.Store(c)
			return nil, false
		}
		cfg := &w.current().cfg // per candidate: no copy of the Config
		if cfg.Paused {
			return nil, false // paused since waitRunnable looked: claim nothing
		}
		// A key whose turn is far has its item claimed a lead before it,
		// not now, so no claim waits out the interval. A lead noted at an
		// earlier look (a recheck) is believed until it begins.
		lead := time.Until(time.Unix(0, c.leadFrom)) // < 0 when none is noted
		if lead <= 0 {
			if wait := w.polite.NextTurn(c.key); wait > claimLead {
				lead = wait - claimLead
				c.leadFrom = time.Now().Add(lead).UnixNano()
				note.Store(c)
			}
		}
		if lead > 0 {
			w.slots.wakeIn(c.key, shard, name, lead, w.front.Queue().Nudge)
			return nil, false
		}
		limit := keyClaimLimit(cfg, w.claimSlots.Load(), w.current().claimCap)
		if !w.slots.reserve(c.key, limit, shard, name) {
			if limit < claimSlotsPerKey(cfg) {
				w.capWait.add(shard) // a freed claim slot may lift the limit
			}
			note.Store(c)
			return nil, false
		}
		if !w.tryClaimSlot(shard) {
			w.freeKeySlot(c.key)
			note.Store(c)
			return nil, false
		}
		if known {
			var err error
			if it, err = frontier.DecodeItem(data); err != nil { // decoded before: cannot fail
				w.freeKeySlot(c.key)
				w.releaseClaimSlot()
				return nil, false
			}
		}
		*t = taken{item: it, key: c.key, admitted: time.Now()}
		return func() { w.freeKeySlot(c.key); w.releaseClaimSlot() }, true
	}
}

// taken is what a claim filter (reserveFor) admitted last: the decoded
// item and the politeness key whose claim slot it reserved, or why the
// data did not decode (then no slot is reserved), and when it was admitted
// (the claim multi starts then).
type taken struct {
	item     frontier.Item
	key      string
	err      error
	admitted time.Time
}

// freeKeySlot frees the claim slot of an item whose fetch is over and makes
// the shard that waited longest for one of that key look at its items
// again (instead of after coord's recheck interval), naming the items it
// turned away: at once, or when the key's next turn is further than
// claimLead, claimLead before it (the filter would only turn them down
// again before then).
func (w *Worker) freeKeySlot(key string) {
	if wake, names := w.slots.free(key); wake >= 0 {
		if d := w.polite.NextTurn(key); d > claimLead {
			w.slots.later(key, wake, names, d-claimLead, w.front.Queue().Nudge)
			return
		}
		w.front.Queue().Nudge(wake, names...)
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
		if !cfg.Paused && !w.counters.capped(cfg) && w.outputsWritable() {
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

// firstClaimsFrom returns how many claims a worker with claim cap
// claimCap may hold before it admits only items of keys holding no claim
// here: three quarters of the cap. A key's first claim is what keeps its
// politeness turns; a second (prefetched) claim only saves a claim round
// trip between two of its requests. So with more keys than claimCap /
// claimSlotsPerKey (5,000 hosts at a rate take 10,000 claims at two each)
// the cap is not spent on second claims while a key holds none and misses
// its turn, a whole interval lost (docs/design.md, "In-flight budget").
func firstClaimsFrom(claimCap int) int { return claimCap - claimCap/4 }

// keyClaimLimit returns how many claims one key may hold in a worker
// under cfg that holds claims of its claimCap: claimSlotsPerKey, or 1
// (first claims only) from firstClaimsFrom(claimCap) on.
func keyClaimLimit(cfg *config.Config, claims int64, claimCap int) int {
	if claims >= int64(firstClaimsFrom(claimCap)) {
		return 1
	}
	return claimSlotsPerKey(cfg)
}

// tryClaimSlot takes one of the worker's claimCap claim slots (claims held,
// from their admission by the claim filter to the end of their
// processing) if one is free, and reports whether it did. A slot is taken
// at admission, not before a Take: a taker waiting in Take for its shard's
// next item holds nothing, so takers of empty shards can never hold every
// slot while another shard's items wait (with claimCap under the takers'
// count, a small max_in_flight or a large max_body_bytes, that stalled a
// crawl for ever). A shard turned down for want of a slot is nudged when
// one frees (releaseClaimSlot).
func (w *Worker) tryClaimSlot(shard int) bool {
	if w.claimSlots.Add(1) <= int64(w.current().claimCap) {
		return true
	}
	w.claimSlots.Add(-1)
	w.capWait.add(shard)
	return false
}

// releaseClaimSlot gives a claim slot back (tryClaimSlot), wakes what waits
// for one and makes the shards turned down for want of one look at their
// items again at once.
func (w *Worker) releaseClaimSlot() {
	w.claimSlots.Add(-1)
	w.wake.Fire()
	for _, shard := range w.capWait.take() {
		w.front.Queue().Nudge(shard)
	}
}

// shardSet is a set of shards, safe for concurrent use; the zero value is
// empty. Bound: one entry per shard.
type shardSet struct {
	mu     sync.Mutex
	shards map[int]struct{}
}

// add puts shard into the set.
func (s *shardSet) add(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shards == nil {
		s.shards = map[int]struct{}{}
	}
	s.shards[shard] = struct{}{}
}

// take empties the set and returns what it held (nil when empty).
func (s *shardSet) take() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.shards) == 0 {
		return nil
	}
	out := make([]int, 0, len(s.shards))
	for shard := range s.shards {
		out = append(out, shard)
	}
	clear(s.shards)
	return out
}

// releaseSlot ends a claimed item's processing: it is no longer counted
// in flight (the last one fires counters.idle) and its claim slot is given
// back.
func (w *Worker) releaseSlot() {
	if w.counters.inFlight.Add(-1) == 0 {
		w.counters.idle.Fire()
	}
	w.releaseClaimSlot()
}
