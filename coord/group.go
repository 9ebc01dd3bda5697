package coord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrGroupMoved means another process wrote the group's cursor since this
// Group loaded it (a second owner during a handoff, or an earlier step of
// ours whose outcome was lost and then overtaken): nothing of the failed
// step was written. Open the group again and redo the work.
var ErrGroupMoved = errors.New("coord: shard group changed by another owner")

// Group is the owner's handle on one shard group's compact frontier store
// (docs/design.md, "Frontier layout 2"), bound to a Session like etcd's
// concurrency recipes: it holds the group's cursor as last written, the
// records of its live batches and its seen-set in memory, and writes every
// change as one fenced multi (Apply). A Group is used by one goroutine.
type Group struct {
	b       *Backlog
	sess    *Session
	g       int
	fence   string
	st      *groupState
	watch   <-chan zk.Event // armed child watch on the inbox, nil when none
	watchAt <-chan struct{} // reconnect epoch when the watch was armed
	peek    bool            // a reader, not the owner: Inbox arms no watch
	more    bool            // the last Inbox stopped at maxBytes with posts left
}

// groupState is a group as loaded from ZooKeeper.
type groupState struct {
	cur       cursorState
	version   int32
	batches   map[uint64][][]byte // live batch -> records
	rawSize   map[uint64]int      // live batch -> raw record bytes
	lastChunk []uint64            // keys of the newest seen chunk, sorted
	seen      map[uint64]struct{}
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
	Err     error // the post does not decode: drain it (delete) and count it
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
	// (Group.Annex): at most MaxAnnexBytes of opaque bytes, written in the
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
// taken over and again after ErrGroupMoved.
//
// Errors: ErrInvalidArgument; ErrSessionExpired; ErrNotInitialized when the
// group's znodes are missing (a crawl of another layout); a znode that does
// not decode; ZooKeeper errors after retries.
func (b *Backlog) Open(ctx context.Context, sess *Session, g int) (*Group, error) {
	if err := b.checkGroup("Backlog.Open", g); err != nil {
		return nil, err
	}
	fence, err := b.q.fence(ctx, sess)
	if err != nil {
		return nil, err
	}
	st, err := b.load(ctx, g)
	if err != nil {
		return nil, err
	}
	return &Group{b: b, sess: sess, g: g, fence: fence, st: st}, nil
}

// load reads group g's cursor, batches and seen chunks.
func (b *Backlog) load(ctx context.Context, g int) (*groupState, error) {
	var data []byte
	var stat *zk.Stat
	err := Retry(ctx, b.q.c.retry, func(ctx context.Context) error {
		var err error
		data, stat, err = b.q.c.get(ctx, b.cursorPath(g))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: group %s of %s: %w", GroupName(g), b.q.name, ErrNotInitialized)
	}
	if err != nil {
		return nil, err
	}
	cur, err := decodeCursor(data)
	if err != nil {
		return nil, fmt.Errorf("coord: cursor of group %s: %w", GroupName(g), err)
	}
	st := &groupState{cur: cur, version: stat.Version, batches: map[uint64][][]byte{},
		rawSize: map[uint64]int{}, seen: map[uint64]struct{}{}}
	batchRecs := make([][][]byte, len(cur.batches))
	chunkKeys := make([][]uint64, len(cur.chunks))
	n := len(cur.batches)
	err = parallel(ctx, n+len(cur.chunks), 32, func(ctx context.Context, i int) error {
		p := ""
		if i < n {
			p = b.batchPath(g, cur.batches[i].seq)
		} else {
			p = b.chunkPath(g, cur.chunks[i-n].seq)
		}
		var d []byte
		if err := Retry(ctx, b.q.c.retry, func(ctx context.Context) error {
			var err error
			d, _, err = b.q.c.get(ctx, p)
			return err
		}); err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		var err error
		if i < n {
			batchRecs[i], err = decodeRecords(d)
			if err == nil && len(batchRecs[i]) != cur.batches[i].count {
				err = fmt.Errorf("%w: %s holds %d records, the cursor says %d", errBadEncoding, p, len(batchRecs[i]), cur.batches[i].count)
			}
		} else {
			chunkKeys[i-n], err = decodeKeys(d)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("coord: load group %s: %w", GroupName(g), err)
	}
	for i, bt := range cur.batches {
		st.batches[bt.seq] = batchRecs[i]
		for _, r := range batchRecs[i] {
			st.rawSize[bt.seq] += len(r)
			st.seen[b.key(r)] = struct{}{}
		}
	}
	for i, keys := range chunkKeys {
		for _, k := range keys {
			st.seen[k] = struct{}{}
		}
		if i == len(chunkKeys)-1 {
			st.lastChunk = keys
		}
	}
	return st, nil
}

// Index returns the group's index.
func (gr *Group) Index() int { return gr.g }

// Session returns the session the group is bound to.
func (gr *Group) Session() *Session { return gr.sess }

// Seen reports whether key is in the group's seen-set.
func (gr *Group) Seen(key uint64) bool {
	_, ok := gr.st.seen[key]
	return ok
}

// SeenCount returns the size of the group's seen-set.
func (gr *Group) SeenCount() int { return len(gr.st.seen) }

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

// InboxDue reports whether Inbox may find posts it has not returned yet:
// no watch is armed, the armed watch fired, a reconnect happened since it
// was armed, or the last Inbox call left posts unread. When it is false the
// owner can skip listing the inbox.
func (gr *Group) InboxDue() bool {
	if gr.watch == nil || gr.more {
		return true
	}
	select {
	case <-gr.watch:
		gr.watch = nil // fired: re-armed by the next Inbox
		return true
	case <-gr.watchAt:
		gr.watch = nil
		return true
	default:
		return false
	}
}

// InboxEvent returns a channel that receives an event when the inbox's
// children change after the last Inbox call (nil before the first). One
// child watch is armed at a time, re-armed only after it fired.
func (gr *Group) InboxEvent() <-chan zk.Event { return gr.watch }

// Inbox lists the group's inbox (arming a child watch if none is armed)
// and returns its oldest posts, in sequence order, at most about maxBytes
// of post data plus their decoded records (at least one post), so a step
// that accepts them all stays small. A post that does not decode is returned with Err set,
// so the caller drains it.
func (gr *Group) Inbox(ctx context.Context, maxBytes int) ([]Post, error) {
	c := gr.b.q.c
	armed := gr.watch != nil || gr.peek
	if gr.watch != nil {
		select {
		case <-gr.watch:
			armed = false
		case <-gr.watchAt:
			armed = false // a reconnect may have lost it
		default:
		}
	}
	var names []string
	p := gr.b.inboxPath(gr.g)
	err := Retry(ctx, c.retry, func(ctx context.Context) error {
		var err error
		if armed {
			names, _, err = c.children(ctx, p)
			return err
		}
		epoch := c.reconnected()
		var ev <-chan zk.Event
		names, _, ev, err = c.childrenW(ctx, p)
		if err == nil {
			gr.watch, gr.watchAt = ev, epoch
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("coord: inbox of group %s: %w", GroupName(gr.g), err)
	}
	sort.Slice(names, func(i, j int) bool { return itemSeq(names[i]) < itemSeq(names[j]) })
	var out []Post
	read := 0
	gr.more = false
	for len(names) > 0 && read < maxBytes {
		n := min(len(names), 8)
		batch := make([]Post, n)
		sizes := make([]int, n)
		err := parallel(ctx, n, n, func(ctx context.Context, i int) error {
			batch[i].Name = names[i]
			var d []byte
			err := Retry(ctx, c.retry, func(ctx context.Context) error {
				var err error
				d, _, err = c.get(ctx, p+"/"+names[i])
				return err
			})
			if errors.Is(err, zk.ErrNoNode) {
				batch[i].Name = "" // drained by someone else meanwhile
				return nil
			}
			if err != nil {
				return err
			}
			batch[i].Records, batch[i].Err = decodeRecords(d)
			sizes[i] = len(d)
			for _, r := range batch[i].Records {
				sizes[i] += len(r) // what the records take once accepted
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("coord: inbox of group %s: %w", GroupName(gr.g), err)
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
// Errors: ErrSessionExpired (the fence failed; nothing written);
// ErrGroupMoved (another process wrote the group; nothing written: Open
// again); ErrInvalidArgument (a Move names no pending record); ctx errors
// and connection loss after retries (outcome unknown: Open again).
func (gr *Group) Apply(ctx context.Context, s Step) (res StepResult, err error) {
	defer gr.b.q.c.observed("group_step", time.Now(), &err)
	st := gr.st
	next := st.cur.clone()
	next.nonce = rand.Uint64()
	b, g := gr.b, gr.g
	var ops []any
	add := func(op any) { ops = append(ops, op) }

	// Appends.
	touched := map[uint64]bool{}
	newRecs := map[uint64][][]byte{}
	newSize := map[uint64]int{}
	var created []uint64
	var accepted []Ref
	for _, r := range s.Accept {
		var last *batchState
		if k := len(next.batches); k > 0 {
			last = &next.batches[k-1]
		}
		if last == nil || st.rawSize[last.seq]+newSize[last.seq] >= BatchRawBytes {
			next.batches = append(next.batches, batchState{seq: next.nextBatch})
			next.nextBatch++
			last = &next.batches[len(next.batches)-1]
			created = append(created, last.seq)
		}
		if _, ok := newRecs[last.seq]; !ok {
			newRecs[last.seq] = slices.Clone(st.batches[last.seq])
		}
		newRecs[last.seq] = append(newRecs[last.seq], r)
		newSize[last.seq] += len(r)
		last.grow(len(newRecs[last.seq]))
		accepted = append(accepted, Ref{Batch: last.seq, Index: len(newRecs[last.seq]) - 1})
		touched[last.seq] = true
	}
	for seq := range touched {
		// Raw while the batch is open (it grows with every step); flate
		// once it is full.
		full := st.rawSize[seq]+newSize[seq] >= BatchRawBytes
		data := encodeRecords(newRecs[seq], full)
		if slices.Contains(created, seq) {
			add(&zk.CreateRequest{Path: b.batchPath(g, seq), Data: data, Acl: b.q.c.ACL(), Flags: zk.FlagPersistent})
		} else {
			add(&zk.SetDataRequest{Path: b.batchPath(g, seq), Data: data, Version: -1})
		}
	}

	// Moves.
	firstMove := len(ops) + 2
	for _, m := range s.Move {
		i := slices.IndexFunc(next.batches, func(bt batchState) bool { return bt.seq == m.Ref.Batch })
		if i < 0 || m.Ref.Index < 0 || m.Ref.Index >= next.batches[i].count || next.batches[i].isMoved(m.Ref.Index) {
			return res, fmt.Errorf("coord: Group.Apply %s: move of %v: no such pending record: %w", GroupName(g), m.Ref, ErrInvalidArgument)
		}
		next.batches[i].setMoved(m.Ref.Index)
		add(&zk.CreateRequest{Path: b.q.shardPath(queueDir, m.Shard) + "/" + itemPrefix, Data: m.Data, Acl: b.q.c.ACL(), Flags: zk.FlagSequence})
	}
	if err := next.applyDropAnnex(s); err != nil {
		return res, fmt.Errorf("coord: Group.Apply %s: %w", GroupName(g), err)
	}

	// Retirement: batches fully moved and not appended to in this step.
	lastChunk := st.lastChunk
	var retired []uint64
	keep := next.batches[:0]
	var fold []uint64
	for _, bt := range next.batches {
		if !touched[bt.seq] && bt.allMoved() {
			retired = append(retired, bt.seq)
			for _, r := range st.batches[bt.seq] {
				fold = append(fold, b.key(r))
			}
			add(&zk.DeleteRequest{Path: b.batchPath(g, bt.seq), Version: -1})
			continue
		}
		keep = append(keep, bt)
	}
	next.batches = keep
	if len(fold) > 0 {
		slices.Sort(fold)
		fold = slices.Compact(fold)
		for len(fold) > 0 {
			k := len(next.chunks)
			if k > 0 && len(lastChunk) < ChunkKeys {
				n := min(ChunkKeys-len(lastChunk), len(fold))
				merged := append(slices.Clone(lastChunk), fold[:n]...)
				slices.Sort(merged)
				merged = slices.Compact(merged)
				add(&zk.SetDataRequest{Path: b.chunkPath(g, next.chunks[k-1].seq), Data: encodeKeys(merged), Version: -1})
				next.chunks[k-1].count = len(merged)
				lastChunk, fold = merged, fold[n:]
				continue
			}
			n := min(ChunkKeys, len(fold))
			lastChunk = slices.Clone(fold[:n])
			add(&zk.CreateRequest{Path: b.chunkPath(g, next.nextChunk), Data: encodeKeys(lastChunk), Acl: b.q.c.ACL(), Flags: zk.FlagPersistent})
			next.chunks = append(next.chunks, chunkState{seq: next.nextChunk, count: n})
			next.nextChunk++
			fold = fold[n:]
		}
	}

	// Drains.
	for _, name := range s.Drained {
		add(&zk.DeleteRequest{Path: b.inboxPath(g) + "/" + name, Version: -1})
	}

	cursor := encodeCursor(next)
	ops = append([]any{
		&zk.CheckVersionRequest{Path: gr.fence, Version: -1},
		&zk.SetDataRequest{Path: b.cursorPath(g), Data: cursor, Version: st.version},
	}, ops...)

	commit := func(resp []zk.MultiResponse) StepResult {
		for seq, recs := range newRecs {
			st.batches[seq] = recs
			st.rawSize[seq] += newSize[seq]
		}
		for _, r := range s.Accept {
			st.seen[b.key(r)] = struct{}{}
		}
		for _, seq := range retired {
			delete(st.batches, seq)
			delete(st.rawSize, seq)
		}
		st.cur, st.version, st.lastChunk = next, st.version+1, lastChunk
		out := StepResult{Retired: len(retired), Accepted: accepted}
		if resp != nil {
			for i := range s.Move {
				out.Ready = append(out.Ready, path.Base(resp[firstMove+i].String))
			}
		}
		return out
	}
	for attempt := 1; ; attempt++ {
		if !gr.sess.alive() {
			return res, fmt.Errorf("coord: Group.Apply %s: session %s: %w", GroupName(g), gr.sess, ErrSessionExpired)
		}
		resp, idx, err := b.q.c.multi(ctx, nil, ops...)
		switch {
		case err == nil:
			return commit(resp), nil
		case idx == 0:
			return res, fmt.Errorf("coord: Group.Apply %s: session %s fence gone: %w", GroupName(g), gr.sess, ErrSessionExpired)
		case idx > 0:
			return res, fmt.Errorf("coord: Group.Apply %s: op %d: %v: %w", GroupName(g), idx, err, ErrGroupMoved)
		case isExpired(err):
			return res, fmt.Errorf("coord: Group.Apply %s: %w", GroupName(g), err)
		case !IsConnectionLoss(err):
			return res, fmt.Errorf("coord: Group.Apply %s: %w", GroupName(g), err)
		}
		// Outcome unknown: read the cursor back.
		var data []byte
		var stat *zk.Stat
		rerr := Retry(ctx, b.q.c.retry, func(ctx context.Context) error {
			var err error
			data, stat, err = b.q.c.get(ctx, b.cursorPath(g))
			return err
		})
		if rerr != nil {
			return res, fmt.Errorf("coord: Group.Apply %s: outcome unknown: %w", GroupName(g), rerr)
		}
		if have, derr := decodeCursor(data); derr == nil && have.nonce == next.nonce && stat.Version == st.version+1 {
			return commit(nil), nil
		}
		if stat.Version != st.version {
			return res, fmt.Errorf("coord: Group.Apply %s: cursor at version %d, had %d: %w", GroupName(g), stat.Version, st.version, ErrGroupMoved)
		}
		if attempt >= b.q.c.retry.Attempts {
			return res, fmt.Errorf("coord: Group.Apply %s: gave up after %d attempts: %w", GroupName(g), attempt, err)
		}
		if !sleepCtx(ctx, b.q.c.retry.Backoff(attempt)) {
			return res, ctx.Err()
		}
	}
}
