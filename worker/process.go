package worker

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
)

// maxDecodedBody caps a decompressed HTML body handed to link extraction:
// a gzip bomb stops here.
const maxDecodedBody = 32 << 20

// process runs one claimed item through the pipeline of docs/design.md:
// robots.txt, politeness, fetch, WARC records, link extraction and enqueue,
// crawl log line, then the fenced completion (or retry / dead letter). If ctx
// ends first (session lost, hard stop) the item is abandoned uncompleted: it
// stays queued for whoever claims it next (at-least-once). Each step either
// hands the item on or finishes it itself (completed, retried, dead-lettered
// or abandoned). The network, the outputs, the frontier and the claim are
// reached through the seams of seams.go. host is the item's politeness
// key (frontier.Layout.Key, as its claim slot was reserved under). fetched
// is called once the fetch is over (the item then no longer holds its
// host's claim slot, see hostSlots); it may be called again, and by the
// caller afterwards.
func (w *Worker) process(ctx context.Context, claim itemClaim, it frontier.Item, host string, fetched func()) {
	live := w.current()
	entry := storage.LogEntry{
		URL: it.URL, Depth: it.Depth, Via: it.Via, Hops: it.Hops, Worker: w.opts.ID,
		Attempt: it.Attempts + 1, ConfigVersion: int64(live.version),
	}
	if w.pausedRelease(ctx, claim, it, nil) {
		return
	}
	w.coolAfterHandoff(ctx, claim.Shard(), host, it.URL, live.cfg)
	if live.cfg.ObeyRobots && !w.robotsPermit(ctx, claim, it, host, live.cfg, &entry) {
		return
	}
	res := w.fetchItem(ctx, claim, it, host, &entry)
	fetched()
	if res == nil || !w.storeExchange(ctx, claim, it, res, &entry) {
		return
	}
	if fetch.Retryable(res.Status) {
		w.counters.errors.Add(1)
		w.finishFailed(ctx, claim, it, entry, true)
		return
	}
	links := w.outlinks(it, res, live)
	links = append(links, w.seedSitemaps(ctx, it, live)...)
	if len(links) > 0 {
		if err := w.enqueue(ctx, links); err != nil {
			w.abandon(ctx, claim, it, err)
			return
		}
	}
	w.finishDone(ctx, claim, it, entry)
}

// robotsPermit asks robots.txt whether it may be fetched (robotsAllowed)
// and reports true if so. Otherwise it finishes the item: abandoned when
// ctx ended; a failed attempt when robots.txt could not be fetched at all;
// logged with CodeRobotsPrecluded and completed when it is disallowed.
func (w *Worker) robotsPermit(ctx context.Context, claim itemClaim, it frontier.Item, host string, cfg config.Config, entry *storage.LogEntry) bool {
	ok, err := w.robotsAllowed(ctx, it, host, cfg)
	switch {
	case ctx.Err() != nil:
		w.abandon(ctx, claim, it, ctx.Err())
	case errors.Is(err, errNotHeard):
		w.abandon(ctx, claim, it, err) // not the host's fault: no attempt counted
	case err != nil:
		// robots.txt could not be fetched at all (dead host: DNS,
		// connect): status -61, retried like a network error, as
		// Heritrix does with a failed prerequisite. A 5xx robots.txt
		// is not an error: it disallows all (RFC 9309 2.3.1.4).
		entry.Status, entry.Error = fetch.Code(err), "robots.txt: "+fetch.Reason(err)
		w.finishFailed(ctx, claim, it, *entry, fetch.Retryable(entry.Status))
	case !ok:
		entry.Status = fetch.CodeRobotsPrecluded
		entry.Error = "robots.txt disallows this URL"
		w.finishDone(ctx, claim, it, *entry)
	default:
		return true
	}
	return false
}

