package worker

import (
	"context"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
)

// The pipeline's seams. process (docs/design.md, "The worker pipeline", 4)
// reaches the network, the disk and ZooKeeper only through the four small
// interfaces below, pageFetcher, exchangeStore, linkSink and itemClaim,
// so each stage can run alone with in-memory parts
// (process_test.go). A part may also implement an optional interface
// (fetchConfigurer, fetcherCloser, storeCloser), as an http.ResponseWriter
// may be an http.Flusher. New and Run wire the real parts (fetch.Fetcher,
// diskStore, frontier.Frontier, coord.Claim), and the end-to-end tests keep
// using them. robots.txt, politeness and the live config stay concrete:
// they are in-process state, not seams.

// pageFetcher fetches one URL.
//
// FetchIf GETs rawURL once and does not follow redirects: a 3xx comes back
// as a Result whose Redirect holds the resolved Location (none for a 304).
// It sends the validators of cond that fetch.Conditions says apply
// (If-None-Match, If-Modified-Since; the zero Conditions: none) and sets
// Result.Conditional when it sent any, and the raw request holds them.
// Any HTTP response, 4xx and 5xx included, is a *fetch.Result and a nil
// error, with the raw request and response kept for the WARC records. A
// non-nil error means no response came (a bad URL, DNS, connect, timeout,
// a blocked address): fetch.Code reads its crawl-log code,
// fetch.Retryable judges it, and the Result is nil. FetchIf returns
// promptly once ctx ends. It must be safe for concurrent use.
//
// *fetch.Fetcher implements it.
type pageFetcher interface {
	FetchIf(ctx context.Context, rawURL string, cond fetch.Conditions) (*fetch.Result, error)
}

// contentFetcher is implemented by a pageFetcher that applies the crawl's
// content rules (accept_mime, reject_mime): FetchContent is FetchIf, except
// that a 2xx response of a refused media type is not read past its header
// and comes back as an error with fetch.CodeMIMERejected whose cause is a
// *fetch.RejectedError. process calls it for the items the rules cover
// (contentRuled); a pageFetcher without it fetches every item with FetchIf.
//
// *fetch.Fetcher implements it.
type contentFetcher interface {
	FetchContent(ctx context.Context, rawURL string, cond fetch.Conditions) (*fetch.Result, error)
}

// fetchConfigurer is implemented by a pageFetcher whose request options
// follow the crawl config. applyConfig calls SetOptions with each config
// version it puts in force (user agent, fetch timeout, body cap, private
// networks), before any fetch under that version; SetOptions must be safe
// to call concurrently with Fetch, and fetches already started may finish
// under the old options. A fetcher without it keeps its own options.
//
// *fetch.Fetcher implements it.
type fetchConfigurer interface {
	SetOptions(opts fetch.Options)
}

// fetcherCloser is implemented by a pageFetcher that holds connections:
// Close drops the idle ones when Run returns; fetches after it still work.
//
// *fetch.Fetcher implements it.
type fetcherCloser interface {
	Close()
}

// exchangeStore keeps what one fetch attempt leaves: the exchange's WARC
// records and its crawl-log line.
//
// WriteExchange appends the request and response records of ex (a revisit
// record instead of the response when the URL's payload is already stored)
// and returns where the response record went. An error means the exchange
// is not stored (e.g. the disk is full); the item must not be finished.
//
// Record appends the crawl-log line e and returns once that line and every
// exchange written before it are on stable storage (fsynced together): only
// then may the item be finished, so a crash loses neither. An error means
// they may not be (a failed write, a failed fsync that may have covered
// them whichever item it was reported to first, or ctx's end while
// waiting).
//
// Both must be safe for concurrent use. diskStore implements it: WARC files
// and crawl.log in Options.OutDir.
type exchangeStore interface {
	WriteExchange(ex storage.Exchange) (storage.ResponseInfo, error)
	Record(ctx context.Context, e storage.LogEntry) error
}

// storeCloser is implemented by an exchangeStore that holds files: Run
// calls Close once, when it returns, after every item has been finished or
// abandoned; Files (for the stop summary) counts the WARC files written.
// An error means some records may not be on stable storage.
//
// diskStore implements it.
type storeCloser interface {
	Close() error
	Files() int
}

// linkSink hands the items found on a page (links, requisites, redirect
// targets, sitemap entries; URLs normalized) to the frontier.
//
// Enqueue queues each item at most once however often it is called (the
// owner of its shard group drops what the group has seen), so a call that
// failed may simply be repeated. It returns once the items are durable
// (posted to their groups' inboxes, or taken by this worker's own group
// manager), so a page completed afterwards cannot lose them. The result
// counts what the call did, also when it fails. Errors: ctx's,
// coord.ErrSessionExpired, or a ZooKeeper error after which some items may
// be posted and others not. It must be safe for concurrent use.
//
// *frontier.Frontier implements it.
type linkSink interface {
	Enqueue(ctx context.Context, items []frontier.Item) (frontier.EnqueueResult, error)
}

// itemClaim is the pipeline's hold on one claimed queue item: where the
// item is, what it held when claimed, and how to finish it.
//
// *coord.Claim implements it.
type itemClaim interface {
	Shard() int   // the item's queue shard
	Name() string // the item's znode name ("u-0000000042")
	Data() []byte // the item's data as read when it was claimed
	claimFinisher
}

// claimFinisher ends a claim: exactly one of its methods must succeed once
// per claim (or the claim's session must end).
//
// Complete removes the item: it is done. Call it only once the item's
// follow-up work is durable (crawl-log line and WARC records stored, links
// enqueued). Reschedule puts the item back in its place with data (attempts and
// not_before updated) for the next claimer. Fail moves it to the dead
// letters with data (the item and its last error) and reports true, unless
// they hold max (> 0) already: then it completes the item and reports
// false; the count and the move are one transaction, so max holds across
// workers (coord.Claim.Fail). Release gives it back unchanged.
//
// Each is one fenced transaction that changes nothing unless the claim is
// still held by its live session. Errors: coord.ErrClaimLost (the session
// ended, the claim is gone or was ended already: nothing changed, and the
// item stays queued for whoever claims it next: drop it), coord.ErrGone
// (the item vanished), a connection-loss
// error (coord.ErrConnectionLoss) or ctx's (the outcome is unknown: calling
// the same method again is safe, and reports success if the first call
// committed). Safe for concurrent use, but meant for one owner.
type claimFinisher interface {
	Complete(ctx context.Context) error
	Reschedule(ctx context.Context, data []byte) error
	Fail(ctx context.Context, data []byte, max int64) (deadLettered bool, err error)
	Release(ctx context.Context) error
}
