package worker

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// Limits of one group step (one multi, docs/design.md "Frontier layout 2").
const (
	stepPostBytes   = 256 << 10 // inbox post data drained per step
	stepMaxMoves    = 400       // ready items created per step
	groupResync     = 2 * time.Second
	dropLogCapacity = 10_000 // hosts remembered as already logged for a drop
)

// Drop reasons, as counted in status and zkcrawl_links_dropped_total.
const (
	dropDuplicate = "duplicate"
	dropPerHost   = "per_host"
	dropTotal     = "total"
	dropBytes     = "bytes"
	dropURLLength = "url_length"
	dropBad       = "bad_record"
	// dropHostBudget counts the backlog records and new links of hosts at
	// max_pages_per_host under host_budget_action drop.
	dropHostBudget = "host_budget"
	// dropDeadLetter counts URLs that failed for good while R/failed held
	// max_dead_letters: logged in the crawl log only.
	dropDeadLetter = "dead_letter_cap"
)

// hostByteShare is the part of a group's byte budget one host may use, so
// that one trap host cannot take every other host's room in its group.
const hostByteShare = 8

// stepMoveBytes bounds the ready item data one step creates, so a step's
// multi stays well under ZooKeeper's 1 MiB request limit.
const stepMoveBytes = 256 << 10

// deadLetterRecheck is how often the dead-letter count is read again.
const deadLetterRecheck = 2 * time.Second

// groupWakes tells the manager of an owned group, through a 1-slot wake
// channel, that ready items of the group were finished here (completed or
// dead-lettered), so their hosts' ready windows have room.
type groupWakes struct {
	m sync.Map // int -> *groupSignal
}

type groupSignal struct {
	wake   chan struct{}
	mu     sync.Mutex
	freed  []string // "<shard>/<item>" of ready items finished here
	active bool     // a manager runs the group in this process
	offers []offer  // records handed over locally, for the next step

	backlog atomic.Int64 // the group's backlog as its manager here last saw it (0 when not running)
	// atBudget and held: hosts at max_pages_per_host and their backlog
	// records kept, as the manager here last computed (0 when not running).
	atBudget, held atomic.Int64
}

// offer is a local hand-off of records to the group's next step.
type offer struct {
	records [][]byte
	done    chan error
}

// errManagerStopped answers the offers a stopping manager did not take.
var errManagerStopped = errors.New("worker: shard group manager stopped")

// offer hands records of group g to its manager in this process
// (frontier.LocalOwner); nil when no manager runs the group here.
func (gw *groupWakes) offer(g int, records [][]byte) <-chan error {
	sig := gw.get(g)
	sig.mu.Lock()
	if !sig.active {
		sig.mu.Unlock()
		return nil
	}
	ch := make(chan error, 1)
	sig.offers = append(sig.offers, offer{records: records, done: ch})
	sig.mu.Unlock()
	select {
	case sig.wake <- struct{}{}:
	default:
	}
	return ch
}

// setActive marks the manager running or stopped; stopping answers the
// pending offers with errManagerStopped (their records are posted instead).
func (sig *groupSignal) setActive(on bool) {
	sig.mu.Lock()
	defer sig.mu.Unlock()
	sig.active = on
	if !on {
		for _, o := range sig.offers {
			o.done <- errManagerStopped
		}
		sig.offers = nil
	}
}

// requeue puts offers back at the front, for the next step.
func (sig *groupSignal) requeue(offers []offer) {
	sig.mu.Lock()
	defer sig.mu.Unlock()
	if !sig.active {
		for _, o := range offers {
			o.done <- errManagerStopped
		}
		return
	}
	sig.offers = append(offers, sig.offers...)
	select {
	case sig.wake <- struct{}{}:
	default:
	}
}

// takeOffers returns and clears the pending offers.
func (sig *groupSignal) takeOffers() []offer {
	sig.mu.Lock()
	defer sig.mu.Unlock()
	out := sig.offers
	sig.offers = nil
	return out
}

