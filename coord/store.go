package coord

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// The generic store under a crawl root: reads, and transactions fenced by
// a session, on znodes whose data coord does not interpret. Package
// frontier keeps its compact store on it; coord knows only paths and
// bytes.

// OpKind is the kind of an Op.
type OpKind int

// Op kinds (ZooKeeper multi operations).
const (
	// OpCreate creates Op.Path as a persistent znode holding Op.Data.
	OpCreate OpKind = iota + 1
	// OpCreateSeq creates a persistent-sequential znode: ZooKeeper appends
	// a 10-digit counter to Op.Path ("area/a/i-" -> "area/a/i-0000000042").
	OpCreateSeq
	// OpSet replaces Op.Path's data by Op.Data if its version is
	// Op.Version (-1: any version).
	OpSet
	// OpDelete deletes Op.Path if its version is Op.Version (-1: any).
	OpDelete
	// OpReady creates a ready item of the queue's shard Op.Shard holding
	// Op.Data (R/queue/<shard>/u-NNNNNNNNNN); Op.Path is unused. An item
	// created by this process is known to Take without a read.
	OpReady
)

// Op is one operation of a transaction (Queue.Commit). Path is relative
// to the crawl root ("area/a", no leading slash); its data, at most
// ~1 MiB (ZooKeeper's jute.maxbuffer) for the whole transaction, is opaque
// to coord.
type Op struct {
	Kind    OpKind
	Path    string
	Data    []byte
	Version int32
	Shard   int // OpReady only
}

// zkOp turns o into go-zookeeper's request (Path made absolute).
func (q *Queue) zkOp(o Op) (any, error) {
	if o.Kind == OpReady {
		if o.Shard < 0 || o.Shard >= q.shards {
			return nil, fmt.Errorf("ready item of shard %d: must be in [0, %d): %w", o.Shard, q.shards, ErrInvalidArgument)
		}
		return q.readyCreate(o.Shard, o.Data), nil
	}
	p, err := q.storePath(o.Path)
	if err != nil {
		return nil, err
	}
	switch o.Kind {
	case OpCreate:
		return &zk.CreateRequest{Path: p, Data: o.Data, Acl: q.c.acl(), Flags: zk.FlagPersistent}, nil
	case OpCreateSeq:
		return &zk.CreateRequest{Path: p, Data: o.Data, Acl: q.c.acl(), Flags: zk.FlagSequence}, nil
	case OpSet:
		return &zk.SetDataRequest{Path: p, Data: o.Data, Version: o.Version}, nil
	case OpDelete:
		return &zk.DeleteRequest{Path: p, Version: o.Version}, nil
	}
	return nil, fmt.Errorf("op kind %d on %q: %w", o.Kind, o.Path, ErrInvalidArgument)
}

// storePath returns the absolute path of rel, a path relative to the
// crawl root. Errors wrap ErrInvalidArgument.
func (q *Queue) storePath(rel string) (string, error) {
	if q.initErr != nil {
		return "", q.initErr
	}
	p := q.root + "/" + rel
	if err := validatePath(p); err != nil || rel == "" {
		return "", fmt.Errorf("coord: store path %q: %w", rel, errors.Join(err, ErrInvalidArgument))
	}
	return p, nil
}

