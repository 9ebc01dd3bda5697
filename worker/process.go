package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
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
// crawl log line, then the fenced completion (or retry / dead letter), as
// one attempt (attempt.run). If ctx ends first (session lost, hard stop)
// the item is abandoned uncompleted: it stays queued for whoever claims it
// next (at-least-once). The network, the outputs, the frontier and the
// claim are reached through the seams of seams.go. key is the item's
// politeness key (frontier.Layout.Key, as its claim slot was reserved
// under). fetched is called once the fetch is over (the item then no
// longer holds its key's claim slot, see keySlots); it may be called
// again, and by the caller afterwards. claimed is when the claim was
// committed: the item's stage times (stages.go) count from it.
func (w *Worker) process(ctx context.Context, claim itemClaim, it frontier.Item, key string, claimed time.Time, fetched func()) {
	live := w.current()
	a := &attempt{w: w, ctx: ctx, claim: claim, it: it, key: key, live: live, claimed: claimed, mark: claimed, entry: storage.LogEntry{
		URL: it.URL, Depth: it.Depth, Via: it.Via, Hops: it.Hops, Worker: w.opts.ID,
		Attempt: it.Attempts + 1, ConfigVersion: int64(live.version),
	}}
	a.run(fetched)
}

// attempt is one fetch attempt of one claimed item: what the pipeline's
// steps share, from the claim to its end. Each step either hands the item
// on or ends the attempt itself, once: completed (finishDone), retried or
// dead-lettered (finishFailed), or abandoned uncompleted (abandon). An
// attempt belongs to one goroutine.
type attempt struct {
	w     *Worker
	ctx   context.Context // the item's work context: ends with the claim's session and at a hard stop
	claim itemClaim
	it    frontier.Item
	key   string      // the item's politeness key, whose claim slot it holds until the fetch ends
	live  *liveConfig // the config in force when the attempt began (its crawl-log version)
	// claimed is when the item was claimed; mark is when its current
	// stage began (lap).
	claimed, mark time.Time
	// entry is the attempt's crawl-log line, filled in step by step and
	// written by finishDone or finishFailed.
	entry storage.LogEntry
	// next is the URL's recrawl schedule entry once its response is stored
	// with config recrawl on (noteCapture); nil otherwise.
	next  *frontier.Item
	dedup *dedupHeld // the digest index reservation to confirm (dedup.go)
	// respID is the WARC-Record-ID of the response (or revisit) record
	// store wrote, for a screenshot's WARC-Concurrent-To.
	respID string
	// decoded is the page's body decoded (htmlBody), once per attempt:
	// link extraction, the render decision and the render share it.
	decoded struct {
		body []byte
		err  error
		done bool
	}
}

// htmlBody returns res's body decoded (Content-Encoding undone, at most
// maxDecodedBody bytes), decoding it on the first call only.
func (a *attempt) htmlBody(res *fetch.Result) ([]byte, error) {
	if !a.decoded.done {
		a.decoded.body, a.decoded.err = res.DecodedBody(maxDecodedBody)
		a.decoded.done = true
	}
	return a.decoded.body, a.decoded.err
}

// run takes the attempt through its steps; fetched is process's.
func (a *attempt) run(fetched func()) {
	if a.abandonIfPaused() {
		return
	}
	a.coolAfterHandoff()
	if a.live.cfg.ObeyRobots && !a.robotsPermit() {
		return
	}
	res := a.fetch(conditionsOf(a.it.Prev))
	if a.refetchBogus304(res) {
		res = a.fetch(fetch.Conditions{})
	}
	fetched()
	if res == nil || !a.store(res) {
		return
	}
	a.lap(stageStore)
	if fetch.Retryable(res.Status) {
		a.w.counters.errors.Add(1)
		a.finishFailed(true)
		return
	}
	links, title := a.w.outlinks(a.ctx, a.it, res, a.live, func() ([]byte, error) { return a.htmlBody(res) })
	a.entry.Title = title
	if a.wantsRender(res) {
		rendered, served, ok := a.render(res)
		if !ok {
			return
		}
		links = append(dropServed(links, served), rendered...)
	}
	links = append(links, a.w.seedSitemaps(a.ctx, a.it, a.live)...)
	if a.next != nil {
		links = append(links, *a.next)
	}
	a.lap(stageParse)
	if len(links) > 0 {
		if err := a.w.enqueue(a.ctx, links); err != nil {
			a.abandon(err)
			return
		}
		a.lap(stageLinks)
	}
	a.finishDone()
}