func (gw *groupWakes) get(g int) *groupSignal {
	v, _ := gw.m.LoadOrStore(g, &groupSignal{wake: make(chan struct{}, 1)})
	return v.(*groupSignal)
}

// freed records that ready item name of shard (group g) was finished here
// and wakes the group's manager without blocking; name "" only wakes it.
func (gw *groupWakes) freed(g, shard int, name string) {
	sig := gw.get(g)
	if name != "" {
		sig.mu.Lock()
		sig.freed = append(sig.freed, coord.ShardName(shard)+"/"+name)
		sig.mu.Unlock()
	}
	select {
	case sig.wake <- struct{}{}:
	default:
	}
}

// take returns and clears the freed items.
func (sig *groupSignal) take() []string {
	sig.mu.Lock()
	defer sig.mu.Unlock()
	out := sig.freed
	sig.freed = nil
	return out
}

// hostBacklog is one host's part of a group as its owner sees it.
type hostBacklog struct {
	pending []pendingRecord // backlog records, oldest first
	ready   int             // ready items (claimed or not)
	bytes   int64           // raw bytes of its pending records and ready items
}

// pendingRecord is a backlog record as the owner tracks it: the record
// itself stays in the coord.Group (decoded again when it is moved).
type pendingRecord struct {
	ref   coord.Ref
	bytes int32
}

// groupView is the owner's in-memory model of one group.
type groupView struct {
	hosts     map[string]*hostBacklog
	names     map[string]string // ready item name -> host
	nameBytes map[string]int64  // ready item name -> its data's bytes
	queued    int64             // pending + ready
	bytes     int64             // raw bytes of pending records and ready items
}

// dropReady forgets ready item key (finished or gone).
func (v *groupView) dropReady(key string) {
	host, ok := v.names[key]
	if !ok {
		return
	}
	hb := v.host(host)
	hb.ready--
	hb.bytes -= v.nameBytes[key]
	v.bytes -= v.nameBytes[key]
	v.queued--
	delete(v.names, key)
	delete(v.nameBytes, key)
}

// addReady records ready item key of host with n bytes of data.
func (v *groupView) addReady(key, host string, n int64) {
	v.names[key], v.nameBytes[key] = host, n
	hb := v.host(host)
	hb.ready++
	hb.bytes += n
	v.bytes += n
	v.queued++
}

// takePending removes the m.n oldest pending records of host m.host
// (moved or dropped by a committed step).
func (v *groupView) takePending(m hostMove) {
	hb := v.hosts[m.host]
	for _, pr := range hb.pending[:m.n] {
		v.bytes -= int64(pr.bytes)
		hb.bytes -= int64(pr.bytes)
		v.queued--
	}
	hb.pending = hb.pending[m.n:]
}

// backlogLen returns the records not yet moved to the ready window (what
// is queued and not a known ready item).
func (v *groupView) backlogLen() int64 { return max(0, v.queued-int64(len(v.names))) }

func (v *groupView) host(h string) *hostBacklog {
	hb := v.hosts[h]
	if hb == nil {
		hb = &hostBacklog{}
		v.hosts[h] = hb
	}
	return hb
}

