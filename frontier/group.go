package frontier

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/seenset"
)

// Group is the owner's handle on one shard group's compact frontier store
// (docs/design.md, "Frontier layout 2"), bound to a coord.Session like
// etcd's concurrency recipes: it holds the group's cursor as last written,
// the records of its live batches and its seen-set (seenset.Set, about 8
// bytes per key) in memory, and writes
// every change as one multi fenced by the session (Apply, through
// coord.Queue.Commit). A Group is used by one goroutine.
type Group struct {
	b     *Backlog
	sess  *coord.Session
	g     int
	st    *groupState
	watch <-chan struct{} // armed child watch on the inbox (closed once it fired or a reconnect may have lost it), nil when none
	peek  bool            // a reader, not the owner: Inbox arms no watch
	more  bool            // the last Inbox stopped at maxBytes with posts left
}

// groupState is a group as loaded from ZooKeeper.
type groupState struct {
	cur       cursorState
	version   int32
	batches   map[uint64][][]byte // live batch -> records
	rawSize   map[uint64]int      // live batch -> raw record bytes
	lastChunk []uint64            // keys of the newest seen chunk, sorted
	seen      *seenset.Set        // keys of the seen chunks and live batches, ~8 B each
}

// Ref names one record of a live batch.
type Ref struct {
	Batch uint64
	Index int
}

// Post is one inbox post as read by Inbox.
type Post struct {
	Name    string
	Records [][]byte
	Err     error // the post does not decode (the error names the post and its group): drain it (delete) and count it
}

// Move asks Apply to turn a backlog record into a ready item: a
// persistent-sequential R/queue/<Shard>/u- with Data.
type Move struct {
	Ref   Ref
	Shard int
	Data  []byte
}

// Step is one change of a group, applied as one multi by Apply: drain the
// inbox posts Drained (delete them), append Accept to the backlog (the
// caller has dropped duplicates with Seen, and whatever its quotas refuse),
// and move records to the ready window.
type Step struct {
	Drained []string
	Accept  [][]byte
	Move    []Move
	// Drop lists pending records to mark moved without creating a ready
	// item (the owner gave up on them, e.g. a host over its page budget):
	// their batches then retire as usual and their keys stay in the
	// seen-set. A Ref that names no pending record, or one also moved,
	// fails the step with ErrInvalidArgument.
	Drop []Ref
	// Annex, when not nil, replaces the owner's annex kept in the cursor
	// (Group.Annex): at most maxAnnexBytes of opaque bytes, written in the
	// same multi; an empty non-nil Annex removes it. nil keeps it.
	Annex []byte
}

// StepResult reports what Apply wrote.
type StepResult struct {
	// Ready holds the names of the ready items created, one per Move, in
	// order; nil when the commit was confirmed after connection loss (the
	// names were lost with the reply).
	Ready []string
	// Accepted holds the Ref of each record of Step.Accept, in order.
	Accepted []Ref
	// Retired counts batches whose records had all been moved, deleted and
	// folded into the seen chunks.
	Retired int
}

// Open loads group g for its owner's session sess: the cursor, every live
// batch and every seen chunk (pipelined reads). Call it when the group is
// taken over and again after Apply returned ErrVersionConflict.
//
// Errors: coord.ErrInvalidArgument; coord.ErrSessionExpired;
// coord.ErrNotInitialized when the group's znodes are missing (a crawl of
// another layout); a znode that does not decode; ZooKeeper errors after
// retries.
func (b *Backlog) Open(ctx context.Context, sess *coord.Session, g int) (*Group, error) {
	if err := b.checkGroup("Backlog.Open", g); err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, fmt.Errorf("frontier: Backlog.Open: nil session: %w", coord.ErrInvalidArgument)
	}
	if err := sess.Ctx().Err(); err != nil {
		return nil, fmt.Errorf("frontier: Backlog.Open: session %s: %w", sess, coord.ErrSessionExpired)
	}
	st, err := b.load(ctx, g)
	if err != nil {
		return nil, err
	}
	return &Group{b: b, sess: sess, g: g, st: st}, nil
}

// readCursor reads and decodes group g's cursor with its znode version.
// Errors: the store's, coord.ErrNotFound (unwrapped) for a group never
// initialized; a cursor that does not decode.
func (b *Backlog) readCursor(ctx context.Context, g int) (cursorState, int32, error) {
	data, version, err := b.q.Read(ctx, b.cursorPath(g))
	if err != nil {
		return cursorState{}, 0, err
	}
	cur, err := decodeCursor(data)
	if err != nil {
		return cursorState{}, 0, fmt.Errorf("frontier: cursor of group %s: %w", GroupName(g), err)
	}
	return cur, version, nil
}

