package frontier

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
)

// Limits of one group step (one multi, docs/design.md "Frontier layout 2").
const (
	stepPostBytes   = 64 << 10        // inbox post data drained per step
	stepMaxMoves    = 400             // ready items created per step
	groupResync     = 2 * time.Second // how often the loop re-reads which ready items exist
	dropLogCapacity = 10_000          // hosts remembered as already logged for a drop
)

// Drop reasons, as counted in status and zkcrawl_links_dropped_total:
// what an owner's step refuses (OwnerOptions.Dropped).
const (
	DropDuplicate = "duplicate"
	DropPerHost   = "per_host"
	DropTotal     = "total"
	DropBytes     = "bytes"
	DropURLLength = "url_length"
	DropBad       = "bad_record"
	// DropHostBudget counts the backlog records and new links of hosts at
	// max_pages_per_host under host_budget_action drop.
	DropHostBudget = "host_budget"
)

// hostByteShare is the part of a group's byte budget one host may use, so
// that one trap host cannot take every other host's room in its group.
const hostByteShare = 8

// stepMoveBytes bounds the ready item data one step creates, so a step's
// multi stays near coord's group-commit bound (64 KiB, which keeps
// ZooKeeper's in-memory log of its last 500 transactions small) and far
// under its 1 MiB request limit.
const stepMoveBytes = 64 << 10

// OwnerOptions are what an Owner needs of its process.
type OwnerOptions struct {
	// Log receives the owner's log lines (nil: slog.Default()).
	Log *slog.Logger
	// Config returns the crawl settings in force (quotas, windows,
	// budgets); called once per step.
	Config func() config.Config
	// Dropped, if not nil, counts n records a step dropped for reason (one
	// of the Drop constants).
	Dropped func(reason string, n int)
}

// Owner runs the shard groups one process owns (docs/design.md, "Frontier
// layout 2"): for each, Run drains the group's inbox and the local
// hand-offs (dedup against the group's seen-set, quotas, host budgets) and
// fills each host's ready window from the backlog, one fenced multi per
// step (Group.Apply). It is the frontier's LocalOwner: links of groups it
// runs skip the inbox. Safe for concurrent use; one Run per group at a
// time.
type Owner struct {
	front  *Frontier
	layout Layout
	queue  *coord.Queue
	log    *slog.Logger
	opts   OwnerOptions

	groups sync.Map // int -> *ownedGroup
	// busyKeys sums the groups' activeGauge: the politeness keys with
	// records not yet finished over every group running here, which
	// share readyBudget (readyWindowFor).
	busyKeys atomic.Int64

	dropLogMu  sync.Mutex
	dropLogged map[string]bool // "reason host" already logged
}

// NewOwner returns the owner of f's groups and installs it as f's
// LocalOwner. Call it before f's first Enqueue.
func NewOwner(f *Frontier, opts OwnerOptions) *Owner {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	o := &Owner{front: f, layout: f.layout, queue: f.q, log: opts.Log, opts: opts}
	f.SetLocalOwner(o.offer)
	f.config = opts.Config
	return o
}

// OwnerTotals sums what the groups running here last computed.
type OwnerTotals struct {
	// Backlog counts the records not yet moved to the ready windows.
	Backlog int64
	// AtBudget counts the hosts at max_pages_per_host; Held their backlog
	// records kept (host_budget_action keep).
	AtBudget, Held int64
	// Scheduled counts the recrawl schedule entries waiting in the
	// backlogs, and NextDue is the earliest due time among them (Unix
	// seconds; 0 when none), as the steps last wrote them.
	Scheduled, NextDue int64
	// Active maps each group running here to its politeness keys with
	// records not yet finished (backlog or ready window), as its loop last
	// saw them: the load that shard ownership is balanced by (a key's pages
	// go no faster than its politeness allows, so keys, not records, are
	// what a worker's capacity is spread over). nil when no group runs here.
	Active map[int]int64
}

// Totals returns the sums over the groups running here (0 for a group
// whose Run has ended; all 0 for a nil Owner).
func (o *Owner) Totals() OwnerTotals {
	var t OwnerTotals
	if o == nil {
		return t
	}
	o.groups.Range(func(k, v any) bool {
		og := v.(*ownedGroup)
		og.mu.Lock()
		active := og.active
		og.mu.Unlock()
		if active {
			if t.Active == nil {
				t.Active = map[int]int64{}
			}
			t.Active[k.(int)] = og.activeGauge.Load()
		}
		t.Backlog += og.backlogGauge.Load()
		t.AtBudget += og.atBudget.Load()
		t.Held += og.held.Load()
		if n := og.scheduled.Load(); n > 0 {
			t.Scheduled += n
			if next := og.nextDueGauge.Load(); t.NextDue == 0 || next < t.NextDue {
				t.NextDue = next
			}
		}
		return true
	})
	return t
}