// robotsPermit asks robots.txt whether the item may be fetched
// (robotsAllowed) and reports true if so. Otherwise it ends the attempt:
// abandoned when ctx ended; a failed attempt when robots.txt could not be
// fetched at all; logged with CodeRobotsPrecluded and completed when it is
// disallowed.
func (a *attempt) robotsPermit() bool {
	ok, err := a.robotsAllowed()
	a.lap(stageRobots)
	switch {
	case a.ctx.Err() != nil:
		a.abandon(a.ctx.Err())
	case errors.Is(err, errNotHeard):
		a.abandon(err) // not the host's fault: no attempt counted
	case err != nil:
		// robots.txt could not be fetched at all (dead host: DNS,
		// connect): status -61, retried like a network error, as
		// Heritrix does with a failed prerequisite. A 5xx robots.txt
		// is not an error: it disallows all (RFC 9309 2.3.1.4).
		a.entry.Status, a.entry.Error = fetch.Code(err), "robots.txt: "+fetch.Reason(err)
		a.finishFailed(fetch.Retryable(a.entry.Status))
	case !ok:
		a.entry.Status = fetch.CodeRobotsPrecluded
		a.entry.Error = "robots.txt disallows this URL"
		a.finishDone()
	default:
		return true
	}
	return false
}

// fetch fetches the item, conditionally with cond's validators, inside a
// politeness slot of its key, unless the crawl was paused meanwhile, and
// notes the duration in the entry. It returns the response, or nil once it
// has ended the attempt: abandoned when paused or when ctx ended, a failed
// attempt when no response came.
func (a *attempt) fetch(cond fetch.Conditions) *fetch.Result {
	w := a.w
	fetchIf := w.fetcher.FetchIf
	if cf, ok := w.fetcher.(contentFetcher); ok && contentRuled(a.it.Hops) {
		fetchIf = cf.FetchContent
	}
	res, ferr, start, end, err := a.request(true,
		func() (*fetch.Result, error) { return fetchIf(a.cookieCtx(), a.it.URL, cond) },
		func(r *fetch.Result) time.Time {
			// Strict politeness counts from the write; an HTML page that
			// may be rendered counts from its answer, as the browser's
			// subrequests that follow it do (answeredAt).
			if isHTML(r.MIME) && a.live.render.Mode(a.it.URL) != config.RenderNever {
				return answeredAt(r)
			}
			return r.Reached
		})
	if err != nil {
		a.abandon(err)
		return nil
	}
	a.lapAt(stagePoliteness, start)
	a.lapAt(stageFetch, end)
	if a.ctx.Err() != nil {
		a.abandon(a.ctx.Err())
		return nil
	}
	if ferr != nil {
		a.entry.Status, a.entry.Error = fetch.Code(ferr), fetch.Reason(ferr)
		var rej *fetch.RejectedError
		if errors.As(ferr, &rej) {
			// The content rules' answer, not a failure: logged with
			// CodeMIMERejected, nothing stored, no retry, no dead letter.
			a.entry.MIME = rej.MIME
			a.finishDone()
			return nil
		}
		w.counters.errors.Add(1)
		a.finishFailed(fetch.Retryable(a.entry.Status))
		return nil
	}
	return res
}

