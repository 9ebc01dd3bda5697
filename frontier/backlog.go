package frontier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"golang.org/x/sync/errgroup"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/seenset"
)

// Sizes of the compact store.
const (
	// batchRawBytes is how many raw record bytes a backlog batch takes
	// before a new batch is started (about 8 KiB once compressed).
	batchRawBytes = 32 << 10
	// chunkKeys is how many fingerprints a seen chunk holds (Elias-Fano
	// coded, encodeKeys: under 54 bits each, at most 27,653 bytes of data;
	// 6.75 bytes a key for uniform fingerprints).
	chunkKeys = 4096
	// maxPostBytes bounds the encoded data of one post (one create in a
	// multi: near coord's group-commit bound of 64 KiB).
	maxPostBytes = 64 << 10
)

// The znodes of the compact store under the crawl root R (docs/design.md,
// "Znodes of layout 2"), named relative to R for coord.Queue's store verbs.
const (
	inboxDir    = "inbox"   // R/inbox/<g>/i-NNNNNNNNNN: posts (persistent-sequential)
	backlogDir  = "backlog" // R/backlog/<g>: cursor; children b-N (batches) and s-N (seen chunks)
	postPrefix  = "i-"
	batchPrefix = "b-"
	chunkPrefix = "s-"
)

// maxGroups bounds the group count of a Backlog (as coord bounds shards).
const maxGroups = 100_000

// GroupName returns the znode name of shard group g: "g000", "g001", ...
func GroupName(g int) string { return fmt.Sprintf("g%03d", g) }

// Backlog is the frontier store of layout 2 for groups shard groups: per
// group an inbox of posts that anyone may write, and a backlog of accepted
// records with the group's seen-set that only the group's owner writes,
// through a Group. It lives under the crawl root of q and writes through
// q's store verbs (coord.Queue.Commit: one fenced multi per step), which
// also create the ready items. Records are item records (Item.Record) and
// their keys come from key (RecordKey in production). Safe for concurrent
// use.
type Backlog struct {
	q      *coord.Queue
	groups int
	key    func(record []byte) uint64
	// folds reports whether a record's key joins the seen chunks when its
	// batch retires (RecordFolds in production); nil: every record's does.
	folds func(record []byte) bool
}

// NewBacklog returns the backlog of q's crawl root with groups groups
// (1..100,000). It does no I/O; Create makes the znodes. key returns the
// 64-bit dedup key (fingerprint) of a record; it must be a pure function of
// the record's identity (for a crawl item: its normalized URL), so that a
// record and its retried or re-posted copies share a key.
func NewBacklog(q *coord.Queue, groups int, key func(record []byte) uint64) *Backlog {
	return &Backlog{q: q, groups: groups, key: key}
}

func (b *Backlog) checkGroup(op string, g int) error {
	if g < 0 || g >= b.groups || b.groups > maxGroups {
		return fmt.Errorf("frontier: %s: group %d: must be in [0, %d): %w", op, g, b.groups, coord.ErrInvalidArgument)
	}
	return nil
}

func (b *Backlog) inboxPath(g int) string  { return inboxDir + "/" + GroupName(g) }
func (b *Backlog) cursorPath(g int) string { return backlogDir + "/" + GroupName(g) }
func (b *Backlog) batchPath(g int, seq uint64) string {
	return fmt.Sprintf("%s/%s%010d", b.cursorPath(g), batchPrefix, seq)
}
func (b *Backlog) chunkPath(g int, seq uint64) string {
	return fmt.Sprintf("%s/%s%010d", b.cursorPath(g), chunkPrefix, seq)
}

// storeLevels returns the frontier store's znodes for a crawl of groups
// groups, for coord.CreateQueue: R/inbox and R/backlog, then for every
// group its inbox R/inbox/<g> and cursor R/backlog/<g> (empty: a new
// group). Errors: ErrInvalidArgument-wrapping for groups out of
// [1, 100,000].
func storeLevels(groups int) ([][]string, error) {
	if groups < 1 || groups > maxGroups {
		return nil, fmt.Errorf("frontier: %d groups: must be in [1, %d]: %w", groups, maxGroups, coord.ErrInvalidArgument)
	}
	b := &Backlog{groups: groups}
	var paths []string
	for g := 0; g < groups; g++ {
		paths = append(paths, b.inboxPath(g), b.cursorPath(g))
	}
	return [][]string{{inboxDir, backlogDir}, paths}, nil
}