// ownedGroup is the one model of a shard group in this process. Its
// shared part (mu, the atomics, wake) carries what other goroutines tell
// the owner loop (ready items finished here, local hand-offs) and what it
// publishes (gauges); the rest belongs to the owner loop (Run) alone while
// it runs: the store handle (cursor, records, seen-set), the per-host
// index of the backlog and the ready window, and the host budget.
type ownedGroup struct {
	wake   chan struct{} // 1 slot: something for the loop to look at
	mu     sync.Mutex
	freed  []string // "<shard>/<item>" of ready items finished here
	active bool     // a loop runs the group in this process
	resync bool     // Resync asked the loop to re-read the ready items
	offers []offer  // records handed over locally, for the next step

	backlogGauge atomic.Int64 // the backlog as the loop last saw it (0 when not running)
	activeGauge  atomic.Int64 // busyHosts as the loop last saw it (0 when not running)
	// atBudget and held: hosts at max_pages_per_host and their backlog
	// records kept, as the loop last computed (0 when not running).
	atBudget, held atomic.Int64
	// scheduled and nextDueGauge: the schedule's entries and earliest due
	// time (Unix s) as the loop last wrote them (0 when not running).
	scheduled, nextDueGauge atomic.Int64

	// Owner loop only.
	grp       *Group // the store: cursor, live records, seen-set
	budget    *hostBudget
	hosts     map[string]*hostBacklog
	names     map[string]string // ready item name ("<shard>/<item>") -> host
	nameBytes map[string]int64  // ready item name -> its data's bytes
	queued    int64             // pending + ready + schedule entries
	sched     *schedState       // the recrawl schedule (owner_schedule.go)
	busyHosts int64             // hosts with pending or ready records
	bytes     int64             // raw bytes of pending records and ready items
}

// offer is a local hand-off of records to the group's next step.
type offer struct {
	records [][]byte
	done    chan error
}

// errManagerStopped answers the offers a stopping loop did not take.
var errManagerStopped = errors.New("frontier: shard group owner stopped")

// offer hands records of group g to its loop in this process
// (LocalOwner); nil when no loop runs the group here.
func (o *Owner) offer(g int, records [][]byte) <-chan error {
	og := o.get(g)
	og.mu.Lock()
	if !og.active {
		og.mu.Unlock()
		return nil
	}
	ch := make(chan error, 1)
	og.offers = append(og.offers, offer{records: records, done: ch})
	og.mu.Unlock()
	og.poke()
	return ch
}

// poke wakes the loop without blocking.
func (og *ownedGroup) poke() {
	select {
	case og.wake <- struct{}{}:
	default:
	}
}

// setActive marks the loop running or stopped; stopping answers the
// pending offers with errManagerStopped (their records are posted instead).
func (og *ownedGroup) setActive(on bool) {
	og.mu.Lock()
	defer og.mu.Unlock()
	og.active = on
	if !on {
		for _, o := range og.offers {
			o.done <- errManagerStopped
		}
		og.offers = nil
	}
}

// requeue puts offers back at the front, for the next step.
func (og *ownedGroup) requeue(offers []offer) {
	og.mu.Lock()
	defer og.mu.Unlock()
	if !og.active {
		for _, o := range offers {
			o.done <- errManagerStopped
		}
		return
	}
	og.offers = append(offers, og.offers...)
	og.poke()
}

// takeOffers returns and clears the pending offers.
func (og *ownedGroup) takeOffers() []offer {
	og.mu.Lock()
	defer og.mu.Unlock()
	out := og.offers
	og.offers = nil
	return out
}

func (o *Owner) get(g int) *ownedGroup {
	v, _ := o.groups.LoadOrStore(g, &ownedGroup{wake: make(chan struct{}, 1)})
	return v.(*ownedGroup)
}

// Finished records that ready item name of shard (group g) was finished
// in this process (completed or dead-lettered), so its host's ready window
// has room, and wakes the group's loop without blocking; name "" only
// wakes it. A nil Owner (a process that owns no group) ignores it.
func (o *Owner) Finished(g, shard int, name string) {
	if o == nil {
		return
	}
	og := o.get(g)
	if name != "" {
		og.mu.Lock()
		og.freed = append(og.freed, coord.ShardName(shard)+"/"+name)
		og.mu.Unlock()
	}
	og.poke()
}

