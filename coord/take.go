package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// defaultRecheck is how long Take waits before looking again at items its
// reserve turned down, when nothing else wakes it.
const defaultRecheck = time.Second

// cursor caches one shard's child list for Take, so that a Take does not
// re-list the shard (up to ~10,000 names) for every item: the list is read
// again only when exhausted and a child event, a reconnect or the recheck
// timer says there may be something new. New items have higher sequence
// numbers than all cached ones, so the cache stays a FIFO prefix.
// Concurrent Takes on one shard share the cursor: each gets the next
// candidate name and claims it in parallel with the others; only re-listing
// and waiting are shared.
type cursor struct {
	mu       sync.Mutex
	listing  chan struct{} // non-nil while one Take re-lists; closed when done
	listed   bool
	names    []string
	next     int
	claimed  map[string]bool // claims present when the shard was listed
	watch    <-chan zk.Event
	epoch    <-chan struct{} // closed at the next reconnect after listing
	fired    bool            // the shard may have changed since listing
	rejected bool            // accept turned an item down since listing
	kick     chan struct{}   // closed by Nudge to wake a waiting Take
	// parked holds the names reserve turned down, which later scans (a
	// re-list after a child event included) skip until a Nudge names them
	// (they move to retry), a Nudge without names, or the recheck interval
	// since the first of them was parked (parkedSince): on a web of
	// thousands of rated hosts most ready items wait for their host's
	// turn, and a shard of 400 such items changes at every page, so
	// judging each again at every change was most of a worker's claim
	// loop. Bounded by the shard's ready items.
	parked      map[string]bool
	parkedSince time.Time
	// retry holds the names a Nudge named, handed out before names[next:]
	// (at most maxRetry).
	retry []string
	// items caches the data of items read but not claimed (turned down by
	// accept), so re-scanning a shard whose items wait (a busy host, a
	// future not_before) costs no ZooKeeper read per item. The claim multi
	// checks the item's version, so a stale entry is caught and re-read.
	items map[string]cachedItem
}

// cachedItem is an item's data and znode version as last read, since when
// it has held that data (local clock; zero when unknown), and the note a
// Take filter keeps beside this data (Take's reserve): every new cachedItem
// gets an empty one (newCachedItem), so a note never outlives the version
// it was made from.
type cachedItem struct {
	data    []byte
	version int32
	since   time.Time
	note    *atomic.Value
}

// newCachedItem returns data at version, held since since, with an empty
// note.
func newCachedItem(data []byte, version int32, since time.Time) cachedItem {
	return cachedItem{data: data, version: version, since: since, note: new(atomic.Value)}
}

// cache stores (ok) or drops (!ok) an item's cached data.
func (q *Queue) cache(shard int, name string, it cachedItem, ok bool) {
	cur := q.cursors[shard]
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if !ok {
		delete(cur.items, name)
		return
	}
	if cur.items == nil {
		cur.items = make(map[string]cachedItem)
	}
	cur.items[name] = it
}

// Take claims the first claimable item of shard, in FIFO order, that
// reserve (if not nil) admits, blocking until there is one: the one way to
// consume the queue. It watches the shard's children instead of polling: it
// wakes on a child event (or a reconnect), and re-lists only when its
// cached list is exhausted. Items claimed by others, gone, or turned down
// are skipped. Turned-down items are parked: a re-list (a child event)
// skips them until a Nudge names them or comes without names (at once),
// or a recheck interval (a second) after the first of them was parked.
//
// reserve is the caller's admission policy (a per-host slot policy, say),
// called with each candidate item's name and data: ok admits the item, and
// the policy may hold a resource of the caller's for it at once. note is
// the candidate's scratch slot for the policy (never nil): what it Stores
// there (one concrete type per Queue, as atomic.Value requires) it finds
// again at its next look at the same item, for as long as this version of
// the item's data waits in the shard; a rewritten item (a new version), a
// claimed one or one gone starts an empty note. So a policy that decodes
// the data to judge it (a politeness key, a retry time) decodes each
// version once, however often a busy key turns the item down. A note costs
// what is stored in it, kept at most as long as Take keeps the item's data
// (one per item waiting in the shard). release,
// if not nil, is called when the admitted item is not claimed after all
// (claimed by another, gone, changed meanwhile, or an error), so a
// reservation cannot leak; when Take returns a Claim, the reservation made
// for its item belongs to the caller. reserve must be quick and must not
// call the Queue. After the caller's own state changed so that items it
// turned down may be admitted now (a slot was freed), it calls Nudge.
//
// Concurrent Takes on one shard (for example several takers of one worker)
// claim different items in parallel, and their claim multis share group
// commits.
//
// Errors: ErrSessionExpired when sess ends; ctx errors; ErrInvalidArgument;
// ErrNotInitialized; other ZooKeeper errors after retries.
func (q *Queue) Take(ctx context.Context, sess *Session, shard int, reserve func(name string, data []byte, note *atomic.Value) (release func(), ok bool)) (*Claim, error) {
	if err := q.checkShard("Queue.Take", shard); err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, fmt.Errorf("coord: Queue.Take: nil session: %w", ErrInvalidArgument)
	}
	var held func() // release of the last admission not yet claimed
	giveBack := func() {
		if held != nil {
			held()
			held = nil
		}
	}
	defer giveBack()
	var accept func(string, []byte, *atomic.Value) bool
	if reserve != nil {
		accept = func(name string, data []byte, note *atomic.Value) bool {
			giveBack() // an earlier admission (e.g. before a re-read) was not claimed
			release, ok := reserve(name, data, note)
			if ok {
				held = release
			}
			return ok
		}
	}
	cur := q.cursors[shard]
	for {
		name, err := q.nextName(ctx, sess, shard, cur)
		if err != nil {
			return nil, err
		}
		cl, err := q.claim(ctx, sess, shard, name, accept)
		if err == nil {
			held = nil // the caller owns the reservation now
			return cl, nil
		}
		giveBack()
		switch {
		case errors.Is(err, ErrGone):
		case errors.Is(err, ErrClaimed), errors.Is(err, errRejected):
			cur.mu.Lock()
			cur.rejected = true
			if errors.Is(err, errRejected) {
				cur.park(name)
			}
			cur.mu.Unlock()
		default:
			return nil, err
		}
	}
}