// fetchItem fetches it inside a politeness slot of host, unless the crawl
// was paused meanwhile, and notes the duration in entry. It returns the
// response, or nil once it has finished the item: abandoned when paused or
// when ctx ended, a failed attempt when no response came.
func (w *Worker) fetchItem(ctx context.Context, claim itemClaim, it frontier.Item, host string, entry *storage.LogEntry) *fetch.Result {
	release, err := w.polite.Acquire(ctx, host)
	if err != nil {
		w.abandon(ctx, claim, it, err)
		return nil
	}
	if w.pausedRelease(ctx, claim, it, release) {
		return nil
	}
	// Last check before the request goes out: after a process pause the
	// session (and with it the host's claim) may be gone although the
	// disconnection guard has not run yet.
	if err := w.checkHeard(); err != nil {
		release()
		w.abandon(ctx, claim, it, err)
		return nil
	}
	start := time.Now()
	res, ferr := w.fetcher.Fetch(ctx, it.URL)
	release()
	took := time.Since(start)
	entry.DurationMS = took.Milliseconds()
	w.metrics.fetched(res, ferr, took)
	if ctx.Err() != nil {
		w.abandon(ctx, claim, it, ctx.Err())
		return nil
	}
	if ferr != nil {
		entry.Status, entry.Error = fetch.Code(ferr), fetch.Reason(ferr)
		w.counters.errors.Add(1)
		w.finishFailed(ctx, claim, it, *entry, fetch.Retryable(entry.Status))
		return nil
	}
	return res
}

// storeExchange writes res's WARC records (every response is stored, error
// statuses included, as Heritrix does) and notes the status, size and
// record position in entry. If the write fails it reports false, having
// released the item uncompleted and stopped claiming until writes work
// (outputFailed): a full disk must not lose the URL nor use up its
// attempts.
func (w *Worker) storeExchange(ctx context.Context, claim itemClaim, it frontier.Item, res *fetch.Result, entry *storage.LogEntry) bool {
	info, err := w.store.WriteExchange(storage.Exchange{
		TargetURI:         it.URL,
		IP:                res.RemoteIP,
		Date:              res.Started,
		RawRequest:        res.RawRequest,
		RawResponseHeader: res.RawResponseHeader,
		RawResponse:       res.RawResponse,
		Body:              res.Body,
		Truncated:         res.Truncated,
	})
	if err != nil {
		w.outputFailed(ctx, err)
		w.abandon(ctx, claim, it, err)
		return false
	}
	entry.Status, entry.Bytes, entry.MIME = res.Status, int64(len(res.Body)), res.MIME
	entry.Digest, entry.WARCFile, entry.WARCOffset = info.PayloadDigest, info.File, info.Offset
	w.counters.bytes.Add(int64(len(res.Body)))
	return true
}

// maxEmbedChain is how many embed hops in a row are followed: a page's
// style sheet (E) and the images and imports it loads (EE), not further
// (Heritrix's TransclusionDecideRule allows 2 by default too).
const maxEmbedChain = 2

// outlinks returns the items to enqueue from a response, each with its hop
// path extended (frontier.Item.Child), normalized and in scope: the
// redirect target (hop R, same depth, docs/design.md); for a complete 2xx
// HTML page its followable links (hop L, depth+1; none from a page that is
// itself a requisite, and none under meta robots or X-Robots-Tag
// nofollow) and, with page_requisites, its requisites (hop E, same depth,
// judged by requisites_scope); for a 2xx style sheet reached as a
// requisite, the url()s and @imports in it (hop E); for a 2xx sitemap
// (hop M), its entries (sitemapLinks).
func (w *Worker) outlinks(it frontier.Item, res *fetch.Result, live *liveConfig) []frontier.Item {
	var out []frontier.Item
	requisite := frontier.IsRequisite(it.Hops)
	add := func(raw string, hop byte, depth int) {
		u, ok := w.norm.normalize(raw)
		if !ok {
			return
		}
		if len(u) > live.cfg.MaxURLLength {
			// Not even posted: a hostile page cannot spend ZooKeeper bytes on it.
			w.counters.drop(dropURLLength, 1)
			w.metrics.dropped(dropURLLength, 1)
			return
		}
		scope := live.scope
		if hop == frontier.HopEmbed || (hop == frontier.HopRedirect && requisite) {
			scope = live.reqScope
		}
		if ok, _ := scope.Allows(u, depth, it.URL); ok {
			out = append(out, it.Child(u, hop, depth))
		}
	}
	if res.Redirect != "" {
		add(res.Redirect, frontier.HopRedirect, it.Depth)
		return out
	}
	if isManifest(it.Hops) {
		if res.Status < 200 || res.Status > 299 {
			return nil
		}
		return w.sitemapLinks(it, res, live)
	}
	if res.Status < 200 || res.Status > 299 || res.Truncated {
		return nil
	}
	embeds := live.cfg.PageRequisites && frontier.TrailingEmbeds(it.Hops) < maxEmbedChain
	html, css := isHTML(res.MIME), res.MIME == "text/css"
	if !html && !(css && embeds) {
		return nil
	}
	body, err := res.DecodedBody(maxDecodedBody)
	if err != nil {
		w.log.Debug("body not decodable; no links taken", "url", it.URL, "error", err)
		return nil
	}
	base, err := url.Parse(it.URL)
	if err != nil {
		return nil
	}
	if css {
		refs, _ := fetch.ExtractCSSRequisites(base, body, res.ContentType, 0)
		for _, r := range refs {
			add(r, frontier.HopEmbed, it.Depth)
		}
		return out
	}
	links, err := fetch.ExtractLinks(base, body, res.ContentType)
	if err != nil {
		return nil
	}
	if embeds {
		for _, r := range links.Requisites {
			add(r, frontier.HopEmbed, it.Depth)
		}
	}
	if requisite || links.NoFollow || fetch.XRobotsTag(res.Header, live.cfg.UserAgent).NoFollow {
		// A requisite's links are not followed (scope induction would
		// break: requisites_scope may be wider than scope); meta robots or
		// X-Robots-Tag nofollow/none: no link is followed.
		return out
	}
	for _, l := range links.URLs {
		add(l, frontier.HopLink, it.Depth+1)
	}
	return out
}