// request makes one request of the attempt to its key, do, inside a
// politeness slot of the key (Politeness.Acquire): do runs once the slot
// is held, the crawl is not paused (when pausable) and the session is
// heard from (checkHeard, last: after a process pause the session, and
// with it the key's claim, may be gone although the disconnection guard
// has not run yet). Before the slot frees it notes when the request
// reached the server, reachedAt of the result (from which strict
// politeness spaces the key's next request), and a 429/503 (answered, so
// the hold comes before the next request). It notes the duration in the
// entry and the fetch metrics, and returns do's result and error and the
// request's start and end. err is set, and nothing else, only when no
// request was made: ctx's while waiting for the slot, errPaused, or the
// session's.
func (a *attempt) request(pausable bool, do func() (*fetch.Result, error), reachedAt func(*fetch.Result) time.Time) (res *fetch.Result, ferr error, start, end time.Time, err error) {
	w := a.w
	release, err := w.polite.Acquire(a.ctx, a.key)
	if err != nil {
		return nil, nil, start, end, err
	}
	if pausable && w.current().cfg.Paused {
		release()
		return nil, nil, start, end, errPaused
	}
	if err := w.checkHeard(); err != nil {
		release()
		return nil, nil, start, end, err
	}
	start = time.Now()
	res, ferr = do()
	if res != nil {
		w.polite.Reached(a.key, reachedAt(res))
		w.answered(a.key, res)
	}
	release()
	end = time.Now()
	took := end.Sub(start)
	a.entry.DurationMS = took.Milliseconds()
	w.metrics.fetched(res, ferr, took)
	return res, ferr, start, end, nil
}

// store writes res's WARC records (every response is stored, error
// statuses included, as Heritrix does; a revisit record in the response's
// place when revisitOf says so) and notes the status, size and record
// position in the entry (and what noteCapture notes). If the write fails
// it reports false, having abandoned the attempt and stopped claiming
// until writes work (outputFailed): a full disk must not lose the URL nor
// use up its attempts. With dedup_index, a payload stored before under
// another URL is written as a revisit of it (dedupReserve, dedup.go).
func (a *attempt) store(res *fetch.Result) bool {
	w := a.w
	ex := exchangeOf(a.it.URL, res)
	ex.RevisitOf = revisitOf(a.it, res, &ex)
	a.dedupReserve(&ex, res)
	info, err := w.store.WriteExchange(ex)
	if err != nil {
		w.outputFailed(a.ctx, err)
		a.abandon(err)
		return false
	}
	a.dedupWritten(info)
	a.respID = info.RecordID
	a.entry.Status, a.entry.Bytes, a.entry.MIME = res.Status, int64(len(res.Body)), res.MIME
	a.entry.Digest, a.entry.WARCFile, a.entry.WARCOffset = info.PayloadDigest, info.File, info.Offset
	a.entry.Protocol = logProtocol(res)
	a.noteCapture(res, ex, info)
	w.counters.bytes.Add(int64(len(res.Body)))
	return true
}

// finishDone logs the attempt and, once the line and the WARC records are
// fsynced, completes the item (fenced multi). If the line cannot be written
// or synced, the item is released uncompleted instead (outputFailed).
func (a *attempt) finishDone() {
	w := a.w
	if err := w.record(a.ctx, a.entry); err != nil {
		w.outputFailed(a.ctx, err)
		a.abandon(err)
		return
	}
	a.lap(stageFsync)
	a.dedupConfirm()
	if err := w.persist(a.ctx, "complete", a.it, a.claim.Complete); err != nil {
		a.lost("complete", err)
		return
	}
	a.finished()
	w.readyFreed(a.claim)
	w.counters.pages.Add(1)
	w.metrics.completed()
}

