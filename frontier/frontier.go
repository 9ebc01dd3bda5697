package frontier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/seenset"
	"golang.org/x/sync/errgroup"
)

// DefaultSeenCacheSize is the number of fingerprints a Frontier remembers
// locally as already posted (a few dozen bytes each).
const DefaultSeenCacheSize = 200_000

// postTimeout bounds one group-commit flush of posts.
const postTimeout = time.Minute

// Frontier hands crawl items to the shard group that owns their host
// (docs/design.md, "Frontier layout 2"): Enqueue posts their compact records
// into the group's inbox, and the group's owner deduplicates them against
// the group's seen-set and queues them exactly once. Posts of concurrent
// Enqueue calls are collected while one flush is in flight and then written
// as one post per group (group commit), so a busy worker pays far less than
// one ZooKeeper create per page and target group. A bounded local LRU of
// fingerprints already posted saves posting links seen again. Safe for
// concurrent use.
type Frontier struct {
	q      *coord.Queue
	b      *Backlog
	layout Layout
	seen   *lru.Cache[uint64, struct{}]
	known  *seenset.Set // loaded by LoadKnown (~8 B a key); read-only after

	local LocalOwner // set by SetLocalOwner; nil: every record is posted
	// config returns the config in force (set by NewOwner; nil: Pending
	// does not check the schedule summaries' policy).
	config func() config.Config

	mu       sync.Mutex
	pending  map[int][][]byte
	waiters  []chan error
	flushing bool
}

// New returns a Frontier over q whose groups follow layout (layout.Shards
// must equal q.Shards()), with a local cache of cacheSize fingerprints
// (<= 0: DefaultSeenCacheSize).
func New(q *coord.Queue, layout Layout, cacheSize int) *Frontier {
	layout = layout.withDefaults()
	if cacheSize <= 0 {
		cacheSize = DefaultSeenCacheSize
	}
	c, _ := lru.New[uint64, struct{}](cacheSize) // error only for size <= 0
	b := NewBacklog(q, layout.Groups(), RecordKey)
	b.folds = RecordFolds
	return &Frontier{q: q, b: b, layout: layout, seen: c}
}

// Queue returns the ready queue.
func (f *Frontier) Queue() *coord.Queue { return f.q }

// Backlog returns the groups' compact store.
func (f *Frontier) Backlog() *Backlog { return f.b }

// EnqueueResult counts what one Enqueue call did with its items.
type EnqueueResult struct {
	// Posted counts items handed to their group's owner; it drops those
	// the group has already seen (duplicates) or a quota refuses.
	Posted int
	// Duplicates counts items known locally to be posted already, or
	// repeated within the call.
	Duplicates int
}

// Enqueue hands items whose URL is already normalized (see Normalize) to
// their shard groups (Layout.Group), each to be queued at most once across
// the whole crawl: the owner of the group drops what its seen-set holds. It
// returns once the posts are durable in ZooKeeper. An item that cannot be
// encoded is an error naming its URL; the other items are still posted.
// Calling Enqueue again with the same items after an error is safe.
func (f *Frontier) Enqueue(ctx context.Context, items []Item) (EnqueueResult, error) {
	var res EnqueueResult
	var errs []error
	posts := map[int][][]byte{}
	inCall := make(map[uint64]bool, len(items))
	var keys []uint64
	var urls []string // of the records, in order
	var recs [][]byte
	for _, it := range items {
		key := Fingerprint(it.URL)
		// A schedule entry (Prev set) is of a URL the crawl has seen: only
		// its group's owner judges it (owner_schedule.go).
		if it.Prev == nil && (f.known.Contains(key) || f.seen.Contains(key) || inCall[key]) {
			res.Duplicates++
			continue
		}
		rec, err := it.Record()
		if err != nil {
			errs = append(errs, fmt.Errorf("frontier: enqueue %q: %w", it.URL, err))
			continue
		}
		inCall[key] = true
		keys, urls, recs = append(keys, key), append(urls, it.URL), append(recs, rec)
	}
	if len(keys) == 0 {
		return res, errors.Join(errs...)
	}
	f.layout.Prefetch(urls) // ip key: the new names looked up in parallel, not one by one by Group
	for i, u := range urls {
		g := f.layout.Group(u)
		posts[g] = append(posts[g], recs[i])
	}
	if err := f.handOver(ctx, posts); err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	for _, k := range keys {
		f.seen.Add(k, struct{}{})
	}
	res.Posted = len(keys)
	return res, errors.Join(errs...)
}