// Post hands records to group g's owner: one create of a
// persistent-sequential R/inbox/<g>/i- holding them (flate), in a multi
// that goes through the group commit. Records whose
// key the group has seen, or that repeat within the inbox, are dropped by
// the owner when it drains the post, so posting a record twice is harmless:
// after connection loss Post is simply retried. Records beyond
// maxPostBytes encoded are split over several posts.
//
// Errors: coord.ErrInvalidArgument (bad group, a record over 64 KiB);
// coord.ErrNotInitialized; ctx errors and connection loss after retries
// (the post may or may not exist; posting again is safe).
func (b *Backlog) Post(ctx context.Context, g int, records [][]byte) (err error) {
	if err := b.checkGroup("Backlog.Post", g); err != nil {
		return err
	}
	for len(records) > 0 {
		n, size := 0, 0
		for n < len(records) && (n == 0 || size+len(records[n]) <= 4*maxPostBytes) {
			if len(records[n]) > maxRecordBytes {
				return fmt.Errorf("frontier: Backlog.Post: record of %d bytes, limit %d: %w", len(records[n]), maxRecordBytes, coord.ErrInvalidArgument)
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
		// Unfenced: anyone may post, and a post sent twice after connection
		// loss is harmless (the owner drops the repeats). It rides in the
		// group commit with the process's other writes.
		_, err := b.q.Commit(ctx, "backlog_post", nil, []coord.Op{{Kind: coord.OpCreateSeq, Path: b.inboxPath(g) + "/" + postPrefix, Data: data}}, nil)
		if errors.Is(err, coord.ErrNotFound) {
			return fmt.Errorf("frontier: Backlog.Post group %s: %w", GroupName(g), coord.ErrNotInitialized)
		}
		if err != nil {
			return fmt.Errorf("frontier: Backlog.Post group %s: %w", GroupName(g), err)
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

// Stats reads every group's cursor and inbox child count (pipelined: up
// to countReads reads in flight at once). The result is a snapshot, not
// atomic across groups. Errors: ZooKeeper errors after retries; a cursor
// that does not decode.
func (b *Backlog) Stats(ctx context.Context) ([]GroupStats, error) {
	out, _, err := b.stats(ctx, true)
	return out, err
}

// stats is Stats, and the versions it read: each group's cursor version,
// then each group's inbox child version (-1: absent; 0 when not read,
// without posts); equal in two reads only if no cursor was written and no post
// created or drained between them. Without posts it reads the cursors only and
// leaves GroupStats.Posts 0 (WatchPending counts the posts from its
// watched inbox lists).
func (b *Backlog) stats(ctx context.Context, posts bool) ([]GroupStats, []int32, error) {
	out := make([]GroupStats, b.groups)
	versions := make([]int32, 2*b.groups)
	reads := b.groups
	if posts {
		reads *= 2
	}
	err := parallel(ctx, reads, countReads, func(ctx context.Context, i int) error {
		if i >= b.groups {
			var err error
			out[i-b.groups].Posts, _, versions[i], err = b.q.Stat(ctx, b.inboxPath(i-b.groups))
			return err
		}
		s := &out[i]
		s.Group, s.Name = i, GroupName(i)
		cur, version, err := b.readCursor(ctx, i)
		versions[i] = version
		if errors.Is(err, coord.ErrNotFound) {
			versions[i] = -1
			return nil
		}
		if err != nil {
			return err
		}
		s.Batches, s.SeenChunks, s.Annex = len(cur.batches), len(cur.chunks), cur.annex
		for _, bt := range cur.batches {
			for j := 0; j < bt.count; j++ {
				if !bt.isMoved(j) {
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
		return nil, nil, fmt.Errorf("frontier: Backlog.Stats: %w", err)
	}
	return out, versions, nil
}

// SeenBytes returns the data bytes of every group's seen chunks
// (R/backlog/<g>/s-N) as ZooKeeper stores them: one cursor read per group
// and one stat per chunk, pipelined. A benchmark reports it as the
// seen-set's ZooKeeper footprint; the cursors hold key counts only.
// Errors: ZooKeeper errors after retries; a cursor that does not decode.
func (b *Backlog) SeenBytes(ctx context.Context) (int64, error) {
	sizes := make([]int64, b.groups)
	err := parallel(ctx, b.groups, 16, func(ctx context.Context, g int) error {
		cur, _, err := b.readCursor(ctx, g)
		if errors.Is(err, coord.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, c := range cur.chunks {
			_, n, _, err := b.q.Stat(ctx, b.chunkPath(g, c.seq))
			if err != nil {
				return err
			}
			sizes[g] += int64(n)
		}
		return nil
	})
	var total int64
	for _, n := range sizes {
		total += n
	}
	return total, err
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

// stampVersions hashes znode versions, in order, and then more (another
// stamp): FNV-1a 64 over their big-endian bytes (Frontier.PendingStamp).
func stampVersions(versions []int32, more uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range versions {
		binary.BigEndian.PutUint32(b[:4], uint32(v))
		_, _ = h.Write(b[:4])
	}
	binary.BigEndian.PutUint64(b[:], more)
	_, _ = h.Write(b[:])
	return h.Sum64()
}

// countReads bounds the reads a count snapshot (Stats, Frontier.Pending,
// Frontier.WatchPending) keeps in flight on the one connection: at the
// default 64 shards and groups, every read of one snapshot at once, so
// it costs about one round trip (a done check's latency), not one per
// 64 reads.
const countReads = 256

// parallel runs fn(ctx, i) for i in [0, n) with at most limit in flight
// (errgroup.SetLimit: the reads are pipelined on the one connection) and
// returns the first error; the calls still running then see ctx
// cancelled.
func parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}
