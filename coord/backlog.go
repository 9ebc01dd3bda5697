package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkcrawl/zkcrawl/internal/seenset"
)

// Sizes of the compact store.
const (
	// batchRawBytes is how many raw record bytes a backlog batch takes
	// before a new batch is started (about 8 KiB once compressed).
	batchRawBytes = 32 << 10
	// chunkKeys is how many fingerprints a seen chunk holds (8 bytes or
	// fewer each once delta-coded: at most ~36 KiB of data).
	chunkKeys = 4096
	// maxPostBytes bounds the encoded data of one post.
	maxPostBytes = 256 << 10
)

// Backlog is the frontier store of layout 2 for groups shard groups: per
// group an inbox of posts that anyone may write, and a backlog of accepted
// records with the group's seen-set that only the group's owner writes,
// through a Group. It shares the crawl root, the ready queue and the session
// fence with q. coord knows nothing of URLs: records are opaque bytes and
// their keys come from key. Safe for concurrent use.
type Backlog struct {
	q      *Queue
	groups int
	key    func(record []byte) uint64
}

// NewBacklog returns the backlog of q's crawl root with groups groups
// (1..100,000). It does no I/O; Init creates the znodes. key returns the
// 64-bit dedup key (fingerprint) of a record; it must be a pure function of
// the record's identity (for a crawl item: its normalized URL), so that a
// record and its retried or re-posted copies share a key.
func NewBacklog(q *Queue, groups int, key func(record []byte) uint64) *Backlog {
	return &Backlog{q: q, groups: groups, key: key}
}

func (b *Backlog) checkGroup(op string, g int) error {
	if b.q.initErr != nil {
		return b.q.initErr
	}
	if g < 0 || g >= b.groups || b.groups > maxShards {
		return fmt.Errorf("coord: %s: group %d: must be in [0, %d): %w", op, g, b.groups, ErrInvalidArgument)
	}
	return nil
}

func (b *Backlog) inboxPath(g int) string  { return b.q.root + "/" + inboxDir + "/" + GroupName(g) }
func (b *Backlog) cursorPath(g int) string { return b.q.root + "/" + backlogDir + "/" + GroupName(g) }
func (b *Backlog) batchPath(g int, seq uint64) string {
	return fmt.Sprintf("%s/%s%010d", b.cursorPath(g), batchPrefix, seq)
}
func (b *Backlog) chunkPath(g int, seq uint64) string {
	return fmt.Sprintf("%s/%s%010d", b.cursorPath(g), chunkPrefix, seq)
}

// Init creates the crawl's queue and frontier store znodes if missing:
// those of the queue (R/queue with the shard count, R/claims, R/failed,
// R/sessions, and every shard's R/queue/<shard> and R/claims/<shard>), then
// R/inbox, R/backlog and, for every group, R/inbox/<g> and the cursor
// R/backlog/<g> (empty: a new group). Idempotent; the creates are
// pipelined.
//
// Errors: ErrInvalidArgument if R/queue exists with a different shard
// count; ZooKeeper errors after retries.
func (b *Backlog) Init(ctx context.Context) error {
	if err := b.q.create(ctx); err != nil {
		return err
	}
	var paths []string
	for g := 0; g < b.groups; g++ {
		paths = append(paths, b.inboxPath(g), b.cursorPath(g))
	}
	for _, set := range [][]string{{b.q.root + "/" + inboxDir, b.q.root + "/" + backlogDir}, paths} {
		if err := b.q.c.createAll(ctx, set); err != nil {
			return fmt.Errorf("coord: Backlog.Init %s: %w", b.q.name, err)
		}
	}
	return nil
}