// Resync makes the loop of group g re-read which ready items exist (its
// shards' children) before its next step, and wakes it without blocking.
// Call it when another process may have finished ready items of g, which
// the loop otherwise learns only every groupResync: a worker that gained
// g's shard calls it once the previous owner's claims there are gone, so
// the windows those items held are refilled at once, not up to
// groupResync later. A nil Owner, or one not running g, ignores it.
func (o *Owner) Resync(g int) {
	if o == nil {
		return
	}
	og := o.get(g)
	og.mu.Lock()
	og.resync = og.active
	og.mu.Unlock()
	og.poke()
}

// takeResync reports and clears a Resync request.
func (og *ownedGroup) takeResync() bool {
	og.mu.Lock()
	defer og.mu.Unlock()
	r := og.resync
	og.resync = false
	return r
}

// takeFreed returns and clears the freed items.
func (og *ownedGroup) takeFreed() []string {
	og.mu.Lock()
	defer og.mu.Unlock()
	out := og.freed
	og.freed = nil
	return out
}

// hostBacklog is one host's part of a group as its owner sees it.
type hostBacklog struct {
	pending []pendingRecord // backlog records of new URLs, oldest first
	due     dueHeap         // schedule entries, earliest due first
	ready   int             // ready items (claimed or not)
	bytes   int64           // raw bytes of its pending records and ready items
}

// pendingRecord is a backlog record as the owner tracks it: the record
// itself stays in the Group (decoded again when it is moved).
type pendingRecord struct {
	ref   Ref
	bytes int32
}

// dropReady forgets ready item key (finished or gone).
func (v *ownedGroup) dropReady(key string) {
	host, ok := v.names[key]
	if !ok {
		return
	}
	hb := v.host(host)
	defer v.track(hb, hb.busy())
	hb.ready--
	hb.bytes -= v.nameBytes[key]
	v.bytes -= v.nameBytes[key]
	v.queued--
	delete(v.names, key)
	delete(v.nameBytes, key)
}

// addReady records ready item key of host with n bytes of data.
func (v *ownedGroup) addReady(key, host string, n int64) {
	v.names[key], v.nameBytes[key] = host, n
	hb := v.host(host)
	defer v.track(hb, hb.busy())
	hb.ready++
	hb.bytes += n
	v.bytes += n
	v.queued++
}

// addPending appends a backlog record of host (n raw bytes).
func (v *ownedGroup) addPending(host string, ref Ref, n int) {
	hb := v.host(host)
	defer v.track(hb, hb.busy())
	hb.pending = append(hb.pending, pendingRecord{ref: ref, bytes: int32(n)})
	hb.bytes += int64(n)
	v.queued++
	v.bytes += int64(n)
}

// takePending removes the m.n oldest pending records of host m.host
// (moved or dropped by a committed step).
func (v *ownedGroup) takePending(m hostMove) {
	hb := v.hosts[m.host]
	defer v.track(hb, hb.busy())
	for _, pr := range hb.pending[:m.n] {
		v.bytes -= int64(pr.bytes)
		hb.bytes -= int64(pr.bytes)
		v.queued--
	}
	hb.pending = hb.pending[m.n:]
}

// busy reports whether the host has records (pending, scheduled or
// ready).
func (hb *hostBacklog) busy() bool { return len(hb.pending)+len(hb.due)+hb.ready > 0 }

// track keeps v.busyHosts, the hosts with records, in step after hb
// changed; was is hb.busy() before the change (deferred: no allocation).
func (v *ownedGroup) track(hb *hostBacklog, was bool) {
	switch now := hb.busy(); {
	case now && !was:
		v.busyHosts++
	case was && !now:
		v.busyHosts--
	}
}

// backlogLen returns the records not yet moved to the ready window (what
// is queued and not a known ready item).
func (v *ownedGroup) backlogLen() int64 { return max(0, v.queued-int64(len(v.names))) }

func (v *ownedGroup) host(h string) *hostBacklog {
	hb := v.hosts[h]
	if hb == nil {
		hb = &hostBacklog{}
		v.hosts[h] = hb
	}
	return hb
}