func isHTML(mime string) bool {
	return mime == "text/html" || mime == "application/xhtml+xml" || strings.HasPrefix(mime, "text/html;")
}

// enqueue puts links into the frontier, retrying connection trouble a few
// times (Enqueue is safe to repeat: exactly-once through the seen-set).
func (w *Worker) enqueue(ctx context.Context, links []frontier.Item) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var res frontier.EnqueueResult
		res, err = w.links.Enqueue(ctx, links)
		w.metrics.enqueued(res.Posted, res.Duplicates)
		if err == nil || ctx.Err() != nil || errors.Is(err, coord.ErrSessionExpired) {
			return err
		}
		w.log.Warn("enqueue failed; retrying", "links", len(links), "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(200*(attempt+1)) * time.Millisecond):
		}
	}
	return err
}

// finishDone logs the fetch and, once the line and the WARC records are
// fsynced, completes the item (fenced multi). If the line cannot be written
// or synced, the item is released uncompleted instead (outputFailed).
func (w *Worker) finishDone(ctx context.Context, claim itemClaim, it frontier.Item, entry storage.LogEntry) {
	if err := w.record(ctx, entry); err != nil {
		w.outputFailed(ctx, err)
		w.abandon(ctx, claim, it, err)
		return
	}
	if err := w.persist(ctx, "complete", it, claim.Complete); err != nil {
		w.lost(ctx, claim, it, "complete", err)
		return
	}
	w.readyFreed(claim)
	w.counters.pages.Add(1)
	w.metrics.completed()
}

// readyFreed tells the manager of the item's group that its ready item is
// gone (completed or dead-lettered), so the host's ready window has room.
func (w *Worker) readyFreed(claim itemClaim) {
	if w.owner == nil {
		return // no groups run here (process_test.go without an owner)
	}
	w.owner.Finished(w.layout.GroupOf(claim.Shard()), claim.Shard(), claim.Name())
}

// finishFailed logs a failed attempt and either schedules a retry
// (retryable and attempts left) or moves the item to R/failed; as
// finishDone, only once the line is written and fsynced.
func (w *Worker) finishFailed(ctx context.Context, claim itemClaim, it frontier.Item, entry storage.LogEntry, retryable bool) {
	cfg := w.current().cfg
	if err := w.record(ctx, entry); err != nil {
		w.outputFailed(ctx, err)
		w.abandon(ctx, claim, it, err)
		return
	}
	if retryable && it.Attempts+1 < cfg.MaxAttempts {
		next := it
		next.Attempts++
		next.NotBefore = w.retryAt(cfg, next.Attempts).UTC()
		data, err := next.Encode()
		if err == nil {
			err = w.persist(ctx, "retry", it, func(ctx context.Context) error { return claim.Reschedule(ctx, data) })
		}
		if err != nil {
			w.lost(ctx, claim, it, "retry", err)
		}
		return
	}
	failed := failedRecord(claim.Data(), entry.Error+statusNote(entry.Status))
	kept := false
	if err := w.persist(ctx, "fail", it, func(ctx context.Context) (err error) {
		kept, err = claim.FailCapped(ctx, failed, cfg.MaxDeadLetters)
		return err
	}); err != nil {
		w.lost(ctx, claim, it, "fail", err)
		return
	}
	if !kept {
		// R/failed was at max_dead_letters: the crawl log line is the
		// record; the item was completed instead.
		w.counters.drop(dropDeadLetter, 1)
		w.metrics.dropped(dropDeadLetter, 1)
	}
	w.readyFreed(claim)
	w.progress.deadLettered()
	w.counters.pages.Add(1)
	w.metrics.completed()
}