// Post hands records to group g's owner: one create of a
// persistent-sequential R/inbox/<g>/i- holding them (flate), in a multi
// that goes through the group commit. Records whose
// key the group has seen, or that repeat within the inbox, are dropped by
// the owner when it drains the post, so posting a record twice is harmless:
// after connection loss Post is simply retried. Records beyond
// maxPostBytes encoded are split over several posts.
//
// Errors: ErrInvalidArgument (bad group, a record over 64 KiB);
// ErrNotInitialized; ctx errors and connection loss after retries (the post
// may or may not exist; posting again is safe).
func (b *Backlog) Post(ctx context.Context, g int, records [][]byte) (err error) {
	defer b.q.c.observed("backlog_post", time.Now(), &err)
	if err := b.checkGroup("Backlog.Post", g); err != nil {
		return err
	}
	for len(records) > 0 {
		n, size := 0, 0
		for n < len(records) && (n == 0 || size+len(records[n]) <= 4*maxPostBytes) {
			if len(records[n]) > maxRecordBytes {
				return fmt.Errorf("coord: Backlog.Post: record of %d bytes, limit %d: %w", len(records[n]), maxRecordBytes, ErrInvalidArgument)
			}
			size += len(records[n])
			n++
		}
		data := encodeRecords(records[:n], true)
		if len(data) > maxPostBytes && n > 1 {
			// Poorly compressible: halve and go again.
			n /= 2
			data = encodeRecords(records[:n], true)
			if len(data) > maxPostBytes {
				if err := b.Post(ctx, g, records[:n]); err != nil {
					return err
				}
				records = records[n:]
				continue
			}
		}
		// A multi of check(inbox) and the create, so that the post rides in
		// the group commit with the process's other writes (coord/commit.go).
		err := b.q.c.retry(ctx, func(ctx context.Context) error {
			_, _, err := b.q.c.multi(ctx, nil,
				&zk.CheckVersionRequest{Path: b.inboxPath(g), Version: -1},
				&zk.CreateRequest{Path: b.inboxPath(g) + "/" + postPrefix, Data: data, Acl: b.q.c.acl(), Flags: zk.FlagSequence})
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("coord: Backlog.Post %s group %s: %w", b.q.name, GroupName(g), ErrNotInitialized)
		}
		if err != nil {
			return fmt.Errorf("coord: Backlog.Post group %s: %w", GroupName(g), err)
		}
		records = records[n:]
	}
	return nil
}

// GroupStats describes one group's compact store for status displays.
type GroupStats struct {
	Group      int
	Name       string
	Posts      int // inbox posts not yet drained
	Backlog    int // accepted records not yet moved to the ready window
	Batches    int // live backlog batches
	Seen       int // keys in seen chunks (records of retired batches)
	SeenChunks int
	// Annex is the owner's annex as last written (Step.Annex), nil when
	// none.
	Annex []byte
}

// Stats reads every group's cursor and inbox child count (pipelined). The
// result is a snapshot, not atomic across groups. Errors: ZooKeeper errors
// after retries; a cursor that does not decode.
func (b *Backlog) Stats(ctx context.Context) ([]GroupStats, error) {
	if b.q.initErr != nil {
		return nil, b.q.initErr
	}
	out := make([]GroupStats, b.groups)
	err := parallel(ctx, b.groups, 64, func(ctx context.Context, g int) error {
		s := &out[g]
		s.Group, s.Name = g, GroupName(g)
		var err error
		if s.Posts, err = b.q.numChildren(ctx, b.inboxPath(g)); err != nil {
			return err
		}
		data, _, err := b.q.c.readData(ctx, b.cursorPath(g))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		cur, err := decodeCursor(data)
		if err != nil {
			return fmt.Errorf("coord: cursor of group %s: %w", GroupName(g), err)
		}
		s.Batches, s.SeenChunks, s.Annex = len(cur.batches), len(cur.chunks), cur.annex
		for _, bt := range cur.batches {
			for i := 0; i < bt.count; i++ {
				if !bt.isMoved(i) {
					s.Backlog++
				}
			}
		}
		for _, c := range cur.chunks {
			s.Seen += c.count
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("coord: Backlog.Stats %s: %w", b.q.name, err)
	}
	return out, nil
}

// SeenBytes returns the data bytes of group g's seen chunks: the sum of the
// DataLength of every R/backlog/<g>/s-N znode its cursor lists, what the
// group's seen-set costs ZooKeeper beyond each znode's path and fixed
// overhead. Read without a session and without ownership: one read of the
// cursor, then one stat per chunk (a chunk gone meanwhile counts 0), so its
// cost grows with the chunks, for benchmarks and tools, not the crawl's
// hot path. Errors: g out of range (ErrInvalidArgument); ZooKeeper errors
// after retries; a cursor that does not decode.
func (b *Backlog) SeenBytes(ctx context.Context, g int) (int64, error) {
	if err := b.checkGroup("Backlog.SeenBytes", g); err != nil {
		return 0, err
	}
	data, _, err := b.q.c.readData(ctx, b.cursorPath(g))
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("coord: Backlog.SeenBytes %s group %s: %w", b.q.name, GroupName(g), err)
	}
	cur, err := decodeCursor(data)
	if err != nil {
		return 0, fmt.Errorf("coord: cursor of group %s: %w", GroupName(g), err)
	}
	var total int64
	for _, c := range cur.chunks {
		var st *zk.Stat
		err := b.q.c.retry(ctx, func(ctx context.Context) error {
			var err error
			_, st, err = b.q.c.exists(ctx, b.chunkPath(g, c.seq))
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("coord: Backlog.SeenBytes %s group %s: %w", b.q.name, GroupName(g), err)
		}
		if st != nil {
			total += int64(st.DataLength)
		}
	}
	return total, nil
}

// Keys returns every key group g holds so far: its seen-set (the records
// of its live batches and the keys of its seen chunks) and the records of
// the posts waiting in its inbox, read without a session and without
// ownership. A seeder uses it to report duplicates before posting; the
// owner's drain stays the authority. The set takes about 8 bytes per key
// (seenset.Set).
func (b *Backlog) Keys(ctx context.Context, g int) (*seenset.Set, error) {
	if err := b.checkGroup("Backlog.Keys", g); err != nil {
		return nil, err
	}
	st, err := b.load(ctx, g)
	if err != nil {
		return nil, err
	}
	gr := &Group{b: b, g: g, st: st, peek: true}
	posts, err := gr.Inbox(ctx, maxDecodedBytes*64)
	if err != nil {
		return nil, err
	}
	for _, p := range posts {
		for _, r := range p.Records {
			st.seen.Add(b.key(r))
		}
	}
	return st.seen, nil
}