// finishFailed logs a failed attempt and either schedules a retry
// (retryable and attempts left under the config in force now) or moves the
// item to R/failed; as finishDone, only once the line is written and
// fsynced.
func (a *attempt) finishFailed(retryable bool) {
	w, it, claim := a.w, a.it, a.claim
	cfg := w.current().cfg
	if retryable && it.Attempts+1 < cfg.MaxAttempts {
		a.next = nil // not a final response: the retry keeps the item's Prev
	}
	if a.next != nil {
		// A final error response (attempts used up) stays in the recrawl
		// schedule: handed over before the item is dead-lettered.
		if err := w.enqueue(a.ctx, []frontier.Item{*a.next}); err != nil {
			a.abandon(err)
			return
		}
	}
	if err := w.record(a.ctx, a.entry); err != nil {
		w.outputFailed(a.ctx, err)
		a.abandon(err)
		return
	}
	a.lap(stageFsync)
	if retryable && it.Attempts+1 < cfg.MaxAttempts {
		next := it
		next.Attempts++
		next.NotBefore = w.retryNotBefore(w.retryAt(cfg, next.Attempts), a.key).UTC()
		data, err := next.Encode()
		if err == nil {
			err = w.persist(a.ctx, "retry", it, func(ctx context.Context) error { return claim.Reschedule(ctx, data) })
		}
		if err != nil {
			a.lost("retry", err)
			return
		}
		a.finished()
		return
	}
	failed := failedRecord(claim.Data(), a.entry.Error+statusNote(a.entry.Status))
	kept := false
	if err := w.persist(a.ctx, "fail", it, func(ctx context.Context) (err error) {
		kept, err = claim.Fail(ctx, failed, cfg.MaxDeadLetters)
		return err
	}); err != nil {
		a.lost("fail", err)
		return
	}
	a.finished()
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

// abandon ends the attempt uncompleted (Worker.abandon).
func (a *attempt) abandon(why error) { a.w.abandon(a.ctx, a.claim, a.it, why) }

// lost reports a finisher (op) that failed with err. When the fence
// refused it (the session that held the claim is gone) the item stays
// queued for its next claimer; after any other error the claim is
// released. The error is logged at debug level for an item whose work
// context ended (cut off from ZooKeeper, or a hard stop): the warning that
// ended them says how many (guardConnection), and abandon's info line names
// each item.
func (a *attempt) lost(op string, err error) {
	if errors.Is(err, coord.ErrClaimLost) || errors.Is(err, coord.ErrSessionExpired) {
		a.w.log.Warn("claim lost before "+op+": the item stays queued (at-least-once)", "url", a.it.URL)
		return
	}
	level := slog.LevelError
	if a.ctx.Err() != nil {
		level = slog.LevelDebug
	}
	a.w.log.Log(context.Background(), level, op+" failed; releasing the claim", "url", a.it.URL, "error", err)
	a.abandon(err)
}

// outlinks returns the items to enqueue from a response, each with its hop
// path extended (frontier.Item.Child), normalized and in scope: the
// redirect target (hop R, same depth, docs/design.md); for a complete 2xx
// HTML page its followable links (hop L, depth+1; none from a page that is
// itself a requisite, and none under meta robots or X-Robots-Tag
// nofollow) and, with page_requisites, its requisites (hop E, same depth,
// judged by requisites_scope against it), also when the page is itself a
// requisite (an object's or embed's page); with page_requisites, for a 2xx
// style sheet, the url()s and @imports in it (hop E, same depth). A
// requisite never spends a link hop, and requisites of requisites are
// taken at any depth (a.css @imports b.css @imports c.css ... url()s a
// font): no chain length is counted. What bounds them is what bounds any
// URL: the seen-set (each URL is enqueued, so fetched, once: an @import
// loop ends at its first repeat), the cap of fetch.DefaultMaxLinks URLs taken
// from one page or style sheet, requisites_scope with include/exclude,
// max_url_length, and the host and crawl quotas (max_queued_per_host,
// max_pages_per_host, max_queued_total, max_frontier_bytes, max_pages);
// the hop path stays at most frontier.MaxHops long (AppendHop). For a 2xx
// sitemap (hop M), its entries (sitemapLinks). With extract_js_links, a
// complete 2xx script's speculative links (hop X, depth+1, jsLinks); with
// extract_pdf_links, a complete 2xx PDF's link annotations (hop L,
// depth+1, pdfLinks, parsed under ctx; none from a requisite PDF). The
// string is a complete
// 2xx HTML page's title (fetch.Links.Title) for its crawl-log line, else "".
// decoded gives the HTML or CSS body decoded (attempt.htmlBody: once per
// attempt, shared with the render).
func (w *Worker) outlinks(ctx context.Context, it frontier.Item, res *fetch.Result, live *liveConfig, decoded func() ([]byte, error)) ([]frontier.Item, string) {
	var out []frontier.Item
	requisite := frontier.IsRequisite(it.Hops)
	from := it.URL // the URL scope judges a link against
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
		if ok, _ := scope.Allows(u, depth, from); ok {
			out = append(out, it.Child(u, hop, depth))
		}
	}
	if res.Redirect != "" {
		add(res.Redirect, frontier.HopRedirect, it.Depth)
		return out, ""
	}
	if isManifest(it.Hops) {
		if res.Status < 200 || res.Status > 299 {
			return nil, ""
		}
		return w.sitemapLinks(it, res, live), ""
	}
	if res.Status < 200 || res.Status > 299 || res.Truncated {
		return nil, ""
	}
	if live.cfg.ExtractJSLinks && fetch.IsJavaScript(res.MIME) {
		from = jsLinkBase(it)
		for _, l := range w.jsLinks(it, res, from) {
			add(l, frontier.HopSpeculative, it.Depth+1)
		}
		return out, ""
	}
	if live.cfg.ExtractPDFLinks && fetch.IsPDF(res.MIME) {
		if !requisite {
			for _, l := range w.pdfLinks(ctx, it, res) {
				add(l, frontier.HopLink, it.Depth+1)
			}
		}
		return out, ""
	}
	embeds := live.cfg.PageRequisites
	html, css := isHTML(res.MIME), res.MIME == "text/css"
	if !html && !(css && embeds) {
		return nil, ""
	}
	body, err := decoded()
	if err != nil {
		w.log.Debug("body not decodable; no links taken", "url", it.URL, "error", err)
		return nil, ""
	}
	base, err := url.Parse(it.URL)
	if err != nil {
		return nil, ""
	}
	if css {
		refs, _ := fetch.ExtractCSSRequisites(base, body, res.ContentType, 0)
		for _, r := range refs {
			add(r, frontier.HopEmbed, it.Depth)
		}
		return out, ""
	}
	links, err := fetch.ExtractLinks(base, body, res.ContentType)
	if err != nil {
		return nil, ""
	}
	title := links.Title
	if embeds {
		for _, r := range links.Requisites {
			add(r, frontier.HopEmbed, it.Depth)
		}
	}
	if requisite || links.NoFollow || fetch.XRobotsTag(res.Header, live.cfg.UserAgent).NoFollow {
		// A requisite's links are not followed (scope induction would
		// break: requisites_scope may be wider than scope); meta robots or
		// X-Robots-Tag nofollow/none: no link is followed.
		return out, title
	}
	for _, l := range links.URLs {
		add(l, frontier.HopLink, it.Depth+1)
	}
	return out, title
}