// nextName hands out the cursor's next candidate, re-listing the shard or
// waiting for a change when the cached list is exhausted.
func (q *Queue) nextName(ctx context.Context, sess *Session, shard int, cur *cursor) (string, error) {
	for {
		if !sess.alive() {
			return "", sess.expired("coord: Queue.Take")
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		cur.mu.Lock()
		cur.poll()
		if len(cur.retry) > 0 {
			name := cur.retry[0]
			cur.retry = cur.retry[1:]
			cur.mu.Unlock()
			return name, nil
		}
		if cur.next < len(cur.names) {
			name := cur.names[cur.next]
			cur.next++
			if cur.parked[name] {
				cur.mu.Unlock()
				continue // turned down: judged again once unparked
			}
			skip := cur.claimed[name]
			if skip {
				// Claimed by someone when listed: it may come back (a
				// Release or Retry changes no child), so look again after
				// the recheck interval.
				cur.rejected = true
			}
			cur.mu.Unlock()
			if !skip {
				return name, nil
			}
			continue
		}
		if ch := cur.listing; ch != nil {
			// Another Take is re-listing: wait for its result.
			cur.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return "", ctx.Err()
			case <-sess.done():
				return "", sess.expired("coord: Queue.Take")
			}
			continue
		}
		if cur.listed && !cur.fired {
			// Exhausted and nothing new yet: wait for a change.
			watch, epoch, rejected := cur.watch, cur.epoch, cur.rejected
			if cur.kick == nil {
				cur.kick = make(chan struct{})
			}
			kick := cur.kick
			cur.mu.Unlock()
			woke, err := q.waitChange(ctx, sess, watch, epoch, kick, rejected)
			if err != nil {
				return "", err
			}
			cur.mu.Lock()
			if woke == wokeRecheck {
				cur.unparkAll()
			}
			if woke != wokeKick && cur.watch == watch && cur.epoch == epoch {
				cur.fired = true // a Nudge set fired itself, or filled retry
			}
			cur.mu.Unlock()
			continue
		}
		ch := make(chan struct{})
		cur.listing = ch
		cur.mu.Unlock()
		err := q.list(ctx, shard, cur)
		cur.mu.Lock()
		cur.listing = nil
		close(ch)
		cur.mu.Unlock()
		if err != nil {
			return "", err
		}
	}
}

// Nudge tells Take that items of shard its reserve turned down may be
// admitted now (the caller's own state changed, e.g. a host slot was
// freed), instead of after the recheck interval. Without names a Take
// re-lists the shard and judges every item again at once. With names it
// judges just those items at once, in the order given, without re-listing
// or judging the shard's other turned-down items: each named item is
// judged once more even if it was not turned down, so a Nudge that comes
// while the item is being judged is not lost; a name no longer in the
// shard costs a read at most. Cheap and non-blocking: O(len(names)); an
// invalid shard is ignored.
func (q *Queue) Nudge(shard int, names ...string) {
	if len(names) == 0 {
		q.wake(shard, false)
		return
	}
	if shard < 0 || shard >= len(q.cursors) {
		return
	}
	cur := q.cursors[shard]
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if len(cur.retry)+len(names) > maxRetry {
		// Named items no Take has looked at pile up (a shard no Take
		// serves any more): judge them all at the next look instead.
		cur.retry = nil
		cur.unparkAll()
		cur.fired = true
	} else {
		for _, name := range names {
			delete(cur.parked, name)
			cur.retry = append(cur.retry, name)
		}
	}
	if cur.kick != nil {
		close(cur.kick)
		cur.kick = nil
	}
}

