package coord

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// Group commit of fenced multis: Client.multi queues every fenced multi
// (see grouped) for the Client's committer goroutine, which sends all that
// queued up while the previous one was in flight as ONE ZooKeeper multi (one
// zxid, one transaction-log write), the way databases batch log flushes
// ("group commit"). ZooKeeper and go-zookeeper have no such batching, so it
// is written here.
const (
	// maxCommitOps bounds the ops of one combined multi.
	maxCommitOps = 1000
	// maxCommitBytes bounds the paths plus data (bytes) of one combined
	// multi (a larger single request goes alone): ZooKeeper keeps its last
	// 500 transactions in memory (ZKDatabase's committed log; 3.8 refuses a
	// smaller zookeeper.commitLogCount) at three to four times their bytes,
	// so this keeps that share of its heap near 500 x 64 KiB x 3.5 = 110 MiB
	// (docs/design.md, "ZooKeeper's committed log").
	maxCommitBytes = 64 << 10
	// maxCommitsInFlight is 1: a failed combined multi puts its innocent
	// requests back at the front of the queue, which keeps their order only
	// if no later multi was sent meanwhile; and waiting for the reply is
	// what lets the next batch fill up (the batch size follows the round
	// trip time by itself, no timer needed).
	maxCommitsInFlight = 1
)

// run sends synchronously from one goroutine; more in flight needs another
// sender (this fails to compile if maxCommitsInFlight > 1).
var _ [1 - maxCommitsInFlight]struct{}

// committers maps each live *Client to its *committer (session.go's Client
// has no field for it); an entry is removed when its Client closes.
var committers sync.Map

// commitReq is one caller's multi waiting in the committer's queue.
type commitReq struct {
	ctx  context.Context
	ops  []any
	size int
	done chan commitResult // buffered (1): receives exactly one result
}

// commitResult is multi's result for one request; dropped means its ctx
// ended before its ops were sent (nothing committed): the caller returns
// ctx.Err().
type commitResult struct {
	res     []zk.MultiResponse
	idx     int
	err     error
	dropped bool
}

// committer is the group-commit queue of one Client.
type committer struct {
	c        *Client
	wake     chan struct{} // buffered (1)
	mu       sync.Mutex
	queue    []*commitReq
	limit    int // >0: the next combined multi takes at most limit requests
	stopped  bool
	multis   atomic.Int64
	requests atomic.Int64
}

// committer returns c's committer, starting its goroutine on first use.
func (c *Client) committer() *committer {
	if v, ok := committers.Load(c); ok {
		return v.(*committer)
	}
	b := &committer{c: c, wake: make(chan struct{}, 1)}
	v, loaded := committers.LoadOrStore(c, b)
	if !loaded {
		go b.run()
	}
	return v.(*committer)
}

// groupCommit is Client.multi: it queues ops for the committer and waits
// for their share of the combined multi's result (contract: see multi).
func (c *Client) groupCommit(ctx context.Context, orphan func([]zk.MultiResponse, error), ops []any) ([]zk.MultiResponse, int, error) {
	if err := ctx.Err(); err != nil {
		if orphan != nil {
			go orphan(nil, err)
		}
		return nil, -1, err
	}
	if c.isClosed() {
		return nil, -1, ErrClosed
	}
	if !grouped(ops) {
		return c.multiAlone(ctx, orphan, ops)
	}
	r := &commitReq{ctx: ctx, ops: ops, done: make(chan commitResult, 1)}
	for _, op := range ops {
		p, n, _ := opTarget(op)
		if p == "" { // rejected here so that it cannot fail the others' multi
			return nil, -1, fmt.Errorf("coord: multi: unknown operation type %T: %w", op, ErrInvalidArgument)
		}
		r.size += len(p) + n
	}
	b := c.committer()
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil, -1, ErrClosed
	}
	b.queue = append(b.queue, r)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	select {
	case res := <-r.done:
		if !res.dropped {
			return res.res, res.idx, res.err
		}
		err := ctx.Err()
		if orphan != nil {
			go orphan(nil, err)
		}
		return nil, -1, err
	case <-ctx.Done():
		err := ctx.Err()
		if orphan != nil {
			go func() {
				res := <-r.done
				if res.dropped {
					res.err = err
				}
				orphan(res.res, res.err)
			}()
		}
		return nil, -1, err
	}
}