// load reads group g's cursor, batches and seen chunks.
func (b *Backlog) load(ctx context.Context, g int) (*groupState, error) {
	cur, version, err := b.readCursor(ctx, g)
	if errors.Is(err, coord.ErrNotFound) {
		return nil, fmt.Errorf("frontier: group %s: %w", GroupName(g), coord.ErrNotInitialized)
	}
	if err != nil {
		return nil, err
	}
	st := &groupState{cur: cur, version: version, batches: map[uint64][][]byte{},
		rawSize: map[uint64]int{}}
	batchRecs := make([][][]byte, len(cur.batches))
	n, total := len(cur.batches), 0
	for _, c := range cur.chunks {
		total += min(max(c.count, 0), chunkKeys) // a hint: a chunk's decoded keys count
	}
	for _, bt := range cur.batches {
		total += bt.count
	}
	var mu sync.Mutex // seen: every chunk's keys in one array, no chunk kept but the last
	seen := make([]uint64, 0, total)
	err = parallel(ctx, n+len(cur.chunks), 32, func(ctx context.Context, i int) error {
		p := ""
		if i < n {
			p = b.batchPath(g, cur.batches[i].seq)
		} else {
			p = b.chunkPath(g, cur.chunks[i-n].seq)
		}
		d, _, err := b.q.Read(ctx, p)
		if err != nil {
			return err
		}
		if i < n {
			batchRecs[i], err = decodeRecords(d)
			if err == nil && len(batchRecs[i]) != cur.batches[i].count {
				err = fmt.Errorf("%w: %s holds %d records, the cursor says %d", errBadEncoding, p, len(batchRecs[i]), cur.batches[i].count)
			}
		} else {
			var keys []uint64
			keys, err = decodeKeys(d)
			mu.Lock()
			seen = append(seen, keys...)
			if i == n+len(cur.chunks)-1 {
				st.lastChunk = keys
			}
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("frontier: load group %s: %w", GroupName(g), err)
	}
	for i, bt := range cur.batches {
		st.batches[bt.seq] = batchRecs[i]
		for _, r := range batchRecs[i] {
			st.rawSize[bt.seq] += len(r)
			seen = append(seen, b.key(r))
		}
	}
	st.seen = seenset.New(seen)
	return st, nil
}

// Seen reports whether key is in the group's seen-set.
func (gr *Group) Seen(key uint64) bool {
	return gr.st.seen.Contains(key)
}

// SeenCount returns the size of the group's seen-set.
func (gr *Group) SeenCount() int { return gr.st.seen.Len() }

// Pending calls fn for every record not yet moved to the ready window, in
// arrival order (oldest batch first).
func (gr *Group) Pending(fn func(ref Ref, record []byte)) {
	for _, bt := range gr.st.cur.batches {
		recs := gr.st.batches[bt.seq]
		for i, r := range recs {
			if !bt.isMoved(i) {
				fn(Ref{Batch: bt.seq, Index: i}, r)
			}
		}
	}
}

// Record returns the record ref names, or nil when ref names no record of
// a live batch.
func (gr *Group) Record(ref Ref) []byte {
	recs := gr.st.batches[ref.Batch]
	if ref.Index < 0 || ref.Index >= len(recs) {
		return nil
	}
	return recs[ref.Index]
}

// Retirable reports whether a live batch has all its records moved, so
// that an Apply with an empty Step would retire it into the seen chunks.
func (gr *Group) Retirable() bool {
	for _, bt := range gr.st.cur.batches {
		if bt.allMoved() {
			return true
		}
	}
	return false
}

// inboxDue reports whether Inbox may find posts it has not returned yet:
// no watch is armed, the armed watch fired or a reconnect happened since
// it was armed (then the watch is dropped: the next listing arms a new
// one), or the last Inbox call left posts unread.
func (gr *Group) inboxDue() bool {
	if gr.watch != nil {
		select {
		case <-gr.watch:
			gr.watch = nil // fired: re-armed by the next listing
		default:
		}
	}
	return gr.watch == nil || gr.more
}

// InboxEvent returns a channel that is closed when the inbox's children
// change after the last Inbox call (or a reconnect may have lost the
// watch); nil before the first. One child watch is armed at a time,
// re-armed only after it fired.
func (gr *Group) InboxEvent() <-chan struct{} { return gr.watch }

// Inbox returns the group's oldest inbox posts, in sequence order, at most
// about maxBytes of post data plus their decoded records (at least one
// post), so a step that accepts them all stays small. It lists the inbox
// (arming a child watch if none is armed) only when there may be posts it
// has not returned: otherwise it returns none at once, so the owner may
// call it at every step. A post that does not decode is returned with Err
// set, so the caller drains it.
func (gr *Group) Inbox(ctx context.Context, maxBytes int) ([]Post, error) {
	if !gr.inboxDue() {
		return nil, nil
	}
	names, err := gr.listInbox(ctx)
	if err != nil {
		return nil, fmt.Errorf("frontier: inbox of group %s: %w", GroupName(gr.g), err)
	}
	var out []Post
	read := 0
	gr.more = false
	for len(names) > 0 && read < maxBytes {
		// 8 posts first, then as many as the budget left holds at the
		// mean size read so far (at most inboxReadsAtOnce): a backlog of
		// small posts (links from many workers to a group while it changed
		// owners) is read in a few round trips, not one per 8 posts.
		n := min(len(names), 8)
		if len(out) > 0 {
			n = min(len(names), inboxReadsAtOnce, max(1, (maxBytes-read)/max(1, read/len(out))))
		}
		batch, sizes, err := gr.readPosts(ctx, names[:n])
		if err != nil {
			return nil, fmt.Errorf("frontier: inbox of group %s: %w", GroupName(gr.g), err)
		}
		taken := 0
		for i, po := range batch {
			if po.Name != "" && len(out) > 0 && read+sizes[i] > maxBytes {
				break // over the budget: left for the next call
			}
			taken = i + 1
			if po.Name != "" {
				out = append(out, po)
				read += sizes[i]
			}
		}
		names = names[taken:]
		if taken < n {
			break
		}
	}
	gr.more = len(names) > 0
	return out, nil
}

// inboxReadsAtOnce bounds the posts Inbox reads in one round trip.
const inboxReadsAtOnce = 64

// listInbox returns the inbox's post names in sequence order, arming a
// child watch unless one stands (or the Group only peeks).
func (gr *Group) listInbox(ctx context.Context) ([]string, error) {
	arm := gr.watch == nil && !gr.peek
	names, ev, err := gr.b.q.List(ctx, gr.b.inboxPath(gr.g), arm)
	if err == nil && arm {
		gr.watch = ev
	}
	return names, err
}

// readPosts reads and decodes the named posts (pipelined). A post drained
// by someone else meanwhile comes back with Name "". sizes[i] is post i's
// data plus its decoded records: what it takes once accepted.
func (gr *Group) readPosts(ctx context.Context, names []string) (posts []Post, sizes []int, err error) {
	p := gr.b.inboxPath(gr.g)
	posts, sizes = make([]Post, len(names)), make([]int, len(names))
	err = parallel(ctx, len(names), len(names), func(ctx context.Context, i int) error {
		d, _, err := gr.b.q.Read(ctx, p+"/"+names[i])
		if errors.Is(err, coord.ErrNotFound) {
			return nil // drained by someone else meanwhile
		}
		if err != nil {
			return err
		}
		posts[i].Name = names[i]
		if posts[i].Records, err = decodeRecords(d); err != nil {
			posts[i].Err = fmt.Errorf("post %s of group %s: %w", names[i], GroupName(gr.g), err)
		}
		sizes[i] = len(d)
		for _, r := range posts[i].Records {
			sizes[i] += len(r)
		}
		return nil
	})
	return posts, sizes, err
}

// Apply writes one step as one multi: check(session fence),
// setData(cursor, version), then the backlog appends (setData of the newest
// batch or create of new ones), the ready creates of the moves, the
// retirement of batches whose records are all moved (delete, keys merged
// into the newest seen chunk or a new one) and the deletes of the drained
// posts. Appends, moves and drains all commit or none does.
//
// After connection loss the cursor is read back: the step's nonce there
// means it committed (StepResult.Ready is then nil); the old version means
// it did not, and it is sent again.
//
// Errors: coord.ErrSessionExpired (the fence failed; nothing written);
// coord.ErrVersionConflict (another process wrote the group's cursor since
// this Group loaded it: a second owner during a handoff, or an earlier step
// of ours whose outcome was lost and then overtaken; nothing written: Open
// again); coord.ErrInvalidArgument (a Move names no pending record); ctx
// errors and connection loss after retries (outcome unknown: Open again).
func (gr *Group) Apply(ctx context.Context, s Step) (res StepResult, err error) {
	where := "frontier: Group.Apply " + GroupName(gr.g)
	p, err := gr.plan(s)
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	settled := false
	names, err := gr.b.q.Commit(ctx, "group_step", gr.sess, p.ops, func(ctx context.Context) (bool, error) {
		committed, err := gr.settle(ctx, p)
		settled = committed
		return committed || err != nil, err
	})
	switch {
	case err == nil && settled:
		res = gr.commit(p, nil)
	case err == nil:
		res = gr.commit(p, names)
	case errors.Is(err, coord.ErrNotFound) && !errors.Is(err, coord.ErrSessionExpired):
		// A batch or chunk of the cursor we loaded is gone: another owner.
		err = fmt.Errorf("%w: group changed by another owner: %w", err, coord.ErrVersionConflict)
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	return res, nil
}

// writePlan is a Step turned into one multi, with what the group's state
// becomes once it commits.
type writePlan struct {
	step      Step
	ops       []coord.Op
	next      cursorState         // the cursor written
	newRecs   map[uint64][][]byte // batch -> its records after the appends
	newSize   map[uint64]int      // batch -> raw bytes appended
	touched   map[uint64]bool     // batches appended to
	created   []uint64            // batches created
	accepted  []Ref               // where each accepted record went
	retired   []uint64            // batches retired
	lastChunk []uint64            // keys of the newest seen chunk afterwards
}

// plan builds the multi of step s (Apply's doc): the cursor write first
// (coord.Queue.Commit puts the fence check before it), then appends,
// moves, retirement and drains. Errors: coord.ErrInvalidArgument for a
// Move of no pending record.
func (gr *Group) plan(s Step) (*writePlan, error) {
	p := &writePlan{step: s, next: gr.st.cur.clone(), newRecs: map[uint64][][]byte{},
		newSize: map[uint64]int{}, touched: map[uint64]bool{}, lastChunk: gr.st.lastChunk}
	p.next.nonce = rand.Uint64()
	gr.planAppends(p)
	if err := gr.planMoves(p); err != nil {
		return nil, err
	}
	if err := p.next.applyDropAnnex(s); err != nil {
		return nil, err
	}
	gr.planRetirement(p)
	for _, name := range s.Drained {
		p.ops = append(p.ops, coord.Op{Kind: coord.OpDelete, Path: gr.b.inboxPath(gr.g) + "/" + name, Version: -1})
	}
	p.ops = append([]coord.Op{
		{Kind: coord.OpSet, Path: gr.b.cursorPath(gr.g), Data: encodeCursor(p.next), Version: gr.st.version},
	}, p.ops...)
	return p, nil
}

// planAppends appends the accepted records to the newest batch while it
// holds less than batchRawBytes of raw records, to new batches beyond:
// setData of a batch appended to (raw while it is open, flate once it is
// full), create of a new one.
func (gr *Group) planAppends(p *writePlan) {
	st, b, g := gr.st, gr.b, gr.g
	for _, r := range p.step.Accept {
		var last *batchState
		if k := len(p.next.batches); k > 0 {
			last = &p.next.batches[k-1]
		}
		if last == nil || st.rawSize[last.seq]+p.newSize[last.seq] >= batchRawBytes {
			p.next.batches = append(p.next.batches, batchState{seq: p.next.nextBatch})
			p.next.nextBatch++
			last = &p.next.batches[len(p.next.batches)-1]
			p.created = append(p.created, last.seq)
		}
		if _, ok := p.newRecs[last.seq]; !ok {
			p.newRecs[last.seq] = slices.Clone(st.batches[last.seq])
		}
		p.newRecs[last.seq] = append(p.newRecs[last.seq], r)
		p.newSize[last.seq] += len(r)
		last.grow(len(p.newRecs[last.seq]))
		p.accepted = append(p.accepted, Ref{Batch: last.seq, Index: len(p.newRecs[last.seq]) - 1})
		p.touched[last.seq] = true
	}
	for seq := range p.touched {
		full := st.rawSize[seq]+p.newSize[seq] >= batchRawBytes
		data := encodeBatch(p.newRecs[seq], full)
		if slices.Contains(p.created, seq) {
			p.ops = append(p.ops, coord.Op{Kind: coord.OpCreate, Path: b.batchPath(g, seq), Data: data})
		} else {
			p.ops = append(p.ops, coord.Op{Kind: coord.OpSet, Path: b.batchPath(g, seq), Data: data, Version: -1})
		}
	}
}

// planMoves creates a ready item per Move and marks its record moved.
func (gr *Group) planMoves(p *writePlan) error {
	for _, m := range p.step.Move {
		if err := p.next.markMoved(m.Ref, "move"); err != nil {
			return err
		}
		p.ops = append(p.ops, coord.Op{Kind: coord.OpReady, Shard: m.Shard, Data: m.Data})
	}
	return nil
}

// markMoved marks record r of next moved (what: "move" or "drop", for the
// error). Errors wrap ErrInvalidArgument when r names no pending record.
func (next *cursorState) markMoved(r Ref, what string) error {
	i := slices.IndexFunc(next.batches, func(bt batchState) bool { return bt.seq == r.Batch })
	if i < 0 || r.Index < 0 || r.Index >= next.batches[i].count || next.batches[i].isMoved(r.Index) {
		return fmt.Errorf("%s of %v: no such pending record: %w", what, r, coord.ErrInvalidArgument)
	}
	next.batches[i].setMoved(r.Index)
	return nil
}

// planRetirement deletes the batches whose records are all moved (and
// that this step did not append to) and folds their keys into the seen
// chunks.
func (gr *Group) planRetirement(p *writePlan) {
	keep := p.next.batches[:0]
	var fold []uint64
	for _, bt := range p.next.batches {
		if p.touched[bt.seq] || !bt.allMoved() {
			keep = append(keep, bt)
			continue
		}
		p.retired = append(p.retired, bt.seq)
		for _, r := range gr.st.batches[bt.seq] {
			if gr.b.folds == nil || gr.b.folds(r) {
				fold = append(fold, gr.b.key(r))
			}
		}
		p.ops = append(p.ops, coord.Op{Kind: coord.OpDelete, Path: gr.b.batchPath(gr.g, bt.seq), Version: -1})
	}
	p.next.batches = keep
	slices.Sort(fold)
	gr.planFold(p, slices.Compact(fold))
}

// planFold merges sorted keys into the newest seen chunk while it holds
// fewer than chunkKeys, and into new chunks beyond.
func (gr *Group) planFold(p *writePlan, fold []uint64) {
	b, g := gr.b, gr.g
	for len(fold) > 0 {
		k := len(p.next.chunks)
		if k > 0 && len(p.lastChunk) < chunkKeys {
			n := min(chunkKeys-len(p.lastChunk), len(fold))
			merged := append(slices.Clone(p.lastChunk), fold[:n]...)
			slices.Sort(merged)
			merged = slices.Compact(merged)
			p.ops = append(p.ops, coord.Op{Kind: coord.OpSet, Path: b.chunkPath(g, p.next.chunks[k-1].seq), Data: encodeKeys(merged), Version: -1})
			p.next.chunks[k-1].count = len(merged)
			p.lastChunk, fold = merged, fold[n:]
			continue
		}
		n := min(chunkKeys, len(fold))
		p.lastChunk = slices.Clone(fold[:n])
		p.ops = append(p.ops, coord.Op{Kind: coord.OpCreate, Path: b.chunkPath(g, p.next.nextChunk), Data: encodeKeys(p.lastChunk)})
		p.next.chunks = append(p.next.chunks, chunkState{seq: p.next.nextChunk, count: n})
		p.next.nextChunk++
		fold = fold[n:]
	}
}

// commit makes the group's state what p wrote and reports it. names is
// the commit's per-op names (coord.Queue.Commit), nil when the commit was
// learnt by reading back (the ready items' names are then unknown).
func (gr *Group) commit(p *writePlan, names []string) StepResult {
	st := gr.st
	for seq, recs := range p.newRecs {
		st.batches[seq] = recs
		st.rawSize[seq] += p.newSize[seq]
	}
	for _, r := range p.step.Accept {
		st.seen.Add(gr.b.key(r))
	}
	for _, seq := range p.retired {
		delete(st.batches, seq)
		delete(st.rawSize, seq)
	}
	st.cur, st.version, st.lastChunk = p.next, st.version+1, p.lastChunk
	out := StepResult{Retired: len(p.retired), Accepted: p.accepted}
	if names != nil {
		for i, o := range p.ops {
			if o.Kind == coord.OpReady {
				out.Ready = append(out.Ready, names[i])
			}
		}
	}
	return out
}

// settle learns the outcome of a step whose reply was lost by reading the
// cursor back: our nonce at the next version means it committed; another
// version means another process wrote (ErrVersionConflict); the old version
// means it did not commit (send it again).
func (gr *Group) settle(ctx context.Context, p *writePlan) (committed bool, err error) {
	data, version, err := gr.b.q.Read(ctx, gr.b.cursorPath(gr.g))
	switch {
	case err != nil:
		return false, fmt.Errorf("outcome unknown: %w", err)
	case version == gr.st.version+1:
		if have, derr := decodeCursor(data); derr == nil && have.nonce == p.next.nonce {
			return true, nil
		}
	case version == gr.st.version:
		return false, nil
	}
	return false, fmt.Errorf("cursor at version %d, had %d: group changed by another owner: %w", version, gr.st.version, coord.ErrVersionConflict)
}
