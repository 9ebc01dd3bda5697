package frontier

import (
	"container/heap"
	"context"
	"encoding/binary"
	"math/bits"
	"time"
)

// The owner's recrawl schedule of a group (docs/design.md, "Recrawl"): a
// backlog record with a prev field is a schedule entry, kept unmoved until
// it is due (its capture time plus its adapted interval), then moved to
// the ready window by the same step code as a new URL's record.

// dueEntry is one schedule entry in the owner's model.
type dueEntry struct {
	due      int64 // Unix seconds
	interval int64 // the adapted interval that makes it due, seconds
	capture  int64 // its capture time, Unix seconds: the newest wins
	key      uint64
	ref      Ref
	bytes    int32
	host     string
	index    int // in its host's heap
}

// dueHeap is one host's entries, earliest due first (ties: older ref).
type dueHeap []*dueEntry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.due != b.due {
		return a.due < b.due
	}
	if a.ref.Batch != b.ref.Batch {
		return a.ref.Batch < b.ref.Batch
	}
	return a.ref.Index < b.ref.Index
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *dueHeap) Push(x any)   { e := x.(*dueEntry); e.index = len(*h); *h = append(*h, e) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// dueNow reports whether the host's earliest entry is due at now (Unix s).
func (hb *hostBacklog) dueNow(now int64) bool { return len(hb.due) > 0 && hb.due[0].due <= now }

// schedState is a group's schedule in the owner's model.
type schedState struct {
	policy  *schedPolicy
	entries map[uint64]*dueEntry // key -> its pending entry
	minutes map[int64]int64      // due minute -> entries
	batch   map[uint64]int       // live batch -> its pending entries
	dirty   bool                 // changed since the summary was last written
	stale   []Ref                // duplicate entries found at load: dropped by the next step
}

func newSchedState() *schedState {
	return &schedState{entries: map[uint64]*dueEntry{}, minutes: map[int64]int64{}, batch: map[uint64]int{}, dirty: true}
}

// dueMinute is the summary's minute of a due time: rounded up.
func dueMinute(due int64) int64 { return (max(due, 0) + 59) / 60 }

// addEntry puts e into the model: its host's heap, the key index, the
// counts, the queued records and bytes.
func (v *ownedGroup) addEntry(e *dueEntry) {
	s := v.sched
	hb := v.host(e.host)
	defer v.track(hb, hb.busy())
	heap.Push(&hb.due, e)
	s.entries[e.key] = e
	s.minutes[dueMinute(e.due)]++
	s.batch[e.ref.Batch]++
	s.dirty = true
	v.queued++
	v.bytes += int64(e.bytes)
	hb.bytes += int64(e.bytes)
}

// removeEntry takes e out of the model (moved, superseded or compacted).
func (v *ownedGroup) removeEntry(e *dueEntry) {
	s := v.sched
	hb := v.host(e.host)
	defer v.track(hb, hb.busy())
	heap.Remove(&hb.due, e.index)
	if s.entries[e.key] == e {
		delete(s.entries, e.key)
	}
	if m := dueMinute(e.due); s.minutes[m] > 1 {
		s.minutes[m]--
	} else {
		delete(s.minutes, m)
	}
	if s.batch[e.ref.Batch] > 1 {
		s.batch[e.ref.Batch]--
	} else {
		delete(s.batch, e.ref.Batch)
	}
	s.dirty = true
	v.queued--
	v.bytes -= int64(e.bytes)
	hb.bytes -= int64(e.bytes)
}

// loadEntry adds a pending record with a prev field found at load: a
// second entry of a key keeps the newer capture and sends the other to
// the next step's drops.
func (v *ownedGroup) loadEntry(host string, ref Ref, rec []byte) {
	it, err := DecodeRecord(rec)
	if err != nil || it.Prev == nil {
		return
	}
	e := v.sched.entry(it, host, ref, len(rec))
	if old := v.sched.entries[e.key]; old != nil {
		if old.capture >= e.capture {
			v.sched.stale = append(v.sched.stale, ref)
			return
		}
		v.removeEntry(old)
		v.sched.stale = append(v.sched.stale, old.ref)
	}
	v.addEntry(e)
}

// entry returns the model of schedule entry it (record of n bytes at ref).
func (s *schedState) entry(it Item, host string, ref Ref, n int) *dueEntry {
	due, iv := s.policy.due(it)
	return &dueEntry{due: due, interval: iv, capture: it.Prev.LastFetch().Unix(), key: Fingerprint(it.URL), ref: ref, bytes: int32(n), host: host}
}

// recordHasPrev reports whether a record carries a prev field, walking
// its fields without decoding them.
func recordHasPrev(rec []byte) bool {
	off := 0
	for i := range 4 { // depth, attempts, then the url and via lengths and bytes
		n, k := binary.Uvarint(rec[off:])
		if k <= 0 {
			return false
		}
		off += k
		if i >= 2 {
			if n > uint64(len(rec)-off) {
				return false
			}
			off += int(n)
		}
	}
	for off < len(rec) {
		tag := rec[off]
		off++
		switch tag {
		case recHops, recLastmod:
			n, k := binary.Uvarint(rec[off:])
			if k <= 0 || n > uint64(len(rec)-off-k) {
				return false
			}
			off += k + int(n)
		case recPriority:
			off += 8
		case recPrev:
			return true
		default:
			return false
		}
	}
	return false
}

// liveBatch is one live batch's counts (Group.liveBatches).
type liveBatch struct {
	seq            uint64
	count, pending int
}

// liveBatches returns the live batches for which want is true, oldest
// first, with their record and pending (unmoved) counts, and the sequence
// number of the newest live batch.
func (gr *Group) liveBatches(want func(seq uint64) bool) (out []liveBatch, newest uint64) {
	for _, bt := range gr.st.cur.batches {
		newest = bt.seq
		if !want(bt.seq) {
			continue
		}
		moved := 0
		for _, b := range bt.moved[:(bt.count+7)/8] {
			moved += bits.OnesCount8(b)
		}
		out = append(out, liveBatch{seq: bt.seq, count: bt.count, pending: bt.count - moved})
	}
	return out, newest
}

// admitEntry judges schedule entry it (record rec) in a step: a later
// fetch (Capture.LastFetch) of a URL with a pending entry replaces it (the old one is
// dropped in the same multi), an earlier or equal one is a duplicate; a
// URL the group has not seen gets the fold mark, so its key joins the seen
// chunks when its batch retires. Only max_frontier_bytes refuses entries.
func (o *Owner) admitEntry(plan *stepPlan, rec []byte, it Item) {
	key := Fingerprint(it.URL)
	v, s := plan.view, plan.view.sched
	capture := it.Prev.LastFetch().Unix()
	if i, ok := plan.entryIdx[key]; ok { // an entry of this step: keep the newer
		pe := &plan.entries[i]
		if pe.capture >= capture {
			plan.drops[DropDuplicate]++
			return
		}
		if marked, err := it.record(pe.fold); err == nil {
			rec = marked
		}
		plan.bytes += int64(len(rec)) - int64(len(plan.step.Accept[pe.accept]))
		plan.step.Accept[pe.accept] = rec
		*pe.dueEntry = *s.entry(it, pe.host, Ref{}, len(rec))
		plan.drops[DropDuplicate]++
		return
	}
	host := o.layout.Key(it.URL)
	hb := v.host(host)
	cfg, groups := plan.cfg, plan.groups
	if v.bytes+plan.bytes+8*int64(plan.grp.SeenCount()+len(plan.keys)) >= cfg.MaxFrontierBytes/groups ||
		hb.bytes+plan.hostBytes[host] >= cfg.MaxFrontierBytes/groups/hostByteShare {
		plan.drops[DropBytes]++
		o.logDrop(host, DropBytes, it.URL)
		return
	}
	if old := s.entries[key]; old != nil {
		if old.capture >= capture {
			plan.drops[DropDuplicate]++
			return
		}
		plan.step.Drop = append(plan.step.Drop, old.ref)
		v.removeEntry(old) // a failed step reloads the model
	}
	fold := !plan.grp.Seen(key) && !plan.keys[key]
	if fold {
		if marked, err := it.record(true); err == nil {
			rec = marked
		}
	}
	plan.keys[key] = true
	e := s.entry(it, host, Ref{}, len(rec))
	plan.entryIdx[key] = len(plan.entries)
	plan.entries = append(plan.entries, plannedEntry{accept: len(plan.step.Accept), fold: fold, dueEntry: e})
	plan.hostBytes[host] += int64(len(rec))
	plan.step.Accept = append(plan.step.Accept, rec)
	plan.accepted = append(plan.accepted, host)
	plan.bytes += int64(len(rec))
}

// plannedEntry is a schedule entry a step accepts: its place in
// Step.Accept and its model (ref filled in at commit).
type plannedEntry struct {
	accept int
	fold   bool // marked: the URL was new to the group
	*dueEntry
}

// compactEntries adds to the step, when it has room, the rewrite of the
// oldest live batch (not the newest) whose pending records are all
// schedule entries and fewer than half its records: each is accepted
// again (without the fold mark: the old batch's retirement folds the
// marked keys) and dropped from the old batch, which then retires. So
// batches of mostly moved entries cannot pile up.
func (o *Owner) compactEntries(plan *stepPlan) {
	v, s := plan.view, plan.view.sched
	if len(s.batch) == 0 || plan.bytes >= stepPostBytes/2 || len(plan.step.Drop) > stepMaxDrops/2 {
		return
	}
	live, newest := plan.grp.liveBatches(func(seq uint64) bool { return s.batch[seq] > 0 })
	for _, lb := range live {
		if lb.seq == newest {
			break
		}
		n := s.batch[lb.seq]
		if n == 0 || n != lb.pending || 2*n >= lb.count || n > stepMaxDrops/2 {
			continue
		}
		var moving []*dueEntry
		for _, e := range s.entries {
			if e.ref.Batch == lb.seq {
				moving = append(moving, e)
			}
		}
		for _, e := range moving {
			rec, err := SetRecordFold(plan.grp.Record(e.ref), false)
			if err != nil {
				continue
			}
			v.removeEntry(e)
			plan.step.Drop = append(plan.step.Drop, e.ref)
			ne := *e
			ne.bytes = int32(len(rec))
			plan.entries = append(plan.entries, plannedEntry{accept: len(plan.step.Accept), dueEntry: &ne})
			plan.step.Accept = append(plan.step.Accept, rec)
			plan.accepted = append(plan.accepted, e.host)
			plan.bytes += int64(len(rec))
		}
		return
	}
}

// reschedule recomputes every entry's due time under policy p (the
// recrawl keys of the config changed: rules, bounds or a `crawlctl
// recrawl --now` request).
func (v *ownedGroup) reschedule(p *schedPolicy) {
	s := v.sched
	s.policy = p
	for _, e := range s.entries {
		it, err := DecodeRecord(v.grp.Record(e.ref))
		if err != nil || it.Prev == nil {
			continue
		}
		ne := s.entry(it, e.host, e.ref, int(e.bytes))
		if ne.due == e.due && ne.interval == e.interval {
			continue
		}
		v.removeEntry(e)
		v.addEntry(ne)
	}
}

// takeDue pops host hb's earliest entry if it is due at now.
func (v *ownedGroup) takeDue(hb *hostBacklog, now int64) *dueEntry {
	if !hb.dueNow(now) {
		return nil
	}
	e := hb.due[0]
	v.removeEntry(e)
	return e
}

// summary returns the schedule as it will be once the step commits: the
// model (moves and drops already taken out) plus the step's entries.
func (plan *stepPlan) summary() ScheduleSummary {
	s := plan.view.sched
	entries, next := int64(len(s.entries)), int64(-1)
	var extra map[int64]int64
	if len(plan.entries) > 0 {
		extra = make(map[int64]int64, len(plan.entries))
		for _, pe := range plan.entries {
			extra[dueMinute(pe.due)]++
			entries++
			if next < 0 || pe.due < next {
				next = pe.due
			}
		}
	}
	for _, hb := range plan.view.hosts {
		if len(hb.due) > 0 && (next < 0 || hb.due[0].due < next) {
			next = hb.due[0].due
		}
	}
	sum := summarize(s.minutes, extra, entries, max(next, 0))
	sum.Policy = s.policy.stamp
	return sum
}

// nextDue returns when the group's earliest entry that is not due yet
// falls due (zero time: none), for the loop's timer.
func (v *ownedGroup) nextDue(now int64) time.Time {
	next := int64(-1)
	for _, hb := range v.hosts {
		if len(hb.due) > 0 && hb.due[0].due > now && (next < 0 || hb.due[0].due < next) {
			next = hb.due[0].due
		}
	}
	if next < 0 {
		return time.Time{}
	}
	return time.Unix(next, 0)
}

// ScheduleEntries calls fn with every recrawl schedule entry waiting in
// the crawl's backlogs (an Item with Prev), one group at a time (each
// group's batches are read, without a session and without ownership); the
// entries of posts not yet drained and of URLs now in the ready window are
// not included. `seeder --revisit-from` reads an old crawl with it. It
// stops at fn's first error and returns it. Errors: ZooKeeper errors after
// retries; a znode that does not decode; fn's.
func (f *Frontier) ScheduleEntries(ctx context.Context, fn func(Item) error) error {
	for g := 0; g < f.b.groups; g++ {
		st, err := f.b.load(ctx, g)
		if err != nil {
			return err
		}
		gr := &Group{b: f.b, g: g, st: st, peek: true}
		var ferr error
		gr.Pending(func(_ Ref, rec []byte) {
			if ferr != nil || !recordHasPrev(rec) {
				return
			}
			if it, err := DecodeRecord(rec); err == nil {
				ferr = fn(it)
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}
