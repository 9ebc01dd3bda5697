package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/zkcrawl/zkcrawl/dedup"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/storage"
)

// The store step's use of the crawl's digest index (config dedup_index,
// package dedup; docs/design.md "Digest index"): a complete 2xx payload of
// at least dedup_min_bytes that another response already stores, under any
// URL and by any worker, is written as an identical-payload-digest revisit
// of that response; a payload seen first is entered once its response is
// durable. The index is an optimisation: when it is down, slow or full,
// full responses are written and the crawl goes on.

// dedupCallTimeout bounds one call to the index: a slow index costs an item
// at most this per call.
const dedupCallTimeout = time.Second

// dedupPendingWait bounds how long the store step waits while another
// writer holds the payload's pending entry (it is writing that response
// now), polling every dedupPendingPoll; then a full response is written.
// Writers of one payload at once (one asset under many URLs, fetched by
// several workers) so mostly end as revisits of the first.
const (
	dedupPendingWait = 2 * time.Second
	dedupPendingPoll = 20 * time.Millisecond
)

// dedupWarnEvery is how often an index failure is logged: the first, then
// at most one per interval.
const dedupWarnEvery = time.Minute

// dedupLogRevisit is the crawl-log "revisit" value of a revisit record
// written through the index.
const dedupLogRevisit = storage.RevisitIdenticalPayload

// dedupState is the worker's handle on the digest index: opened on first
// use for the live config's dedup_index, reopened when that changes,
// closed with the outputs.
type dedupState struct {
	mu     sync.Mutex
	url    string
	ix     *dedup.Index
	warned time.Time // when a failure was last logged
}

// dedupHeld is a First reservation the attempt confirms once its
// crawl-log line is durable (finishDone).
type dedupHeld struct {
	ix     *dedup.Index
	digest string
	entry  dedup.Entry
	// revisit: the record was written as a revisit through the index (no
	// reservation to confirm: ix is nil).
	revisit bool
}

// index returns the index at url, opening it (and closing one at another
// URL) as needed; nil when it cannot be opened (logged as a failure).
func (s *dedupState) index(url string, log *slog.Logger) *dedup.Index {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil && s.url == url {
		return s.ix
	}
	if s.ix != nil {
		_ = s.ix.Close()
		s.ix = nil
	}
	ix, err := dedup.Open(url, dedup.Options{})
	if err != nil {
		s.failedLocked(log, err)
		return nil
	}
	s.url, s.ix = url, ix
	return ix
}

// failed logs err (an index call failed) unless one was logged within
// dedupWarnEvery.
func (s *dedupState) failed(log *slog.Logger, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failedLocked(log, err)
}

func (s *dedupState) failedLocked(log *slog.Logger, err error) {
	if time.Since(s.warned) < dedupWarnEvery {
		return
	}
	s.warned = time.Now()
	log.Warn("digest index (dedup_index) failing: full responses are written meanwhile; logged at most once a minute", "error", err)
}

// close closes the index, if one is open.
func (s *dedupState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil {
		_ = s.ix.Close()
		s.ix = nil
	}
}

// dedupReserve looks ex's payload up in the digest index before it is
// written, when dedup_index is set and ex is a complete 2xx response of at
// least dedup_min_bytes that is not a revisit already: a confirmed entry
// makes ex a revisit of it (ex.RevisitOf); First leaves ex a response, to
// be confirmed by dedupConfirm; Pending waits up to dedupPendingWait for
// the other writer's entry. Errors leave ex as it is.
func (a *attempt) dedupReserve(ex *storage.Exchange, res *fetch.Result) {
	cfg := &a.live.cfg
	if cfg.DedupIndex == "" || ex.RevisitOf != nil || ex.Truncated || res.Status < 200 || res.Status > 299 ||
		int64(len(ex.Body)) < cfg.DedupMinBytes {
		return
	}
	st := &a.w.dedup
	ix := st.index(cfg.DedupIndex, a.w.log)
	if ix == nil {
		return
	}
	if ex.Date.IsZero() {
		ex.Date = time.Now()
	}
	digest := ex.PayloadDigestOf()
	wait, cancel := context.WithTimeout(a.ctx, dedupPendingWait)
	defer cancel()
	for {
		ctx, done := context.WithTimeout(wait, dedupCallTimeout)
		r, err := ix.Reserve(ctx, digest, ex.TargetURI, ex.Date)
		done()
		switch {
		case err != nil:
			if wait.Err() == nil {
				st.failed(a.w.log, err)
			}
			return
		case r.Verdict == dedup.First:
			a.dedup = &dedupHeld{ix: ix, digest: digest, entry: dedup.Entry{TargetURI: ex.TargetURI, Date: ex.Date}}
			return
		case r.Verdict == dedup.Revisit:
			ex.RevisitOf = &storage.RevisitRef{Profile: storage.RevisitProfile,
				TargetURI: r.Entry.TargetURI, Date: r.Entry.Date, RecordID: r.Entry.RecordID}
			a.dedup = &dedupHeld{revisit: true}
			return
		}
		select { // Pending: the other writer confirms within moments, or not at all
		case <-wait.Done():
			return
		case <-time.After(dedupPendingPoll):
		}
	}
}

// dedupWritten notes what WriteExchange wrote (info): the response's record
// ID for dedupConfirm, or, when the writer wrote a revisit after all (of
// the same URL), nothing to confirm: only responses are entered. A revisit
// through the index is named in the crawl-log line.
func (a *attempt) dedupWritten(info storage.ResponseInfo) {
	switch h := a.dedup; {
	case h == nil:
	case h.revisit:
		if info.Revisit {
			a.entry.Revisit = dedupLogRevisit
		}
		a.dedup = nil
	case info.Revisit:
		a.dedup = nil // the pending entry expires
	default:
		h.entry.RecordID = info.RecordID
	}
}

// dedupConfirm makes the attempt's First reservation a permanent entry:
// call it once the item's crawl-log line (and so its WARC records) is on
// stable storage. A failure is logged (dedupState.failed); the pending
// entry then expires.
func (a *attempt) dedupConfirm() {
	h := a.dedup
	if h == nil || h.ix == nil {
		return
	}
	a.dedup = nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), dedupCallTimeout)
	defer cancel()
	if err := h.ix.Confirm(ctx, h.digest, h.entry); err != nil {
		a.w.dedup.failed(a.w.log, err)
	}
}