// Commit runs ops as one ZooKeeper multi (all commit or none does),
// through the Client's group commit. With sess not nil the multi is fenced
// by sess: its first op checks sess's marker R/sessions/<id> (created on
// first use), so it commits only while sess lives, even when go-zookeeper
// sends it after a NEW session replaced sess (as etcd's
// Txn().If(mutex.IsOwner())). Without sess its first op checks the parent
// of ops[0] (any version), so that it rides the group commit too.
//
// names holds, per op, the name (last path component) of the znode an
// OpCreate, OpCreateSeq or OpReady made, "" for other ops; nil when the
// commit was learnt through settle.
//
// After connection loss the outcome is unknown: without settle the multi
// is sent again (only for ops whose second commit is harmless, such as one
// sequential create the reader deduplicates); with settle, settle is called
// before each resend and learns the outcome by reading back (a nonce the
// transaction wrote): done ends Commit with settle's err (nil: it
// committed), !done sends the multi again.
//
// op names the commit to the Client's Config.Observer, e.g.
// "group_step".
//
// Errors, each naming the failing op: ErrSessionExpired (sess ended or its
// fence is gone; nothing written); ErrVersionConflict (an op's version did
// not match, or its znode exists or is not empty: someone else wrote);
// ErrNotFound (an op's znode or parent is missing); ErrInvalidArgument (a
// bad path or kind); ctx errors and connection loss after retries
// (outcome unknown).
func (q *Queue) Commit(ctx context.Context, op string, sess *Session, ops []Op, settle func(ctx context.Context) (done bool, err error)) (names []string, err error) {
	defer q.c.observed(op, time.Now(), &err)
	if len(ops) == 0 {
		return nil, nil
	}
	zops := make([]any, 1, len(ops)+1)
	for i, o := range ops {
		z, err := q.zkOp(o)
		if err != nil {
			return nil, fmt.Errorf("coord: Commit: op %d: %w", i, err)
		}
		zops = append(zops, z)
	}
	if sess != nil {
		fence, err := q.fence(ctx, sess)
		if err != nil {
			return nil, err
		}
		zops[0] = &zk.CheckVersionRequest{Path: fence, Version: -1}
	} else {
		p, _, _ := opTarget(zops[1])
		zops[0] = &zk.CheckVersionRequest{Path: path.Dir(p), Version: -1}
	}
	err = q.c.retryWrite(ctx, func(ctx context.Context) error {
		if sess != nil && !sess.alive() {
			return fmt.Errorf("session %s: %w", sess, ErrSessionExpired)
		}
		resp, idx, err := q.c.multi(ctx, nil, zops...)
		switch {
		case err == nil:
			names = q.created(ops, resp[1:])
			return nil
		case idx == 0 && sess != nil:
			return fmt.Errorf("session %s fence gone: %w", sess, ErrSessionExpired)
		case idx == 0:
			return fmt.Errorf("parent of %q: %w", ops[0].Path, errors.Join(err, ErrNotFound))
		case idx > 0:
			return fmt.Errorf("op %d on %q: %w", idx-1, ops[idx-1].Path, opErr(err))
		}
		return err
	}, settle)
	return names, err
}

// opErr maps a failed multi op's error to coord's sentinels (kept in the
// chain with the original).
func opErr(err error) error {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return errors.Join(err, ErrNotFound)
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNotEmpty):
		return errors.Join(err, ErrVersionConflict)
	}
	return err
}

// created returns the names of the znodes ops created, from the multi's
// reply, and remembers the ready items for Take (their data is known: no
// read to claim them).
func (q *Queue) created(ops []Op, resp []zk.MultiResponse) []string {
	names := make([]string, len(ops))
	now := time.Now()
	for i, o := range ops {
		switch o.Kind {
		case OpCreate, OpCreateSeq, OpReady:
			names[i] = path.Base(resp[i].String)
		}
		if o.Kind == OpReady {
			q.cache(o.Shard, names[i], newCachedItem(o.Data, 0, now), true)
		}
	}
	return names
}

// Read returns the data and version of rel (relative to the crawl root),
// retried after connection loss. Errors: ErrNotFound; ErrInvalidArgument;
// ZooKeeper errors after retries.
func (q *Queue) Read(ctx context.Context, rel string) ([]byte, int32, error) {
	p, err := q.storePath(rel)
	if err != nil {
		return nil, 0, err
	}
	data, st, err := q.c.readData(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, fmt.Errorf("coord: read %s: %w", rel, errors.Join(err, ErrNotFound))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("coord: read %s: %w", rel, err)
	}
	return data, st.Version, nil
}