// grouped reports whether a multi goes through group commit: only multis
// that start with a check (a session-marker fence, or the parent check of
// an unfenced Commit), which nearly always succeed. A combined multi
// reveals only its first failed op, so each failure costs a round trip
// while everything else queued waits; a test-only create (Queue.Put in
// export_test.go) whose NodeExists is the normal answer for a duplicate
// made BenchmarkCrawlLoop 6x slower when grouped.
func grouped(ops []any) bool {
	if len(ops) == 0 {
		return false
	}
	_, ok := ops[0].(*zk.CheckVersionRequest)
	return ok
}

// multiAlone sends ops as their own multi, at once (multi's contract).
func (c *Client) multiAlone(ctx context.Context, orphan func([]zk.MultiResponse, error), ops []any) ([]zk.MultiResponse, int, error) {
	res, err := call(ctx, c, "multi", func() ([]zk.MultiResponse, error) {
		return c.conn.Multi(ops...)
	}, orphan)
	if err == nil {
		return res, -1, nil
	}
	for i, r := range res {
		if r.Error != nil {
			return nil, i, r.Error
		}
	}
	return nil, -1, err
}

// run is the committer goroutine: it sends combined multis, one at a time,
// until the Client closes, then fails what is still queued with ErrClosed.
func (b *committer) run() {
	for {
		select {
		case <-b.wake:
			for batch := b.take(); len(batch) > 0; batch = b.take() {
				b.send(batch)
			}
		case <-b.c.closedCh:
			b.mu.Lock()
			b.stopped = true
			for _, r := range b.queue {
				r.done <- commitResult{idx: -1, err: ErrClosed, dropped: r.ctx.Err() != nil}
			}
			b.queue = nil
			b.mu.Unlock()
			committers.CompareAndDelete(b.c, b)
			return
		}
	}
}

// take removes the next combined multi's requests from the queue: FIFO,
// within maxCommitOps and maxCommitBytes (a bigger request goes alone) and
// b.limit. Requests whose ctx has ended are dropped on the way.
func (b *committer) take() []*commitReq {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*commitReq
	ops, size, i := 0, 0, 0
	for ; i < len(b.queue); i++ {
		r := b.queue[i]
		if err := r.ctx.Err(); err != nil {
			r.done <- commitResult{idx: -1, err: err, dropped: true}
			b.queue[i] = nil
			continue
		}
		if len(batch) > 0 && (ops+len(r.ops) > maxCommitOps || size+r.size > maxCommitBytes || len(batch) == b.limit) {
			break
		}
		batch = append(batch, r)
		ops, size = ops+len(r.ops), size+r.size
		b.queue[i] = nil
	}
	b.queue = b.queue[i:]
	b.limit = 0
	return batch
}