// Run keeps owned shard group g's frontier moving while ctx and sess
// live: it drains the group's inbox and the local hand-offs (dedup against
// the group's seen-set, quotas, host budgets), and fills each host's ready
// window (ReadyWindow) from the backlog, one fenced multi per step
// (Group.Apply). When another owner wrote the group (a handoff overlap) or
// the outcome of a step was lost, it loads the group again. It returns
// when ctx ends or sess expires.
func (o *Owner) Run(ctx context.Context, sess *coord.Session, g int) {
	for ctx.Err() == nil {
		err := o.runGroup(ctx, sess, g)
		switch {
		case ctx.Err() != nil, errors.Is(err, coord.ErrSessionExpired):
			return
		case errors.Is(err, coord.ErrVersionConflict):
			o.log.Debug("shard group changed under us; reloading", "group", GroupName(g), "error", err)
		default:
			o.log.Warn("shard group owner failed; reloading", "group", GroupName(g), "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// runGroup loads group g and runs its steps until an error or ctx's end.
func (o *Owner) runGroup(ctx context.Context, sess *coord.Session, g int) error {
	grp, err := o.front.Backlog().Open(ctx, sess, g)
	if err != nil {
		return err
	}
	og := o.get(g)
	og.grp, og.hosts, og.names, og.nameBytes, og.queued, og.bytes, og.busyHosts = grp, map[string]*hostBacklog{}, map[string]string{}, map[string]int64{}, 0, 0, 0
	og.sched = newSchedState()
	og.sched.policy = newSchedPolicy(o.opts.Config())
	defer func() { og.grp, og.budget, og.hosts, og.names, og.nameBytes, og.sched = nil, nil, nil, nil, nil, nil }()
	// Accepted records are valid: only their URLs are read, once. An
	// undecodable record (host "") is moved as is; the claim loop sends it
	// to the dead letters with the reason.
	type loaded struct {
		ref   Ref
		n     int
		url   string // "" when the record does not decode
		entry []byte // the record when it is a schedule entry
	}
	var recs []loaded
	var urls []string
	grp.Pending(func(ref Ref, rec []byte) {
		u, _ := RecordURL(rec)
		var entry []byte
		if u != "" && recordHasPrev(rec) {
			entry = rec
		}
		recs = append(recs, loaded{ref, len(rec), u, entry})
		if u != "" {
			urls = append(urls, u)
		}
	})
	o.layout.Prefetch(urls) // ip key: the names looked up in parallel before Key
	for _, r := range recs {
		host := ""
		if r.url != "" {
			host = o.layout.Key(r.url)
		}
		if r.entry != nil {
			og.loadEntry(host, r.ref, r.entry)
			continue
		}
		og.addPending(host, r.ref, r.n)
	}
	og.budget = o.loadBudget(grp, g)
	og.takeFreed() // finished before this load: the listing below counts them
	og.setActive(true)
	defer og.setActive(false)
	defer og.backlogGauge.Store(0)
	defer func() { o.busyKeys.Add(-og.activeGauge.Swap(0)) }()
	defer og.atBudget.Store(0)
	defer og.held.Store(0)
	defer og.scheduled.Store(0)
	resync := time.NewTicker(groupResync)
	defer resync.Stop()
	dueTimer := time.NewTimer(time.Hour)
	defer dueTimer.Stop()
	resyncDue := true
	for {
		for _, key := range og.takeFreed() {
			og.dropReady(key)
		}
		if og.takeResync() {
			resyncDue = true
		}
		if resyncDue {
			// At load, every groupResync and after a step whose reply was
			// lost: learn the ready items others created or finished.
			if err := o.syncReady(ctx, g, og); err != nil {
				return err
			}
			resyncDue = false
		}
		busy, lost, err := o.groupStep(ctx, og, og.takeOffers())
		og.backlogGauge.Store(og.backlogLen())
		o.busyKeys.Add(og.busyHosts - og.activeGauge.Swap(og.busyHosts))
		if err != nil {
			return err
		}
		resyncDue = lost
		if busy {
			continue
		}
		dueTimer.Stop()
		var dueC <-chan time.Time
		if next := og.nextDue(time.Now().Unix()); !next.IsZero() {
			dueTimer.Reset(time.Until(next) + 10*time.Millisecond)
			dueC = dueTimer.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sess.Ctx().Done():
			return coord.ErrSessionExpired
		case <-grp.InboxEvent():
		case <-og.wake:
		case <-resync.C:
			resyncDue = true
		case <-dueC:
		}
	}
}

// syncReady re-reads which ready items of group g exist (children of its
// shards), learning the host of any item it did not create itself. The
// items it does not know are read at once (up to syncReadyReads in
// flight): after a handoff every ready item of the group is new to its
// owner, and read one after another they took 5 s of a 12-worker crawl on
// two cores (about 150 ms each) during which the group's windows went
// unfilled.
func (o *Owner) syncReady(ctx context.Context, g int, v *ownedGroup) error {
	layout := o.layout
	present := map[string]bool{}
	type unknown struct {
		shard      int
		name, host string
		bytes      int64
		gone       bool
	}
	var todo []unknown
	for _, s := range layout.GroupShards(g) {
		names, err := o.queue.ReadyNames(ctx, s)
		if err != nil {
			return err
		}
		for _, n := range names {
			key := coord.ShardName(s) + "/" + n
			present[key] = true
			if _, ok := v.names[key]; !ok {
				todo = append(todo, unknown{shard: s, name: n})
			}
		}
	}
	err := parallel(ctx, len(todo), syncReadyReads, func(ctx context.Context, i int) error {
		u := &todo[i]
		data, err := o.queue.Get(ctx, u.shard, u.name)
		if errors.Is(err, coord.ErrGone) {
			u.gone = true
			return nil
		}
		if err != nil {
			return err
		}
		if it, err := DecodeItem(data); err == nil {
			u.host = o.layout.Key(it.URL)
		}
		u.bytes = int64(len(data))
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range todo {
		key := coord.ShardName(u.shard) + "/" + u.name
		if u.gone {
			delete(present, key)
			continue
		}
		v.addReady(key, u.host, u.bytes)
	}
	for key := range v.names {
		if !present[key] {
			v.dropReady(key)
		}
	}
	return nil
}

// syncReadyReads bounds the item reads syncReady has in flight at once.
const syncReadyReads = 64

// groupStep drains what the inbox holds (up to stepPostBytes) and the
// offers, and fills ready windows, as one Apply. busy reports that there
// may be more to do at once; lost that the step committed but its reply was
// lost, so the names of the ready items it created are unknown. Every offer
// is answered: with err, or nil once all its records are through; records
// a committed step had no room for go back to the front of the offers for
// the next step.
func (o *Owner) groupStep(ctx context.Context, og *ownedGroup, offers []offer) (busy, lost bool, err error) {
	grp := og.grp
	cfg := o.opts.Config()
	if !og.sched.policy.same(cfg) {
		og.reschedule(newSchedPolicy(cfg))
	}
	plan := newStepPlan(og, cfg, o.layout.Groups(), len(offers))
	plan.otherKeys = o.busyKeys.Load() - og.activeGauge.Load()
	plan.step.Drop, og.sched.stale = og.sched.stale, nil // duplicates found at load
	defer func() { answerOffers(og, offers, plan.rest, err) }()
	var posts []Post
	if posts, err = grp.Inbox(ctx, stepPostBytes); err != nil {
		return false, false, err
	}
	nPosts := len(posts)
	for _, o := range offers {
		posts = append(posts, Post{Records: o.records}) // no znode to drain
	}
	o.drain(plan, posts, nPosts)
	o.compactEntries(plan)
	plan.fillWindows(o.layout, time.Now().Unix())
	o.settleBudget(plan, og)
	if o.opts.Dropped != nil {
		for reason, n := range plan.drops {
			o.opts.Dropped(reason, n)
		}
	}
	step := plan.step
	if len(step.Drained) == 0 && len(step.Accept) == 0 && len(step.Move) == 0 && len(step.Drop) == 0 && step.Annex == nil && !grp.Retirable() {
		return false, false, nil // offers all dropped or duplicates: answered nil
	}
	res, err := grp.Apply(ctx, step)
	if err != nil {
		return false, false, err
	}
	o.commitStep(plan, res)
	busy = nPosts > 0 || len(offers) > 0 || len(step.Move) >= stepMaxMoves || len(step.Drop) >= stepMaxDrops
	return busy, res.Ready == nil && len(step.Move) > 0, nil
}

// answerOffers answers the offers of a step that ended with err: each with
// err when the step failed (its caller posts the records instead), else
// with nil, except those with records in rest (per offer: what the step
// had no room for), which go back to the front of the group's offers.
func answerOffers(og *ownedGroup, offers []offer, rest [][][]byte, err error) {
	var carry []offer
	for i, o := range offers {
		switch {
		case err != nil:
			o.done <- err
		case len(rest[i]) > 0:
			carry = append(carry, offer{records: rest[i], done: o.done})
		default:
			o.done <- nil
		}
	}
	if len(carry) > 0 {
		og.requeue(carry)
	}
}

// stepPlan is one group step being built (groupStep): the Step, and
// what it changes in the group's model once it commits.
type stepPlan struct {
	grp    *Group
	group  int // grp's index
	view   *ownedGroup
	cfg    config.Config
	groups int64 // shard groups of the crawl: quotas are per group
	// otherKeys counts the busy keys of the owner's other groups as
	// their loops last saw them (readyWindowFor adds this group's own).
	otherKeys int64
	budget    *hostBudget

	step     Step
	accepted []string       // per step.Accept: its host
	moved    []hostMove     // per host moved from: how many of its oldest pending records
	dropped  []hostMove     // per host dropped from (step.Drop): how many of its oldest pending records
	drops    map[string]int // records dropped, by reason
	rest     [][][]byte     // per offer: the records this step had no room for
	entries  []plannedEntry // schedule entries accepted, in Accept order
	entryIdx map[uint64]int // key -> its index in entries

	keys      map[uint64]bool  // fingerprints accepted in this step
	hostCount map[string]int64 // host -> records accepted in this step
	hostBytes map[string]int64 // host -> their raw bytes
	bytes     int64            // raw bytes accepted in this step
}

// hostMove says that a step moves the n oldest pending records of host
// and then (or, with recrawl_new_first off, before them) its e due
// schedule entries (already taken out of the model).
type hostMove struct {
	host string
	n    int
	e    int
}

func newStepPlan(og *ownedGroup, cfg config.Config, groups, offers int) *stepPlan {
	return &stepPlan{
		grp: og.grp, group: og.budget.group, view: og, budget: og.budget, cfg: cfg, groups: int64(groups),
		drops: map[string]int{}, rest: make([][][]byte, offers),
		keys: map[uint64]bool{}, hostCount: map[string]int64{}, hostBytes: map[string]int64{},
		entryIdx: map[uint64]int{},
	}
}

// drain adds the records of posts (the first nPosts inbox posts, then the
// offers as posts without a znode) to plan (admit), each record decoded
// once. Once the step holds stepPostBytes, the offers' remaining records
// wait in plan.rest.
func (o *Owner) drain(plan *stepPlan, posts []Post, nPosts int) {
	items := make([][]Item, len(posts))
	var urls []string
	for i, p := range posts {
		items[i] = make([]Item, len(p.Records))
		for j, rec := range p.Records {
			if it, err := DecodeRecord(rec); err == nil {
				items[i][j] = it
				urls = append(urls, it.URL)
			}
		}
	}
	o.layout.Prefetch(urls) // ip key: new names looked up in parallel before admit keys them
	for i, p := range posts {
		if p.Name == "" && plan.bytes >= stepPostBytes {
			plan.rest[i-nPosts] = p.Records // an offer, and the step is full
			continue
		}
		if p.Name != "" {
			plan.step.Drained = append(plan.step.Drained, p.Name)
		}
		if p.Err != nil {
			o.log.Warn("undecodable inbox post drained", "post", p.Name, "error", p.Err) // p.Err names the group
			plan.drops[DropBad]++
			continue
		}
		for j, rec := range p.Records {
			if p.Name == "" && plan.bytes >= stepPostBytes {
				plan.rest[i-nPosts] = p.Records[j:]
				break
			}
			o.admit(plan, rec, items[i][j])
		}
	}
}

// admit appends rec (decoded: it, URL "" when rec does not decode) to the
// step's accepted records, unless it does not decode, the group has seen
// its URL (before or in this step), or a quota refuses it (overQuota,
// logged once per host): those are counted in plan.drops.
func (o *Owner) admit(plan *stepPlan, rec []byte, it Item) {
	if it.URL == "" {
		plan.drops[DropBad]++
		return
	}
	if it.Prev != nil {
		o.admitEntry(plan, rec, it)
		return
	}
	key := Fingerprint(it.URL)
	if plan.grp.Seen(key) || plan.keys[key] {
		plan.drops[DropDuplicate]++
		return
	}
	host := o.layout.Key(it.URL)
	if reason := plan.overQuota(host, it.URL); reason != "" {
		plan.drops[reason]++
		o.logDrop(host, reason, it.URL)
		return
	}
	plan.keys[key] = true
	plan.hostCount[host]++
	plan.hostBytes[host] += int64(len(rec))
	plan.step.Accept = append(plan.step.Accept, rec)
	plan.accepted = append(plan.accepted, host)
	plan.bytes += int64(len(rec))
}

// overQuota returns the drop reason of the quota (docs/design.md "Quotas")
// one more record of host with URL u would break, or "": max_url_length,
// max_queued_per_host, max_queued_total and max_frontier_bytes as this
// group's share, and a host's share of that.
func (plan *stepPlan) overQuota(host, u string) string {
	cfg, v, groups := plan.cfg, plan.view, plan.groups
	hb := v.host(host)
	queuedHere := int64(len(hb.pending)+hb.ready) + plan.hostCount[host]
	switch {
	case len(u) > cfg.MaxURLLength:
		return DropURLLength
	case cfg.MaxPagesPerHost > 0 && cfg.HostBudgetAction == config.HostBudgetDrop && plan.budget.count(host) >= cfg.MaxPagesPerHost:
		return DropHostBudget
	case cfg.MaxQueuedPerHost > 0 && queuedHere >= cfg.MaxQueuedPerHost:
		return DropPerHost
	case cfg.MaxQueuedTotal > 0 && v.queued+int64(len(plan.accepted)) >= (cfg.MaxQueuedTotal+groups-1)/groups:
		return DropTotal
	case v.bytes+plan.bytes+8*int64(plan.grp.SeenCount()+len(plan.keys)) >= cfg.MaxFrontierBytes/groups,
		hb.bytes+plan.hostBytes[host] >= cfg.MaxFrontierBytes/groups/hostByteShare:
		return DropBytes
	}
	return ""
}

// ReadyWindow is how many ready items a group's owner keeps per politeness
// key under cfg at least: 4 x per_host_max_in_flight + 1. A ready item
// stays in the window from its creation until its completion multi has
// deleted it and the owner's next step has replaced it (waiting to be
// claimed, the claim round trip, the fetch, the WARC write, the fsync
// batch, the completion multi and the refill step), so by Little's law the
// window must hold per_host_max_in_flight items for that whole time, many
// times a fast fetch (docs/design.md, "Move", gives the measurement).
// Without a per-host rate a key's window grows with the owner's spare
// ready budget (readyWindowFor). Bound: that many znodes of ~100-200 B per
// key that has a backlog.
func ReadyWindow(cfg config.Config) int { return 4*cfg.PerHostMaxInFlight + 1 }

// readyBudget is how many ready items an owner process lets the windows
// of its busy keys grow into without a per-host rate (readyWindowFor).
// Estimated, not measured alone: about 3 KB of a worker's RSS each (12,900
// ready items raised a worker's peak RSS by 37 MB) and 100-200 B of
// ZooKeeper data (a JSON item), so at most about 3 MB and 200 KB per owner
// beyond the ReadyWindow floor.
const readyBudget = 1024

// readyWindowFor returns the ready window per key of an owner whose groups
// hold busy keys with records not yet finished, under cfg: ReadyWindow
// under a per-host rate (a key's requests are spaced by it, and its
// window drains no faster than the rate); without one the keys share
// readyBudget, each between ReadyWindow and 16 x per_host_max_in_flight +
// 1. One fast host alone (a site crawl: make demo-real's manual at
// in-flight 8) then has 129 ready items: with 33 its takers waited for the
// refill, its window's items spending about 30 ms each from creation to
// replacement for a 1-3 ms fetch; hundreds of hosts keep ReadyWindow (a
// window of 16 x for every key of 100 hosts held 12,900 ready items and
// raised a worker's peak RSS from about 140 to 177 MB).
func readyWindowFor(cfg config.Config, busyKeys int64) int {
	base := ReadyWindow(cfg)
	if cfg.PerHostRatePerS > 0 {
		return base
	}
	share := readyBudget / max(busyKeys, 1)
	return int(min(max(share, int64(base)), int64(16*cfg.PerHostMaxInFlight+1)))
}

// fillWindows adds the moves that fill the hosts' ready windows
// (readyWindowFor items) from their oldest pending records and their due
// schedule entries (at now, Unix seconds; new records first under
// recrawl_new_first), hosts with the fewest ready items first. A window is
// refilled once a third of it (at least one item) is free, so one step
// moves several items of a busy host instead of one per finished page. A
// step moves at most stepMaxMoves items and about stepMoveBytes, in
// rounds (fillTiers): first one ready item for every host that has none,
// then per_host_max_in_flight + 1 each (what a worker claims of a key at
// once), then the whole window. So when links to thousands of new hosts
// arrive at once (the home pages of a wide crawl), every host has its
// next page ready within a few steps, instead of a few hundred hosts'
// windows being filled per step while the others miss their politeness
// turns (a turn missed at a per-host rate is a whole interval lost).
func (plan *stepPlan) fillWindows(layout Layout, now int64) {
	v := plan.view
	window := readyWindowFor(plan.cfg, plan.otherKeys+v.busyHosts)
	refillAt := window - max(1, window/3)
	var order []string
	for h, hb := range v.hosts {
		if (len(hb.pending) > 0 || hb.dueNow(now)) && hb.ready <= refillAt && plan.budgetLeft(h) > 0 {
			order = append(order, h)
		}
	}
	sort.Slice(order, func(i, j int) bool { return v.hosts[order[i]].ready < v.hosts[order[j]].ready })
	moves := make([]hostMove, len(order))
	moveBytes := 0
	full := func() bool { return len(plan.step.Move) >= stepMaxMoves || moveBytes >= stepMoveBytes }
	for _, tier := range fillTiers(plan.cfg, window) {
		for i, h := range order {
			if full() {
				break
			}
			hb, m := v.hosts[h], &moves[i]
			m.host = h
			limit := min(tier-hb.ready, plan.budgetLeft(h))
			takeNew := func() bool {
				if m.n >= len(hb.pending) {
					return false
				}
				pr := hb.pending[m.n]
				moveBytes += int(pr.bytes) + 64
				plan.move(layout, pr.ref, 0)
				m.n++
				return true
			}
			takeDue := func() bool {
				e := v.takeDue(hb, now)
				if e == nil {
					return false
				}
				moveBytes += int(e.bytes) + 64
				plan.move(layout, e.ref, e.interval)
				m.e++
				return true
			}
			for m.n+m.e < limit && !full() {
				if plan.cfg.RecrawlNewFirst {
					if !takeNew() && !takeDue() {
						break
					}
				} else if !takeDue() && !takeNew() {
					break
				}
			}
		}
	}
	for _, m := range moves {
		if m.n+m.e > 0 {
			plan.moved = append(plan.moved, m)
		}
	}
}

// fillTiers returns the ready counts fillWindows fills hosts up to, round
// by round: 1, per_host_max_in_flight + 1, then window (increasing, each
// at most window).
func fillTiers(cfg config.Config, window int) []int {
	tiers := []int{1}
	for _, t := range []int{cfg.PerHostMaxInFlight + 1, window} {
		if t = min(t, window); t > tiers[len(tiers)-1] {
			tiers = append(tiers, t)
		}
	}
	return tiers
}

// move adds the move of backlog record ref to the ready queue: its item's
// JSON in its URL's shard; for a schedule entry (interval > 0) its Prev
// carries the adapted interval that made it due, which the fetch carries
// into the next capture. An undecodable record is moved as it is; the
// claim loop sends it to the dead letters.
func (plan *stepPlan) move(layout Layout, ref Ref, interval int64) {
	rec := plan.grp.Record(ref)
	it, err := DecodeRecord(rec)
	if err == nil && it.Prev != nil && interval > 0 {
		prev := *it.Prev
		prev.IntervalS = interval
		it.Prev = &prev
	}
	var data []byte
	if err == nil {
		data, err = it.Encode()
	}
	if err != nil {
		data = rec
	}
	shard := layout.ShardIn(plan.group, it.URL) // this group's shard: no second key lookup
	plan.step.Move = append(plan.step.Move, Move{Ref: ref, Shard: shard, Data: data})
}

// commitStep brings the owner's view up to a committed step: moved records
// leave their hosts' pending lists and, when the reply named them, become
// known ready items (else syncReady counts them); accepted records join the
// pending lists; hosts with nothing left are forgotten.
func (o *Owner) commitStep(plan *stepPlan, res StepResult) {
	v, step := plan.view, plan.step
	k := 0
	for _, m := range plan.moved {
		v.takePending(m)
		for range m.n + m.e {
			if res.Ready != nil {
				v.addReady(coord.ShardName(step.Move[k].Shard)+"/"+res.Ready[k], m.host, int64(len(step.Move[k].Data)))
			} // else: counted again by syncReady
			k++
		}
	}
	for _, d := range plan.dropped {
		v.takePending(d) // marked moved, no ready item (host budget)
	}
	entry := make(map[int]*dueEntry, len(plan.entries))
	for _, pe := range plan.entries {
		entry[pe.accept] = pe.dueEntry
	}
	for i, host := range plan.accepted {
		if e := entry[i]; e != nil {
			e.ref = res.Accepted[i]
			v.addEntry(e)
			continue
		}
		v.addPending(host, res.Accepted[i], len(step.Accept[i]))
	}
	for h, hb := range v.hosts {
		if len(hb.pending) == 0 && len(hb.due) == 0 && hb.ready <= 0 {
			delete(v.hosts, h)
		}
	}
}

// logDrop logs a dropped link once per host and reason.
func (o *Owner) logDrop(host, reason, url string) {
	key := reason + " " + host
	o.dropLogMu.Lock()
	defer o.dropLogMu.Unlock()
	if o.dropLogged == nil || len(o.dropLogged) >= dropLogCapacity {
		o.dropLogged = map[string]bool{}
	}
	if o.dropLogged[key] {
		return
	}
	o.dropLogged[key] = true
	o.log.Warn("frontier quota reached: links of this host are dropped (counted in status; logged once per host)",
		"host", host, "reason", reason, "example", url)
}