// manageGroup keeps one owned shard group's frontier moving while ctx
// lives: it drains the group's inbox (dedup against the group's seen-set,
// quotas), and fills each host's ready window up to per_host_max_in_flight
// + 1 items from the backlog, one fenced multi per step (coord.Group.Apply).
// When another owner wrote the group (a handoff overlap) or the outcome of
// a step was lost, it loads the group again.
func (w *Worker) manageGroup(ctx context.Context, sess *coord.Session, g int) {
	for ctx.Err() == nil {
		err := w.runGroup(ctx, sess, g)
		switch {
		case ctx.Err() != nil, errors.Is(err, coord.ErrSessionExpired):
			return
		case errors.Is(err, coord.ErrVersionConflict):
			w.log.Debug("shard group changed under us; reloading", "group", coord.GroupName(g), "error", err)
		default:
			w.log.Warn("shard group manager failed; reloading", "group", coord.GroupName(g), "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// runGroup loads group g and runs its steps until an error or ctx's end.
func (w *Worker) runGroup(ctx context.Context, sess *coord.Session, g int) error {
	grp, err := w.front.Backlog().Open(ctx, sess, g)
	if err != nil {
		return err
	}
	v := &groupView{hosts: map[string]*hostBacklog{}, names: map[string]string{}, nameBytes: map[string]int64{}}
	if w.layout.PolitenessKey == frontier.KeyIP { // look the backlog's names up in parallel first
		var urls []string
		grp.Pending(func(_ coord.Ref, rec []byte) {
			if u, err := frontier.RecordURL(rec); err == nil {
				urls = append(urls, u)
			}
		})
		w.layout.Prefetch(urls)
	}
	grp.Pending(func(ref coord.Ref, rec []byte) {
		host := "" // accepted records are valid: only the URL is read
		if u, err := frontier.RecordURL(rec); err == nil {
			host = w.layout.Key(u)
		}
		// An undecodable record (host "") is moved as is; the claim loop
		// sends it to the dead letters with the reason.
		hb := v.host(host)
		hb.pending = append(hb.pending, pendingRecord{ref: ref, bytes: int32(len(rec))})
		hb.bytes += int64(len(rec))
		v.queued++
		v.bytes += int64(len(rec))
	})
	budget := w.loadBudget(grp, g)
	sig := w.groups.get(g)
	sig.take() // finished before this load: the listing below counts them
	sig.setActive(true)
	defer sig.setActive(false)
	defer sig.backlog.Store(0)
	defer sig.atBudget.Store(0)
	defer sig.held.Store(0)
	resync := time.NewTicker(groupResync)
	defer resync.Stop()
	resyncDue := true
	for {
		for _, key := range sig.take() {
			v.dropReady(key)
		}
		if resyncDue {
			// At load, every groupResync and after a step whose reply was
			// lost: learn the ready items others created or finished.
			if err := w.syncReady(ctx, g, v); err != nil {
				return err
			}
			resyncDue = false
		}
		busy, lost, err := w.groupStep(ctx, grp, v, budget, sig, sig.takeOffers())
		sig.backlog.Store(v.backlogLen())
		if err != nil {
			return err
		}
		resyncDue = lost
		if busy {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sess.Ctx().Done():
			return coord.ErrSessionExpired
		case <-grp.InboxEvent():
		case <-sig.wake:
		case <-resync.C:
			resyncDue = true
		}
	}
}

// syncReady re-reads which ready items of group g exist (children of its
// shards), learning the host of any item it did not create itself.
func (w *Worker) syncReady(ctx context.Context, g int, v *groupView) error {
	layout := w.layout
	present := map[string]bool{}
	for _, s := range layout.GroupShards(g) {
		names, err := w.queue.ReadyNames(ctx, s)
		if err != nil {
			return err
		}
		for _, n := range names {
			key := coord.ShardName(s) + "/" + n
			present[key] = true
			if _, ok := v.names[key]; ok {
				continue
			}
			data, err := w.queue.Get(ctx, s, n)
			if errors.Is(err, coord.ErrGone) {
				delete(present, key)
				continue
			}
			if err != nil {
				return err
			}
			host := ""
			if it, err := frontier.DecodeItem(data); err == nil {
				host = w.layout.Key(it.URL)
			}
			v.addReady(key, host, int64(len(data)))
		}
	}
	for key := range v.names {
		if !present[key] {
			v.dropReady(key)
		}
	}
	return nil
}

// groupStep drains what the inbox holds (up to stepPostBytes) and the
// offers, and fills ready windows, as one Apply. busy reports that there
// may be more to do at once; lost that the step committed but its reply was
// lost, so the names of the ready items it created are unknown. Every offer
// is answered: with err, or nil once all its records are through; records
// a committed step had no room for go back to the front of the offers for
// the next step.
func (w *Worker) groupStep(ctx context.Context, grp *coord.Group, v *groupView, budget *hostBudget, sig *groupSignal, offers []offer) (busy, lost bool, err error) {
	plan := newStepPlan(grp, v, w.current().cfg, w.layout.Groups(), len(offers))
	plan.budget, plan.group = budget, budget.group
	defer func() { answerOffers(sig, offers, plan.rest, err) }()
	var posts []coord.Post
	if posts, err = grp.Inbox(ctx, stepPostBytes); err != nil {
		return false, false, err
	}
	nPosts := len(posts)
	for _, o := range offers {
		posts = append(posts, coord.Post{Records: o.records}) // no znode to drain
	}
	w.drain(plan, posts, nPosts)
	plan.fillWindows(w.layout)
	w.settleBudget(plan, sig)
	for reason, n := range plan.drops {
		w.counters.drop(reason, n)
		w.metrics.dropped(reason, n)
	}
	step := plan.step
	if len(step.Drained) == 0 && len(step.Accept) == 0 && len(step.Move) == 0 && len(step.Drop) == 0 && step.Annex == nil && !grp.Retirable() {
		return false, false, nil // offers all dropped or duplicates: answered nil
	}
	res, err := grp.Apply(ctx, step)
	if err != nil {
		return false, false, err
	}
	w.commitStep(plan, res)
	busy = nPosts > 0 || len(offers) > 0 || len(step.Move) >= stepMaxMoves || len(step.Drop) >= stepMaxDrops
	return busy, res.Ready == nil && len(step.Move) > 0, nil
}

// answerOffers answers the offers of a step that ended with err: each with
// err when the step failed (its caller posts the records instead), else
// with nil, except those with records in rest (per offer: what the step
// had no room for), which go back to the front of the group's offers.
func answerOffers(sig *groupSignal, offers []offer, rest [][][]byte, err error) {
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
		sig.requeue(carry)
	}
}

// stepPlan is one group step being built (groupStep): the coord.Step, and
// what it changes in the owner's view once it commits.
type stepPlan struct {
	grp    *coord.Group
	group  int // grp's index
	view   *groupView
	cfg    config.Config
	groups int64 // shard groups of the crawl: quotas are per group
	budget *hostBudget

	step     coord.Step
	accepted []string       // per step.Accept: its host
	moved    []hostMove     // per host moved from: how many of its oldest pending records
	dropped  []hostMove     // per host dropped from (step.Drop): how many of its oldest pending records
	drops    map[string]int // records dropped, by reason
	rest     [][][]byte     // per offer: the records this step had no room for

	keys      map[uint64]bool  // fingerprints accepted in this step
	hostCount map[string]int64 // host -> records accepted in this step
	hostBytes map[string]int64 // host -> their raw bytes
	bytes     int64            // raw bytes accepted in this step
}

// hostMove says that a step moves the n oldest pending records of host.
type hostMove struct {
	host string
	n    int
}

func newStepPlan(grp *coord.Group, v *groupView, cfg config.Config, groups, offers int) *stepPlan {
	return &stepPlan{
		grp: grp, view: v, cfg: cfg, groups: int64(groups),
		drops: map[string]int{}, rest: make([][][]byte, offers),
		keys: map[uint64]bool{}, hostCount: map[string]int64{}, hostBytes: map[string]int64{},
	}
}

// drain adds the records of posts (the first nPosts inbox posts, then the
// offers as posts without a znode) to plan (admit). Once the step holds
// stepPostBytes, the offers' remaining records wait in plan.rest.
func (w *Worker) drain(plan *stepPlan, posts []coord.Post, nPosts int) {
	if w.layout.PolitenessKey == frontier.KeyIP { // look new names up in parallel before admit keys them
		var urls []string
		for _, p := range posts {
			for _, rec := range p.Records {
				if u, err := frontier.RecordURL(rec); err == nil {
					urls = append(urls, u)
				}
			}
		}
		w.layout.Prefetch(urls)
	}
	for i, p := range posts {
		if p.Name == "" && plan.bytes >= stepPostBytes {
			plan.rest[i-nPosts] = p.Records // an offer, and the step is full
			continue
		}
		if p.Name != "" {
			plan.step.Drained = append(plan.step.Drained, p.Name)
		}
		if p.Err != nil {
			w.log.Warn("undecodable inbox post drained", "post", p.Name, "error", p.Err) // p.Err names the group
			plan.drops[dropBad]++
			continue
		}
		for j, rec := range p.Records {
			if p.Name == "" && plan.bytes >= stepPostBytes {
				plan.rest[i-nPosts] = p.Records[j:]
				break
			}
			w.admit(plan, rec)
		}
	}
}

// admit appends rec to the step's accepted records, unless it does not
// decode, the group has seen its URL (before or in this step), or a quota
// refuses it (overQuota, logged once per host): those are counted in
// plan.drops.
func (w *Worker) admit(plan *stepPlan, rec []byte) {
	it, err := frontier.DecodeRecord(rec)
	if err != nil {
		plan.drops[dropBad]++
		return
	}
	key := frontier.Fingerprint(it.URL)
	if plan.grp.Seen(key) || plan.keys[key] {
		plan.drops[dropDuplicate]++
		return
	}
	host := w.layout.Key(it.URL)
	if reason := plan.overQuota(host, it.URL); reason != "" {
		plan.drops[reason]++
		w.logDrop(host, reason, it.URL)
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
		return dropURLLength
	case cfg.MaxPagesPerHost > 0 && cfg.HostBudgetAction == config.HostBudgetDrop && plan.budget.count(host) >= cfg.MaxPagesPerHost:
		return dropHostBudget
	case cfg.MaxQueuedPerHost > 0 && queuedHere >= cfg.MaxQueuedPerHost:
		return dropPerHost
	case cfg.MaxQueuedTotal > 0 && v.queued+int64(len(plan.accepted)) >= (cfg.MaxQueuedTotal+groups-1)/groups:
		return dropTotal
	case v.bytes+plan.bytes+8*int64(plan.grp.SeenCount()+len(plan.keys)) >= cfg.MaxFrontierBytes/groups,
		hb.bytes+plan.hostBytes[host] >= cfg.MaxFrontierBytes/groups/hostByteShare:
		return dropBytes
	}
	return ""
}

// ReadyWindow is how many ready items a group's owner keeps per politeness
// key under cfg: 4 x per_host_max_in_flight + 1. A ready item stays in the
// window from its creation until its completion multi has deleted it and
// the owner's next step has replaced it (waiting to be claimed, the claim
// round trip, the fetch, the WARC write, the fsync batch, the completion
// multi and the refill step), so by Little's law the window must hold
// per_host_max_in_flight items for that whole time, many times a fast
// fetch (docs/design.md, "Move", gives the measurement). Bound: that many
// znodes of ~100-200 B per key that has a backlog.
func ReadyWindow(cfg config.Config) int { return 4*cfg.PerHostMaxInFlight + 1 }

// fillWindows adds the moves that fill the hosts' ready windows
// (ReadyWindow items) from their oldest pending records,
// hosts with the fewest ready items first. A window is refilled once a
// third of it (at least one item) is free, so one step moves several items
// of a busy host instead of one per finished page. A step moves at most
// stepMaxMoves items and about stepMoveBytes.
func (plan *stepPlan) fillWindows(layout frontier.Layout) {
	v := plan.view
	window := ReadyWindow(plan.cfg)
	refillAt := window - max(1, window/3)
	var order []string
	for h, hb := range v.hosts {
		if len(hb.pending) > 0 && hb.ready <= refillAt && plan.budgetLeft(h) > 0 {
			order = append(order, h)
		}
	}
	sort.Slice(order, func(i, j int) bool { return v.hosts[order[i]].ready < v.hosts[order[j]].ready })
	moveBytes := 0
	for _, h := range order {
		hb := v.hosts[h]
		n := min(window-hb.ready, len(hb.pending), stepMaxMoves-len(plan.step.Move), plan.budgetLeft(h))
		for i, pr := range hb.pending[:n] {
			if moveBytes >= stepMoveBytes {
				n = i
				break
			}
			moveBytes += int(pr.bytes) + 64
			plan.move(layout, pr.ref)
		}
		if n > 0 {
			plan.moved = append(plan.moved, hostMove{h, n})
		}
		if len(plan.step.Move) >= stepMaxMoves || moveBytes >= stepMoveBytes {
			break
		}
	}
}

// move adds the move of backlog record ref to the ready queue: its item's
// JSON in its URL's shard. An undecodable record is moved as it is; the
// claim loop sends it to the dead letters.
func (plan *stepPlan) move(layout frontier.Layout, ref coord.Ref) {
	rec := plan.grp.Record(ref)
	it, err := frontier.DecodeRecord(rec)
	var data []byte
	if err == nil {
		data, err = it.Encode()
	}
	if err != nil {
		data = rec
	}
	shard := layout.ShardIn(plan.group, it.URL) // this group's shard: no second key lookup
	plan.step.Move = append(plan.step.Move, coord.Move{Ref: ref, Shard: shard, Data: data})
}

// commitStep brings the owner's view up to a committed step: moved records
// leave their hosts' pending lists and, when the reply named them, become
// known ready items (else syncReady counts them); accepted records join the
// pending lists; hosts with nothing left are forgotten.
func (w *Worker) commitStep(plan *stepPlan, res coord.StepResult) {
	v, step := plan.view, plan.step
	k := 0
	for _, m := range plan.moved {
		v.takePending(m)
		for range m.n {
			if res.Ready != nil {
				v.addReady(coord.ShardName(step.Move[k].Shard)+"/"+res.Ready[k], m.host, int64(len(step.Move[k].Data)))
			} // else: counted again by syncReady
			k++
		}
	}
	for _, d := range plan.dropped {
		v.takePending(d) // marked moved, no ready item (host budget)
	}
	for i, host := range plan.accepted {
		n := len(step.Accept[i])
		hb := v.host(host)
		hb.pending = append(hb.pending, pendingRecord{ref: res.Accepted[i], bytes: int32(n)})
		hb.bytes += int64(n)
		v.queued++
		v.bytes += int64(n)
	}
	for h, hb := range v.hosts {
		if len(hb.pending) == 0 && hb.ready <= 0 {
			delete(v.hosts, h)
		}
	}
}

// logDrop logs a dropped link once per host and reason.
func (w *Worker) logDrop(host, reason, url string) {
	key := reason + " " + host
	w.dropLogMu.Lock()
	defer w.dropLogMu.Unlock()
	if w.dropLogged == nil || len(w.dropLogged) >= dropLogCapacity {
		w.dropLogged = map[string]bool{}
	}
	if w.dropLogged[key] {
		return
	}
	w.dropLogged[key] = true
	w.log.Warn("frontier quota reached: links of this host are dropped (counted in status; logged once per host)",
		"host", host, "reason", reason, "example", url)
}

// deadLettersFull reports whether R/failed holds limit (> 0) dead letters or
// more, from a count read at most every deadLetterRecheck.
func (w *Worker) deadLettersFull(ctx context.Context, limit int64) bool {
	if limit <= 0 {
		return false
	}
	w.deadMu.Lock()
	defer w.deadMu.Unlock()
	if time.Since(w.deadAt) >= deadLetterRecheck {
		if c, err := w.queue.CountShards(ctx, nil); err == nil {
			w.deadCount, w.deadAt = int64(c.Failed), time.Now()
		}
	}
	if w.deadCount >= limit {
		return true
	}
	w.deadCount++ // this one is about to be written
	return false
}