func isHTML(mime string) bool {
	return mime == "text/html" || mime == "application/xhtml+xml" || strings.HasPrefix(mime, "text/html;")
}

// enqueueRetry is how a post of links is retried: 5 calls with 200, 400,
// 600 and 800 ms between them (2 s in all, about a ZooKeeper leader
// election); then the item is abandoned and stays queued.
var enqueueRetry = retryPolicy{attempts: 5, pause: func(n int) time.Duration { return time.Duration(n) * 200 * time.Millisecond }}

// enqueue puts links into the frontier, retrying every failure but a
// session expiry under enqueueRetry (Enqueue is safe to repeat:
// exactly-once through the seen-set).
func (w *Worker) enqueue(ctx context.Context, links []frontier.Item) error {
	return retry(ctx, enqueueRetry,
		func(err error) bool { return !errors.Is(err, coord.ErrSessionExpired) },
		func(_ int, err error) { w.log.Warn("enqueue failed; retrying", "links", len(links), "error", err) },
		func(ctx context.Context) error {
			res, err := w.links.Enqueue(ctx, links)
			w.metrics.enqueued(res.Posted, res.Duplicates)
			return err
		})
}

// readyFreed tells the manager of the item's shard group that its ready
// item is gone (completed or dead-lettered), so the key's ready window has
// room.
func (w *Worker) readyFreed(claim itemClaim) {
	if w.owner == nil {
		return // no groups run here (process_test.go without an owner)
	}
	w.owner.Finished(w.layout.GroupOf(claim.Shard()), claim.Shard(), claim.Name())
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

// releaseTimeout bounds the first release of an abandoned item: long
// enough for coord's retries through a brief connection loss, short enough
// that a stopping worker is not held; a release cut off by it is tried
// again in the background (releaseWhenConnected).
const releaseTimeout = 5 * time.Second

// abandon gives an item up without completing it: its claim is released if
// the session still lives, so another worker (or this one) takes it again.
// ctx is the item's work context (it ends with the claim's session and at a
// hard stop): while it lives, a release that fails because ZooKeeper is
// unreachable is tried again (see persist); once it has ended, one attempt
// of at most releaseTimeout is made (a lost session took the claim with it;
// a stopping worker closes its session next).
func (w *Worker) abandon(ctx context.Context, claim itemClaim, it frontier.Item, why error) {
	// One line per item, at info level: its URL may be fetched again
	// (at-least-once), and chaos tests match every duplicate fetch to one.
	w.log.Info("item abandoned uncompleted; it stays queued", "url", it.URL, "reason", why)
	rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := claim.Release(rctx)
	if errors.Is(err, coord.ErrConnectionLoss) && ctx.Err() == nil {
		err = w.persist(ctx, "release", it, claim.Release)
	}
	if errors.Is(err, coord.ErrConnectionLoss) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// Cut off from ZooKeeper (ctx was cancelled by the disconnection
		// guard or a stop, also while persist was retrying): the session
		// may survive, so release later, or the claim would hold the item
		// for the session's whole life.
		go w.releaseWhenConnected(claim, it)
		return
	}
	if err != nil && !errors.Is(err, coord.ErrClaimLost) {
		// Warn: a release that fails for good may leave the item claimed
		// by a live session until that session ends.
		w.log.Warn("release after abandon failed", "url", it.URL, "error", err)
	}
}