func statusNote(status int) string {
	if status > 0 {
		return " (HTTP " + strconv.Itoa(status) + ")"
	}
	return " (" + fetch.CodeName(status) + ")"
}

// failedRecord is the data of R/failed/<item>: the item plus its last error.
func failedRecord(item []byte, lastError string) []byte {
	rec := struct {
		Item      json.RawMessage `json:"item"`
		LastError string          `json:"last_error"`
		FailedAt  time.Time       `json:"failed_at"`
	}{LastError: strings.TrimSpace(lastError), FailedAt: time.Now().UTC()}
	if json.Valid(item) {
		rec.Item = item
	} else {
		b, _ := json.Marshal(string(item))
		rec.Item = b
	}
	b, _ := json.Marshal(rec)
	return b
}

// abandon gives an item up without completing it: its claim is released if
// the session still lives, so another worker (or this one) takes it again.
// ctx is the item's work context (it ends with the claim's session and at a
// hard stop): while it lives, a release that fails because ZooKeeper is
// unreachable is tried again (see persist); once it has ended, one attempt
// of at most 5 s is made (a lost session took the claim with it; a stopping
// worker closes its session next).
func (w *Worker) abandon(ctx context.Context, claim itemClaim, it frontier.Item, why error) {
	w.log.Info("item abandoned uncompleted; it stays queued", "url", it.URL, "reason", why)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := claim.Release(rctx)
	if coord.IsConnectionLoss(err) && ctx.Err() == nil {
		err = w.persist(ctx, "release", it, claim.Release)
	}
	if coord.IsConnectionLoss(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// Cut off from ZooKeeper (ctx was cancelled by the disconnection
		// guard or a stop, also while persist was retrying): the session
		// may survive, so release later, or the claim would hold the item
		// for the session's whole life.
		go w.releaseWhenConnected(claim, it)
		return
	}
	if err != nil && !errors.Is(err, coord.ErrClaimLost) {
		w.log.Debug("release after abandon failed", "url", it.URL, "error", err)
	}
}

// persistRetryInterval is the pause between calls of a claim finisher that
// failed because ZooKeeper was unreachable beyond coord's own retries.
const persistRetryInterval = time.Second

// persist runs a claim finisher (Complete, Reschedule, Fail or Release) and,
// while it fails with connection loss (ZooKeeper unreachable for longer
// than coord's retry policy retries, e.g. a quorum loss), calls it again
// every second for as long as ctx lives. Calling a finisher again is safe
// (coord detects an earlier commit; docs/design.md "coord guarantees": "when
// a finisher returns a context or connection-loss error, call it again").
// Giving up instead would leave the item claimed by a session that may well
// survive the outage (a restarted ensemble restores its sessions), and the
// item would stay blocked until that session ends: a crawl that never
// finishes. Other errors, and the last error once ctx ends, are returned.
func (w *Worker) persist(ctx context.Context, op string, it frontier.Item, finish func(context.Context) error) error {
	warned := false
	for {
		err := finish(ctx)
		if err == nil || !coord.IsConnectionLoss(err) || ctx.Err() != nil {
			if err == nil && warned {
				w.log.Info("ZooKeeper reachable again: "+op+" done", "url", it.URL)
			}
			return err
		}
		if !warned {
			w.log.Warn("ZooKeeper unreachable: "+op+" will be retried until it is back or the session ends", "url", it.URL, "error", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(persistRetryInterval):
		}
	}
}

// lost reports a completion that the fence refused: the session that held
// the claim is gone, so the item stays queued for its next claimer.
func (w *Worker) lost(ctx context.Context, claim itemClaim, it frontier.Item, op string, err error) {
	if errors.Is(err, coord.ErrClaimLost) || errors.Is(err, coord.ErrSessionExpired) {
		w.log.Warn("claim lost before "+op+": the item stays queued (at-least-once)", "url", it.URL)
		return
	}
	w.log.Error(op+" failed; releasing the claim", "url", it.URL, "error", err)
	w.abandon(ctx, claim, it, err)
}