// send runs batch as one multi and hands each request its result. When an
// op fails, ZooKeeper reports the ops before it as OK (nil Error in
// go-zookeeper v1.0.4), the failing op with its error, and the ops after it
// as RuntimeInconsistency, and commits nothing. The failing request is told
// unless an earlier request in the batch touched a znode its ops up to the
// failing one depend on: then its failure may be due to effects that were
// rolled back, so the requests before it go alone next and it leads the
// batch after. The innocent requests go back to the front of the queue, in
// order.
//
// An existence check (version -1) that an earlier request of the batch
// already sent, on a znode no op before it changes, is sent once: the
// requests of one session all start with the same session-marker fence, so
// a batch of claims and completions carried one check per page for
// nothing (about 2 of a page's 8 ops). Each request is answered with the
// shared check's result; if it fails, the request that sent it is told and
// the others go back to the queue and meet it in their own check.
func (b *committer) send(batch []*commitReq) {
	ops, at, first := combine(batch)
	b.multis.Add(1)
	b.requests.Add(int64(len(batch)))
	res, err := call(context.Background(), b.c, "multi", func() ([]zk.MultiResponse, error) {
		return b.c.conn.Multi(ops...)
	}, nil)
	culprit := -1
	for i, r := range res {
		if r.Error != nil {
			culprit = i
			break
		}
	}
	if err == nil && len(res) != len(ops) {
		err = fmt.Errorf("coord: multi: %d responses for %d ops: %w", len(res), len(ops), zk.ErrAPIError)
	}
	if err == nil || culprit < 0 || culprit >= len(ops) {
		for k, r := range batch {
			if err == nil {
				mine := make([]zk.MultiResponse, len(r.ops))
				for j, i := range at[k] {
					mine[j] = res[i]
				}
				r.done <- commitResult{res: mine, idx: -1}
			} else {
				r.done <- commitResult{idx: -1, err: err} // outcome unknown for all
			}
		}
		return
	}
	// The request that sent the failing op: the last whose own ops start
	// at or before it.
	k := 0
	for k+1 < len(batch) && first[k+1] <= culprit {
		k++
	}
	requeue, limit := batch, k
	if !touched(ops[:first[k]], ops[first[k]:culprit+1]) {
		j := slices.Index(at[k], culprit)
		batch[k].done <- commitResult{idx: j, err: res[culprit].Error}
		requeue, limit = append(batch[:k:k], batch[k+1:]...), 0
	}
	b.mu.Lock()
	b.queue = append(append(make([]*commitReq, 0, len(requeue)+len(b.queue)), requeue...), b.queue...)
	b.limit = limit
	b.mu.Unlock()
}

// combine returns the ops of batch as one multi, existence checks already
// sent dropped (see send), with, for each request, where each of its ops is
// in that multi (at) and where its own ops start (first: requests' own ops
// are in batch order; a request whose every op was dropped starts where
// the next would).
func combine(batch []*commitReq) (ops []any, at [][]int, first []int) {
	checked := map[string]int{} // path -> index of its existence check in ops
	at, first = make([][]int, len(batch)), make([]int, len(batch))
	for k, r := range batch {
		first[k] = len(ops)
		at[k] = make([]int, len(r.ops))
		for j, op := range r.ops {
			if c, ok := op.(*zk.CheckVersionRequest); ok && c.Version == -1 {
				if i, ok := checked[c.Path]; ok {
					at[k][j] = i
					continue
				}
				checked[c.Path] = len(ops)
			} else if p, _, _ := opTarget(op); p != "" {
				delete(checked, p) // a later check of p must be sent again
			}
			at[k][j] = len(ops)
			ops = append(ops, op)
		}
	}
	return ops, at, first
}

// opTarget returns the path an op acts on, its data length, and whether it
// is a sequential create (whose znode is path plus a counter); path is ""
// for an op type go-zookeeper's Multi does not take.
func opTarget(op any) (p string, n int, seq bool) {
	switch op := op.(type) {
	case *zk.CreateRequest:
		return op.Path, len(op.Data), op.Flags&zk.FlagSequence != 0
	case *zk.SetDataRequest:
		return op.Path, len(op.Data), false
	case *zk.DeleteRequest:
		return op.Path, 0, false
	case *zk.CheckVersionRequest:
		return op.Path, 0, false
	}
	return "", 0, false
}

// touched reports whether any of ops may have changed what one of mine
// depends on: its znode (existence, version; children for a delete) or its
// parent. An op changes its own znode and its parent's children; a
// sequential create changes a znode whose path it prefixes.
func touched(ops, mine []any) bool {
	for _, f := range mine {
		fp, _, _ := opTarget(f)
		_, del := f.(*zk.DeleteRequest)
		for _, op := range ops {
			if _, check := op.(*zk.CheckVersionRequest); check {
				continue // changes nothing
			}
			p, _, seq := opTarget(op)
			if p == fp || p == path.Dir(fp) || (del && path.Dir(p) == fp) || (seq && strings.HasPrefix(fp, p)) {
				return true
			}
		}
	}
	return false
}