// maxRetry bounds a cursor's retry list: about 200 KB of names.
const maxRetry = 4096

// park notes that reserve turned name down (Take skips it until it is
// unparked). cur.mu must be held.
func (cur *cursor) park(name string) {
	if cur.parked == nil {
		cur.parked = make(map[string]bool)
	}
	if len(cur.parked) == 0 {
		cur.parkedSince = time.Now()
	}
	cur.parked[name] = true
}

// unparkAll makes every parked item a candidate again. cur.mu must be held.
func (cur *cursor) unparkAll() {
	clear(cur.parked)
	cur.parkedSince = time.Time{}
}

// wake makes Take look at shard's items again at once: always (force, after
// this process released or re-queued an item: no child event announces
// that), or only if it turned items down since it last listed.
func (q *Queue) wake(shard int, force bool) {
	if shard < 0 || shard >= len(q.cursors) {
		return
	}
	cur := q.cursors[shard]
	cur.mu.Lock()
	if force || cur.rejected {
		cur.fired = true
		cur.unparkAll()
		if cur.kick != nil {
			close(cur.kick)
			cur.kick = nil
		}
	}
	cur.mu.Unlock()
}

// What woke a waitChange.
const (
	wokeChange  = iota // a child event or a reconnect
	wokeKick           // a Nudge
	wokeRecheck        // the recheck interval, items having been turned down
)

// waitChange blocks until the shard may have changed: a child event, a
// reconnect, a Nudge, or (when items were rejected) the recheck interval,
// and says which.
func (q *Queue) waitChange(ctx context.Context, sess *Session, watch <-chan zk.Event, epoch, kick <-chan struct{}, rejected bool) (int, error) {
	var timer <-chan time.Time
	if rejected {
		t := time.NewTimer(q.recheck)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-watch:
	case <-epoch:
	case <-kick:
		return wokeKick, nil
	case <-timer:
		return wokeRecheck, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-sess.done():
		return 0, sess.expired("coord: Queue.Take")
	}
	return wokeChange, nil
}

// poll notes, without blocking, whether the watch or a reconnect fired.
// cur.mu must be held.
func (cur *cursor) poll() {
	if cur.watch != nil {
		select {
		case <-cur.watch:
			cur.fired, cur.watch = true, nil
		default:
		}
	}
	if cur.epoch != nil {
		select {
		case <-cur.epoch:
			cur.fired, cur.epoch = true, nil
		default:
		}
	}
}

// list re-reads a shard's items (with a child watch) and its claims, both
// requests in flight at once, and installs them in the cursor.
func (q *Queue) list(ctx context.Context, shard int, cur *cursor) error {
	epoch := q.c.reconnected()
	var names, claims []string
	var ev <-chan zk.Event
	var cerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		claims, cerr = q.c.readChildren(ctx, q.shardPath(claimsDir, shard))
	}()
	// One armed child watch per shard: a watch that has not fired yet still
	// stands (go-zookeeper keeps each channel until it fires), so re-list
	// without setting another.
	cur.mu.Lock()
	armed := cur.watch
	cur.mu.Unlock()
	if armed != nil && fired(armed) {
		armed = nil
	}
	err := q.c.retry(ctx, func(ctx context.Context) error {
		var err error
		if armed != nil {
			names, _, err = q.c.children(ctx, q.shardPath(queueDir, shard))
			ev = armed
			return err
		}
		names, _, ev, err = q.c.childrenW(ctx, q.shardPath(queueDir, shard))
		return err
	})
	wg.Wait()
	if err == nil {
		err = cerr
	}
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("coord: Queue.Take %s shard %s: %w", q.name, ShardName(shard), ErrNotInitialized)
	}
	if err != nil {
		return err
	}
	sortFIFO(names)
	claimed := make(map[string]bool, len(claims))
	for _, c := range claims {
		claimed[c] = true
	}
	cur.mu.Lock()
	if len(cur.items) > 0 || len(cur.parked) > 0 {
		present := make(map[string]bool, len(names))
		for _, n := range names {
			present[n] = true
		}
		for n := range cur.items {
			if !present[n] {
				delete(cur.items, n) // finished by someone
			}
		}
		for n := range cur.parked {
			if !present[n] {
				delete(cur.parked, n)
			}
		}
		if len(cur.parked) == 0 {
			cur.parkedSince = time.Time{}
		}
	}
	if !cur.parkedSince.IsZero() && time.Since(cur.parkedSince) >= q.recheck {
		// A busy shard re-lists at every child event and so never waits
		// out the recheck timer: judge parked items again at least once
		// per recheck interval all the same (an item whose retry time has
		// come, a Nudge lost).
		cur.unparkAll()
	}
	cur.claimed = claimed
	cur.names, cur.next, cur.watch, cur.epoch = names, 0, ev, epoch
	// Parked items keep the recheck timer armed.
	cur.listed, cur.fired, cur.rejected = true, false, len(cur.parked) > 0
	cur.mu.Unlock()
	return nil
}
