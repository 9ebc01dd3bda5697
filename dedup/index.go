// Package dedup is a crawl's cluster-wide payload-digest index: for each
// payload (by its SHA-1 digest) the one response record that stores it, so
// that every later capture of the same payload, under any URL and by any
// worker, is written as a revisit record (WARC 1.1 section 6.7.2,
// identical-payload-digest) that refers to it.
//
// The index lives in a redis server (https://redis.io/docs/latest/): one
// string key per digest, reached by every worker over TCP. An entry is
// first reserved (pending, with a short TTL) by the writer about to store
// the response, and made permanent by Confirm only once that response is
// durable, so a crash between the two leaves nothing that a revisit could
// refer to. Only responses are entered, never revisits, so a revisit never
// refers to another revisit.
//
// The package knows nothing of HTTP, WARC files or ZooKeeper: it maps
// digests to Entry values.
package dedup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPendingTTL is how long a pending entry (Reserve's First) lives
// unless Confirm replaces it: long enough for one response to be written,
// fsynced and logged; short enough that a writer that crashed before
// Confirm blocks dedup of that payload only briefly.
const DefaultPendingTTL = 2 * time.Minute

// Verdict is Reserve's answer.
type Verdict int

const (
	// First: no entry existed; a pending entry is now held for the caller,
	// who writes a full response and calls Confirm once it is durable.
	First Verdict = iota + 1
	// Revisit: a confirmed entry exists (Result.Entry): write a revisit
	// record that refers to it.
	Revisit
	// Pending: another writer holds a pending entry (it is writing the
	// response now): write a full response and do not Confirm it.
	Pending
)

// String names the verdict ("first", "revisit", "pending").
func (v Verdict) String() string {
	switch v {
	case First:
		return "first"
	case Revisit:
		return "revisit"
	case Pending:
		return "pending"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Entry is the response record a digest refers to: the values of a
// revisit's WARC-Refers-To-Target-URI, WARC-Refers-To-Date and
// WARC-Refers-To (WARC 1.1 sections 5.16, 5.17, 5.15).
type Entry struct {
	// TargetURI is the response's WARC-Target-URI. Required, at most
	// MaxURIBytes bytes.
	TargetURI string
	// Date is the response's WARC-Date; it is kept to the microsecond (the
	// WARC-Date precision zkcrawl writes). Required (non-zero, after 1970).
	Date time.Time
	// RecordID is the response's WARC-Record-ID ("<urn:uuid:...>"), "" when
	// unknown (an imported CDXJ line names none). At most MaxURIBytes bytes.
	RecordID string
}

// Result is what Reserve found.
type Result struct {
	Verdict Verdict
	// Entry is the confirmed entry when Verdict is Revisit; zero otherwise.
	Entry Entry
}

// Index is a handle on one digest index (a redis database). Its methods
// are safe for concurrent use; every one takes a context whose deadline
// bounds the call (connect, send and reply).
type Index struct {
	rdb        *redis.Client
	pendingTTL time.Duration
}

// Options tune Open. The zero value takes the defaults.
type Options struct {
	// PendingTTL is how long a pending entry lives (default
	// DefaultPendingTTL); at least one millisecond.
	PendingTTL time.Duration
}

// CheckURL reports whether rawURL is a redis URL Open accepts:
// redis://[[user]:password@]host[:port][/db], rediss:// (TLS) or
// unix://[[user]:password@]/path/to/socket[?db=N], with go-redis's query
// options (dial_timeout, ...). The error names the URL and the reason.
func CheckURL(rawURL string) error {
	_, err := redis.ParseURL(rawURL)
	if err != nil {
		return fmt.Errorf("dedup: index URL %q: %w", rawURL, err)
	}
	return nil
}

// Open returns the index at rawURL (CheckURL's forms). It does not connect:
// connections are made by the calls, within their contexts (Ping checks
// that the server answers). Every call fails fast when its context ends:
// the client honours context deadlines and does not retry. Errors: the URL
// does not parse, or opts.PendingTTL is below a millisecond.
func Open(rawURL string, opts Options) (*Index, error) {
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("dedup: index URL %q: %w", rawURL, err)
	}
	ttl := opts.PendingTTL
	if ttl == 0 {
		ttl = DefaultPendingTTL
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("dedup: Options.PendingTTL=%v: want at least 1ms", ttl)
	}
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1   // no retries: a slow or absent index must not hold the caller
	o.DialerRetries = 1 // one dial per call, for the same reason
	quietOnce.Do(func() { redis.SetLogger(debugLogger{}) })
	return &Index{rdb: redis.NewClient(o), pendingTTL: ttl}, nil
}

// quietOnce routes go-redis's own log lines (a failed dial, per call) to
// slog at Debug: the calls return those errors, and their callers decide
// what to log and how often.
var quietOnce sync.Once

// debugLogger is go-redis's internal.Logging on slog.Default at Debug.
type debugLogger struct{}

// Printf logs one go-redis line at Debug.
func (debugLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}

// Close closes the index's connections.
func (ix *Index) Close() error { return ix.rdb.Close() }

// Ping checks that the server answers. Errors name the server.
func (ix *Index) Ping(ctx context.Context) error {
	if err := ix.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("dedup: index %s: %w", ix.rdb.Options().Addr, err)
	}
	return nil
}

// reserveScript returns the entry under KEYS[1] or, when there is none,
// sets the pending value ARGV[1] with a TTL of ARGV[2] ms and returns nil:
// one atomic step (a script runs alone, redis EVAL), so of concurrent
// callers exactly one gets nil. It works on every redis since 2.6.
var reserveScript = redis.NewScript(`local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`)

// Reserve looks payloadDigest ("sha1:" and 32 base32 digits, the
// WARC-Payload-Digest form) up and answers First (a pending entry naming
// targetURI and date is now set, with the pending TTL), Revisit (with the
// confirmed entry) or Pending (another writer's pending entry). Errors: a
// digest or entry that does not encode (ErrBadDigest, ErrBadEntry), an
// unreadable stored value, or the server's (unreachable, ctx ended, out of
// memory under maxmemory-policy noeviction).
func (ix *Index) Reserve(ctx context.Context, payloadDigest, targetURI string, date time.Time) (Result, error) {
	key, err := Key(payloadDigest)
	if err != nil {
		return Result{}, err
	}
	pending, err := encode(Entry{TargetURI: targetURI, Date: date}, false)
	if err != nil {
		return Result{}, err
	}
	v, err := reserveScript.Run(ctx, ix.rdb, []string{key}, pending, ix.pendingTTL.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return Result{Verdict: First}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("dedup: reserve %s: %w", payloadDigest, err)
	}
	e, confirmed, err := decode([]byte(v))
	if err != nil {
		return Result{}, fmt.Errorf("dedup: reserve %s: %w", payloadDigest, err)
	}
	if !confirmed {
		return Result{Verdict: Pending}, nil
	}
	return Result{Verdict: Revisit, Entry: e}, nil
}

// Confirm makes e the permanent entry of payloadDigest (no TTL), replacing
// the caller's pending entry (or whatever is there: every confirmed entry
// names a durable response). Call it only once the response e names is on
// stable storage. Errors: as Reserve's.
func (ix *Index) Confirm(ctx context.Context, payloadDigest string, e Entry) error {
	key, err := Key(payloadDigest)
	if err != nil {
		return err
	}
	v, err := encode(e, true)
	if err != nil {
		return err
	}
	if err := ix.rdb.Set(ctx, key, v, 0).Err(); err != nil {
		return fmt.Errorf("dedup: confirm %s: %w", payloadDigest, err)
	}
	return nil
}

// Import is one confirmed entry for Add.
type Import struct {
	Digest string // "sha1:BASE32" or the 32 base32 digits alone
	Entry  Entry
}

// Add enters each of items as a confirmed entry unless its digest has an
// entry already (SET NX: an entry present wins), in one pipelined round
// trip, and returns how many were added. Items must have been checked with
// Check (Add stops at the first that does not encode, adding none). Errors:
// a bad item, or the server's (then an unknown number were added).
func (ix *Index) Add(ctx context.Context, items []Import) (int, error) {
	pipe := ix.rdb.Pipeline()
	cmds := make([]*redis.BoolCmd, 0, len(items))
	for _, it := range items {
		key, err := Key(it.Digest)
		if err != nil {
			return 0, err
		}
		v, err := encode(it.Entry, true)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", it.Digest, err)
		}
		cmds = append(cmds, pipe.SetNX(ctx, key, v, 0))
	}
	if len(cmds) == 0 {
		return 0, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("dedup: add %d entries: %w", len(items), err)
	}
	added := 0
	for _, c := range cmds {
		if c.Val() {
			added++
		}
	}
	return added, nil
}

// Check reports whether it can be entered by Add: a digest Key accepts
// and an entry that encodes. The error says why not.
func (it Import) Check() error {
	if _, err := Key(it.Digest); err != nil {
		return err
	}
	_, err := encode(it.Entry, true)
	return err
}