// LocalOwner takes records of group straight into the group's next step
// when this process owns the group (docs/design.md, "local hand-off"): it
// returns a channel that yields nil once a step holding them has committed
// (or they were dropped as duplicates or over a quota), or an error; it
// returns nil when this process does not own the group.
type LocalOwner func(group int, records [][]byte) <-chan error

// SetLocalOwner installs fn: Enqueue then hands the records of groups this
// process owns to fn instead of posting them, and posts them after all if
// fn fails or does not answer within localTimeout. Call it before the first
// Enqueue.
func (f *Frontier) SetLocalOwner(fn LocalOwner) { f.local = fn }

// localTimeout bounds the wait for a local hand-off before the records are
// posted instead.
const localTimeout = 10 * time.Second

// handOver delivers records per group: locally to an owning LocalOwner, the
// rest (and whatever the owner could not take) posted.
func (f *Frontier) handOver(ctx context.Context, posts map[int][][]byte) error {
	type wait struct {
		g    int
		recs [][]byte
		ch   <-chan error
	}
	var waits []wait
	if f.local != nil {
		for g, recs := range posts {
			if ch := f.local(g, recs); ch != nil {
				waits = append(waits, wait{g, recs, ch})
				delete(posts, g)
			}
		}
	}
	var errs []error
	if len(posts) > 0 {
		errs = append(errs, f.post(ctx, posts))
	}
	fallback := map[int][][]byte{}
	timer := time.NewTimer(localTimeout)
	defer timer.Stop()
	for _, wt := range waits {
		select {
		case err := <-wt.ch:
			if err != nil {
				fallback[wt.g] = wt.recs
			}
		case <-timer.C:
			fallback[wt.g] = wt.recs
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if len(fallback) > 0 {
		errs = append(errs, f.post(ctx, fallback))
	}
	return errors.Join(errs...)
}

// post adds records to the next group-commit flush and waits for it.
func (f *Frontier) post(ctx context.Context, posts map[int][][]byte) error {
	done := make(chan error, 1)
	f.mu.Lock()
	if f.pending == nil {
		f.pending = map[int][][]byte{}
	}
	for g, recs := range posts {
		f.pending[g] = append(f.pending[g], recs...)
	}
	f.waiters = append(f.waiters, done)
	if !f.flushing {
		f.flushing = true
		go f.flushLoop()
	}
	f.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushLoop writes what is pending, one post per group, until nothing is.
func (f *Frontier) flushLoop() {
	for {
		f.mu.Lock()
		if len(f.waiters) == 0 {
			f.flushing = false
			f.mu.Unlock()
			return
		}
		posts, waiters := f.pending, f.waiters
		f.pending, f.waiters = nil, nil
		f.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), postTimeout)
		groups := make([]int, 0, len(posts))
		for g := range posts {
			groups = append(groups, g)
		}
		errs := make([]error, len(groups))
		var wg sync.WaitGroup
		for i, g := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f.b.Post(ctx, g, posts[g])
			}()
		}
		wg.Wait()
		cancel()
		err := errors.Join(errs...)
		for _, w := range waiters {
			w <- err
		}
	}
}

// LoadKnown reads every group's seen-set and waiting posts
// (Backlog.Keys) so that Enqueue counts URLs the crawl already holds as
// duplicates instead of posting them: for a seeder, whose report should say
// what was new. Call it before the first Enqueue. It returns how many keys
// it loaded. The groups are read one at a time and merged into one
// seenset.Set, so the keys take about 8 bytes each (16 during the largest
// merge) plus one group's load. Errors: ZooKeeper errors after retries.
func (f *Frontier) LoadKnown(ctx context.Context) (int, error) {
	known := seenset.New(nil)
	for g := 0; g < f.layout.Groups(); g++ {
		keys, err := f.b.Keys(ctx, g)
		if err != nil {
			return 0, fmt.Errorf("frontier: read the seen-set of group %d: %w", g, err)
		}
		known.Merge(keys)
	}
	f.known = known
	return known.Len(), nil
}