// List returns the children of rel (relative to the crawl root) sorted by
// their sequence numbers (ZooKeeper's getChildren order is none), retried
// after connection loss. With watch it also arms a child watch: the
// channel is closed once rel's children change or the connection was lost
// and re-established (the watch may have been lost with it); the caller
// arms the next one by listing again with watch after that. Errors:
// ErrNotFound; ErrInvalidArgument; ZooKeeper errors after retries.
func (q *Queue) List(ctx context.Context, rel string, watch bool) ([]string, <-chan struct{}, error) {
	p, err := q.storePath(rel)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	var ev <-chan zk.Event
	var epoch <-chan struct{}
	err = q.c.retry(ctx, func(ctx context.Context) error {
		var err error
		if !watch {
			names, _, err = q.c.children(ctx, p)
			return err
		}
		epoch = q.c.reconnected()
		names, _, ev, err = q.c.childrenW(ctx, p)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, fmt.Errorf("coord: list %s: %w", rel, errors.Join(err, ErrNotFound))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("coord: list %s: %w", rel, err)
	}
	sortFIFO(names)
	if !watch {
		return names, nil, nil
	}
	changed := make(chan struct{})
	go func() { // ends with the event, a reconnect or the Client (go-zookeeper closes its watches)
		select {
		case <-ev:
		case <-epoch:
		}
		close(changed)
	}()
	return names, changed, nil
}

// Stat returns the number of children of rel (relative to the crawl
// root), the length of its data in bytes and its child version
// (Stat.Cversion: bumped by every child created or deleted, so two reads
// with the same one saw the same children over the time between them),
// 0, 0 and -1 when rel does not exist: one exists call, retried after
// connection loss. Errors: ErrInvalidArgument; ZooKeeper errors after
// retries.
func (q *Queue) Stat(ctx context.Context, rel string) (children, bytes int, cversion int32, err error) {
	p, err := q.storePath(rel)
	if err != nil {
		return 0, 0, 0, err
	}
	cversion = -1
	err = q.c.retry(ctx, func(ctx context.Context) error {
		ok, st, err := q.c.exists(ctx, p)
		if err == nil && ok {
			children, bytes, cversion = int(st.NumChildren), int(st.DataLength), st.Cversion
		}
		return err
	})
	return children, bytes, cversion, err
}

// CreateQueue returns the queue of a new crawl rooted at root (absolute
// path, chroot applied) with shards shards (1..100,000), creating its
// znodes if missing (R with R/queue holding the shard count, R/claims,
// R/failed, R/sessions, and every shard's R/queue/<shard> and
// R/claims/<shard>), then, level by level, the empty persistent znodes of
// each of levels (paths relative to the crawl root; a level lists parents
// before the next level's children: the caller's store areas). Idempotent;
// the creates are pipelined. OpenQueue opens an existing crawl's.
//
// Errors: ErrInvalidArgument for a bad root, shard count or path, or if
// R/queue exists with a different shard count; ZooKeeper errors after
// retries.
func CreateQueue(ctx context.Context, c *Client, root string, shards int, levels ...[]string) (*Queue, error) {
	q := newQueue(c, root, shards)
	if q.initErr != nil {
		return nil, q.initErr
	}
	if err := q.init(ctx, levels...); err != nil {
		return nil, err
	}
	return q, nil
}

// init creates the queue's znodes and levels (CreateQueue).
func (q *Queue) init(ctx context.Context, levels ...[]string) error {
	if err := q.create(ctx); err != nil {
		return err
	}
	for _, level := range levels {
		paths := make([]string, len(level))
		for i, rel := range level {
			p, err := q.storePath(rel)
			if err != nil {
				return err
			}
			paths[i] = p
		}
		if err := q.c.createAll(ctx, paths); err != nil {
			return fmt.Errorf("coord: CreateQueue %s: %w", q.name, err)
		}
	}
	return nil
}