// persistRetryInterval is the pause between calls of a claim finisher that
// failed because ZooKeeper was unreachable beyond coord's own retries.
const persistRetryInterval = time.Second

// persist runs a claim finisher (Complete, Reschedule, Fail or Release) and,
// while it fails with connection loss (ZooKeeper unreachable for longer
// than coord's retry policy retries, e.g. a quorum loss), calls it again
// every persistRetryInterval for as long as ctx lives. Calling a finisher
// again is safe (coord detects an earlier commit; docs/design.md "coord
// guarantees": "when a finisher returns a context or connection-loss
// error, call it again"). Giving up instead would leave the item claimed
// by a session that may well survive the outage (a restarted ensemble
// restores its sessions), and the item would stay blocked until that
// session ends: a crawl that never finishes. Other errors, and the last
// error once ctx ends, are returned.
func (w *Worker) persist(ctx context.Context, op string, it frontier.Item, finish func(context.Context) error) error {
	warned := false
	connLoss := func(err error) bool { return errors.Is(err, coord.ErrConnectionLoss) }
	err := retry(ctx, retryPolicy{pause: every(persistRetryInterval)}, connLoss,
		func(_ int, err error) {
			if !warned {
				w.log.Warn("ZooKeeper unreachable: "+op+" will be retried until it is back or the session ends", "url", it.URL, "error", err)
				warned = true
			}
		}, finish)
	if err == nil && warned {
		w.log.Info("ZooKeeper reachable again: "+op+" done", "url", it.URL)
	}
	return err
}