// Pending counts what a crawl still has to do.
type Pending struct {
	Ready   int // ready items, claimed or not (R/queue)
	Claimed int // claims (R/claims)
	Backlog int // accepted URLs not yet moved to the ready window
	Posts   int // inbox posts not yet drained
	// Held counts the Backlog URLs of hosts at max_pages_per_host kept in
	// the backlog (host_budget_action keep), as the groups' owners last
	// wrote them (HeldBacklog): no step moves them.
	Held int
	// Scheduled counts the Backlog URLs that are recrawl schedule entries
	// (docs/design.md, "Recrawl"), as the owners last wrote them; DueNow
	// and DueHour those of them due now and within the next hour (from the
	// earliest 64 due minutes per group: a lower bound past those), and
	// NextDue the earliest due time (zero when none is scheduled).
	Scheduled, DueNow, DueHour int
	NextDue                    time.Time
}

// Empty reports whether nothing is left to do: nothing new and nothing
// due. Only URLs held by a host budget and recrawl schedule entries not
// due yet may be left in the backlog.
func (p Pending) Empty() bool {
	return p.Ready == 0 && p.Claimed == 0 && p.Backlog-p.Held-p.Scheduled <= 0 && p.DueNow == 0 && p.Posts == 0
}

// HeldBacklog returns the backlog records group g's owner last wrote as
// held by host budgets (HostCounts.Held of st.Annex), at most st.Backlog;
// 0 when the annex does not decode.
func HeldBacklog(st GroupStats) int {
	held, _, err := DecodeHostTotals(st.Annex)
	if err != nil {
		return 0
	}
	return int(min(held, int64(st.Backlog)))
}

// policy returns SchedulePolicy of the config in force, 0 when f has none.
func (f *Frontier) policy() uint64 {
	if f.config == nil {
		return 0
	}
	return SchedulePolicy(f.config())
}

// Pending reads the counts of p (numChildren of the ready and claim
// shards, every group's cursor and inbox size): a snapshot, not atomic.
// Errors: ZooKeeper errors after retries.
func (f *Frontier) Pending(ctx context.Context) (Pending, error) {
	p, _, err := f.PendingStamp(ctx)
	return p, err
}

// PendingStamp is Pending with a stamp of what it read: the child versions
// of every shard parent, inbox and R/failed and the version of every
// cursor (FNV-1a 64). Two reads with the same stamp saw each of
// those znodes unchanged from its first read to its second, as child
// watches that did not fire would show, with no watch set: if both read
// Empty, the crawl was done at the end of the first (docs/design.md,
// "When a batch crawl is done"). Errors: as Pending's.
func (f *Frontier) PendingStamp(ctx context.Context) (Pending, uint64, error) {
	// The shard counts and the groups' stats go at once (one round trip).
	var qp coord.QueueStats
	var groups []GroupStats
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		qp, err = f.q.Pending(gctx)
		return err
	})
	var versions []int32
	g.Go(func() (err error) {
		groups, versions, err = f.b.stats(gctx, true)
		return err
	})
	if err := g.Wait(); err != nil {
		return Pending{}, 0, err
	}
	out := BacklogPending(groups, f.policy())
	out.Ready, out.Claimed = qp.Queued, qp.Claimed
	return out, stampVersions(versions, qp.Stamp), nil
}

// BacklogPending sums the groups' part of Pending (Backlog, Posts, Held,
// the schedule counts at the current time) from their stats
// (Backlog.Stats); Ready and Claimed are left 0. An annex that does not
// decode counts as no schedule. policy is SchedulePolicy of the config in
// force (0: not checked): a group whose summary was computed under another
// counts every entry as due now (its owner has not applied the new keys
// yet, e.g. just after `crawlctl recrawl --now`), so no done check passes
// on a stale summary.
func BacklogPending(groups []GroupStats, policy uint64) Pending {
	var out Pending
	now := time.Now()
	for _, g := range groups {
		out.Backlog += g.Backlog
		out.Posts += g.Posts
		out.Held += HeldBacklog(g)
		s, err := DecodeSchedule(g.Annex)
		if err != nil || s.Entries == 0 {
			continue
		}
		out.Scheduled += int(min(s.Entries, int64(g.Backlog)))
		if policy != 0 && s.Policy != policy {
			n := int(min(s.Entries, int64(g.Backlog)))
			out.DueNow += n
			out.DueHour += n
			if out.NextDue.IsZero() || now.Before(out.NextDue) {
				out.NextDue = now.Truncate(time.Second)
			}
			continue
		}
		n, _ := s.DueBy(now)
		out.DueNow += int(n)
		n, _ = s.DueBy(now.Add(time.Hour))
		out.DueHour += int(n)
		if next := time.Unix(s.Next, 0); out.NextDue.IsZero() || next.Before(out.NextDue) {
			out.NextDue = next
		}
	}
	return out
}
