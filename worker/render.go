package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/render"
	"github.com/zkcrawl/zkcrawl/storage"
)

// Bounds of the render path's shared-response cache: a 2xx or final 4xx
// response of at most renderCacheBodyMax decoded bytes that one render fetched is served
// to later renders of this worker from memory (a site's script bundle,
// style sheet or JSON used by many pages) instead of being fetched again;
// at most renderCacheEntries responses, so at most 64 MiB.
const (
	renderCacheEntries = 256
	renderCacheBodyMax = 256 << 10
)

// renderState is the worker's browser pool (render.Pool, started when a
// config that renders is in force) and its shared-response cache.
type renderState struct {
	mu      sync.Mutex
	pool    *render.Pool
	poolKey renderPoolKey
	missing bool // no chromium: logged once, pages stay HTML-only
	cache   *lru.Cache[string, render.Response]
}

// renderPoolKey is what a pool is built from; a config that changes it
// replaces the pool.
type renderPoolKey struct {
	concurrency, memoryMB int
	timeout               time.Duration
}

// renderPool returns the pool for cfg, starting (or replacing) it; nil
// when no chromium is installed (logged once: rendered pages are then
// stored and parsed as HTML only).
func (w *Worker) renderPool(cfg *config.Config) *render.Pool {
	st := &w.renders
	st.mu.Lock()
	defer st.mu.Unlock()
	key := renderPoolKey{cfg.RenderConcurrency, cfg.RenderMemoryMB, time.Duration(cfg.RenderTimeoutMS) * time.Millisecond}
	if st.pool != nil && st.poolKey == key {
		return st.pool
	}
	if st.missing {
		return nil
	}
	p, err := render.New(render.Options{Concurrency: key.concurrency, MemoryMB: key.memoryMB, Timeout: key.timeout, Logger: w.log})
	if err != nil {
		st.missing = true
		w.log.Error("config render asks for a browser, but none can run: pages are stored as HTML only", "error", err)
		return nil
	}
	if st.pool != nil {
		_ = st.pool.Close() // renders on it fail and their items are retried
	}
	if st.cache == nil {
		st.cache, _ = lru.New[string, render.Response](renderCacheEntries) // size > 0: cannot fail
	}
	st.pool, st.poolKey = p, key
	return p
}

// close stops the browser, if one runs.
func (s *renderState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool != nil {
		_ = s.pool.Close()
		s.pool = nil
	}
}

// cached returns the cached response of u.
func (s *renderState) cached(u string) (render.Response, bool) {
	s.mu.Lock()
	c := s.cache
	s.mu.Unlock()
	if c == nil {
		return render.Response{}, false
	}
	return c.Get(u)
}

// remember caches a 2xx or a final 4xx response (not 408 or 429: a
// missing favicon.ico is asked for by every page) of at most
// renderCacheBodyMax bytes.
func (s *renderState) remember(u string, r render.Response) {
	s.mu.Lock()
	c := s.cache
	s.mu.Unlock()
	final := (r.Status >= 200 && r.Status <= 299) || (r.Status >= 400 && r.Status <= 499 && !fetch.Retryable(r.Status))
	if c != nil && final && len(r.Body) <= renderCacheBodyMax {
		c.Add(u, r)
	}
}

// wantsRender reports whether the attempt's response is rendered: a
// complete 2xx HTML page that is not itself a requisite, under a render
// mode (config.RenderMatcher) of always, or auto and looksLikeShell.
func (a *attempt) wantsRender(res *fetch.Result) bool {
	mode := a.live.render.Mode(a.it.URL)
	if mode == config.RenderNever || res.Status < 200 || res.Status > 299 || res.Truncated || res.Redirect != "" ||
		!isHTML(res.MIME) || frontier.IsRequisite(a.it.Hops) {
		return false
	}
	if mode == config.RenderAlways {
		return true
	}
	body, err := a.htmlBody(res)
	return err == nil && looksLikeShell(body)
}

// renderRun is what one page's render collects from its subrequests.
type renderRun struct {
	mu      sync.Mutex
	served  map[string]bool            // normalized URLs the browser got (fetched here or from the cache)
	got     map[string]render.Response // what this render fetched (bodies up to renderCacheBodyMax), any status: asked again, served again
	foreign []frontier.Item            // requests not fetched here (keys other workers own, requests the render's end cut off): queued as requisites
	failed  error                      // a WARC or crawl-log write that failed: the render fails
}

// render renders the attempt's stored page (res) in the browser and
// returns links to enqueue besides the HTML's (rendered links and routes,
// hop L, depth+1; the requisites other workers own, hop E) and the URLs
// the browser was served, which the HTML's requisites drop. If the render
// fails it ends the attempt (a retry, as a network error; ok false),
// unless this is the item's last attempt under max_attempts: then the
// page is kept as fetched (its line's error says "unrendered: ...", its
// HTML's links are enqueued) and ok is true. Without a browser it
// returns nothing and ok true.
func (a *attempt) render(res *fetch.Result) (links []frontier.Item, served map[string]bool, ok bool) {
	w := a.w
	pool := w.renderPool(&a.live.cfg)
	if pool == nil {
		return nil, nil, true
	}
	body, err := a.htmlBody(res)
	if err != nil {
		return nil, nil, true
	}
	run := &renderRun{served: map[string]bool{}, got: map[string]render.Response{}}
	out, err := pool.Render(a.ctx, render.Page{
		URL:      a.it.URL,
		Document: render.Response{Status: res.Status, Header: res.Header, Body: body},
		Fetch: func(ctx context.Context, r render.Request) (render.Response, error) {
			return a.subrequest(ctx, r, res, body, run)
		},
		Screenshot: a.live.cfg.RenderScreenshot,
	})
	if err == nil {
		run.mu.Lock()
		err = run.failed
		run.mu.Unlock()
	}
	took := time.Duration(0)
	if out != nil {
		took = out.Took
	}
	w.metrics.rendered(err == nil, took, pool.RSS())
	if a.ctx.Err() != nil {
		a.abandon(a.ctx.Err())
		return nil, nil, false
	}
	if err != nil && a.it.Attempts+1 >= a.w.current().cfg.MaxAttempts {
		// The last attempt: the page is kept as fetched, with its HTML's
		// links, rather than dead-lettered for its script.
		w.log.Warn("render failed on the item's last attempt: the page is kept unrendered", "url", a.it.URL, "error", err)
		a.entry.Error = "unrendered: " + err.Error()
		return nil, run.served, true
	}
	if err != nil {
		w.log.Warn("render failed; the item is retried", "url", a.it.URL, "error", err)
		a.entry.Status, a.entry.Error = fetch.CodeRuntimeError, err.Error()
		w.counters.errors.Add(1)
		a.finishFailed(true)
		return nil, nil, false
	}
	a.entry.Render = true
	w.log.Debug("page rendered", "url", a.it.URL, "took", out.Took, "requests", out.Requests, "failed", out.Failed,
		"links", len(out.Links), "routes", len(out.Routes))
	if out.Screenshot != nil && !a.storeScreenshot(out.Screenshot) {
		return nil, nil, false
	}
	return a.renderedLinks(out, run), run.served, true
}

// renderedLinks returns the rendered page's links (those of the rendered
// DOM as fetch.ExtractLinks reads it, the browser's a[href] and the
// routes, hop L, depth+1, scope; none under nofollow) and the requisites
// of the rendered DOM the browser did not fetch (hop E, requisites_scope),
// plus the requests other workers own (run.foreign).
func (a *attempt) renderedLinks(out *render.Result, run *renderRun) []frontier.Item {
	it, live := a.it, a.live
	var items []frontier.Item
	add := func(raw string, hop byte, depth int) {
		u, ok := a.w.norm.normalize(raw)
		if !ok || len(u) > live.cfg.MaxURLLength || run.served[u] {
			return
		}
		scope := live.scope
		if hop == frontier.HopEmbed {
			scope = live.reqScope
		}
		if ok, _ := scope.Allows(u, depth, it.URL); ok {
			items = append(items, it.Child(u, hop, depth))
		}
	}
	base, _ := url.Parse(it.URL)
	follow := true
	if base != nil {
		if l, err := fetch.ExtractLinks(base, []byte(out.HTML), "text/html; charset=utf-8"); err == nil {
			follow = !l.NoFollow
			if live.cfg.PageRequisites {
				for _, r := range l.Requisites {
					add(r, frontier.HopEmbed, it.Depth)
				}
			}
			if follow {
				for _, u := range l.URLs {
					add(u, frontier.HopLink, it.Depth+1)
				}
			}
		}
	}
	if follow {
		for _, u := range slices.Concat(out.Links, out.Routes) {
			add(u, frontier.HopLink, it.Depth+1)
		}
	}
	run.mu.Lock()
	items = append(items, run.foreign...)
	run.mu.Unlock()
	return items
}

// subrequest answers one request of the page's browser through the
// worker's own fetch path, under the render's ctx: only GET; the page's
// own URL from its fetched response (res, body decoded); a URL this render
// fetched already from that response, one another render fetched from
// the cache; else normalized, judged by
// requisites_scope against the page, and, when its politeness key's shard
// group is owned by this worker, fetched (robots.txt and Crawl-delay when
// obey_robots, a handed-over key's cooling, the key's politeness slot, the fetcher with its SSRF guard, the key's
// cookie jar) and stored as a requisite of the page would be (WARC
// records, dedup, a crawl-log line with hop E and via the page). A key
// another worker owns is not fetched here (only its owner's politeness is
// cluster-wide): the request fails in the page and the URL is queued as a
// requisite (hop E) for its owner. Errors fail the request in the page.
func (a *attempt) subrequest(ctx context.Context, r render.Request, res *fetch.Result, body []byte, run *renderRun) (render.Response, error) {
	w, live := a.w, a.live
	if r.Method != http.MethodGet {
		return render.Response{}, fmt.Errorf("%s %s: only GET requests are fetched", r.Method, r.URL)
	}
	u, ok := w.norm.normalize(r.URL)
	if !ok || len(u) > live.cfg.MaxURLLength {
		return render.Response{}, fmt.Errorf("%s: does not normalize", r.URL)
	}
	if u == a.it.URL {
		return render.Response{Status: res.Status, Header: res.Header, Body: body}, nil
	}
	run.mu.Lock()
	again, seen := run.got[u]
	run.mu.Unlock()
	if seen {
		return again, nil
	}
	if c, hit := w.renders.cached(u); hit {
		run.mu.Lock()
		run.served[u] = true
		run.mu.Unlock()
		return c, nil
	}
	if ok, _ := live.reqScope.Allows(u, a.it.Depth, a.it.URL); !ok {
		return render.Response{}, fmt.Errorf("%s: out of requisites_scope", u)
	}
	child := a.it.Child(u, frontier.HopEmbed, a.it.Depth)
	queue := func(why string) (render.Response, error) {
		run.mu.Lock()
		if !run.served[u] {
			run.served[u] = true // queued: not taken again from the HTML
			run.foreign = append(run.foreign, child)
		}
		run.mu.Unlock()
		return render.Response{}, fmt.Errorf("%s: %s: queued as a requisite", u, why)
	}
	// cutOff: the render ended (read, timed out) while this request waited
	// for robots.txt or its politeness slot, or was on the wire, but the
	// page's attempt goes on: the requisite is still captured, by its own
	// item.
	cutOff := func() bool { return ctx.Err() != nil && a.ctx.Err() == nil }
	if !w.ownsURL(u) {
		return queue("its key is another worker's")
	}
	sub := &attempt{w: w, ctx: ctx, it: child, key: w.layout.Key(u), live: live, entry: storage.LogEntry{
		URL: u, Depth: child.Depth, Via: a.it.URL, Hops: child.Hops, Worker: w.opts.ID,
		Attempt: 1, ConfigVersion: int64(live.version),
	}}
	if live.cfg.ObeyRobots {
		// As a page: robots.txt asked (and the key's Crawl-delay set).
		ok, err := sub.robotsAllowed()
		if cutOff() {
			return queue("the render ended before robots.txt answered")
		}
		if err != nil || !ok {
			return render.Response{}, fmt.Errorf("%s: robots.txt does not allow it (%v)", u, err)
		}
	}
	sub.coolShard(w.layout.Shard(u)) // a key just handed over waits its interval, as a page's
	fres, err := sub.fetchSub()
	if err != nil {
		if cutOff() {
			return queue("the render ended before its response")
		}
		return render.Response{}, err
	}
	if err := sub.storeSub(fres); err != nil {
		run.mu.Lock()
		run.failed = errors.Join(run.failed, err)
		run.mu.Unlock()
		return render.Response{}, err
	}
	run.mu.Lock()
	run.served[u] = true
	run.mu.Unlock()
	decoded, err := fres.DecodedBody(maxDecodedBody)
	if err != nil {
		return render.Response{}, fmt.Errorf("%s: body not decodable: %w", u, err)
	}
	out := render.Response{Status: fres.Status, Header: fres.Header, Body: decoded}
	if !fres.Truncated && fres.Redirect == "" {
		w.renders.remember(u, out)
	}
	if len(out.Body) <= renderCacheBodyMax {
		run.mu.Lock()
		run.got[u] = out
		run.mu.Unlock()
	}
	return out, nil
}

// fetchSub fetches a subrequest inside its key's politeness slot, as
// attempt.fetch does a page (attempt.request), and notes the duration
// (and a failure) in its entry; a failure is logged at once.
func (a *attempt) fetchSub() (*fetch.Result, error) {
	w := a.w
	res, ferr, _, _, err := a.request(false,
		func() (*fetch.Result, error) { return w.fetcher.FetchIf(a.cookieCtx(), a.it.URL, fetch.Conditions{}) },
		answeredAt)
	if err != nil {
		return nil, err
	}
	if ferr != nil {
		if a.ctx.Err() == nil {
			a.entry.Status, a.entry.Error = fetch.Code(ferr), fetch.Reason(ferr)
			w.counters.errors.Add(1)
			if err := w.record(a.ctx, a.entry); err != nil {
				w.outputFailed(a.ctx, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", a.it.URL, ferr)
	}
	return res, nil
}

// answeredAt is when r's answer began (its first byte), else when it was
// written: where a browser's subrequests, and a page that may be rendered,
// count their key's next interval from. They follow each other at the
// key's interval, a burst at the server, and counted from the write a
// server that read one late saw the next early (1-2 of 115 requests closer
// than the interval on 2 busy cores); from the answer the server has read
// the request whatever its own scheduling. It costs each its latency.
func answeredAt(r *fetch.Result) time.Time {
	if r.Answered.After(r.Reached) {
		return r.Answered
	}
	return r.Reached
}

// storeSub writes a fetched subrequest's WARC records (dedup as a page's)
// and its crawl-log line, and confirms its digest index entry.
func (a *attempt) storeSub(res *fetch.Result) error {
	w := a.w
	ex := exchangeOf(a.it.URL, res)
	a.dedupReserve(&ex, res)
	info, err := w.store.WriteExchange(ex)
	if err != nil {
		w.outputFailed(a.ctx, err)
		return fmt.Errorf("%s: WARC records: %w", a.it.URL, err)
	}
	a.dedupWritten(info)
	a.entry.Status, a.entry.Bytes, a.entry.MIME = res.Status, int64(len(res.Body)), res.MIME
	a.entry.Digest, a.entry.WARCFile, a.entry.WARCOffset = info.PayloadDigest, info.File, info.Offset
	a.entry.Protocol = logProtocol(res)
	if a.entry.Revisit == "" {
		a.entry.Revisit = storage.RevisitName(info.Profile)
	}
	w.counters.bytes.Add(int64(len(res.Body)))
	// Its records are written: the line is too, also when the render
	// ends meanwhile (a.ctx is the render's), within subLogTimeout.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), subLogTimeout)
	defer cancel()
	if err := w.record(lctx, a.entry); err != nil {
		w.outputFailed(lctx, err)
		return fmt.Errorf("%s: crawl-log line: %w", a.it.URL, err)
	}
	a.dedupConfirm()
	return nil
}

// subLogTimeout bounds the wait for a subrequest's crawl-log line to be
// fsynced once its WARC records are written.
const subLogTimeout = 30 * time.Second

// resourceStore is implemented by an exchangeStore that can write a WARC
// resource record (storage.Writer.WriteResource); diskStore does.
type resourceStore interface {
	WriteResource(r storage.Resource) (storage.ResponseInfo, error)
}

// storeScreenshot writes the rendered page's PNG as a resource record,
// urn:screenshot:<page URL>, concurrent to the page's response record. A
// failed write ends the attempt as store's does (ok false).
func (a *attempt) storeScreenshot(png []byte) bool {
	rs, ok := a.w.store.(resourceStore)
	if !ok {
		return true
	}
	_, err := rs.WriteResource(storage.Resource{TargetURI: "urn:screenshot:" + a.it.URL, ContentType: "image/png",
		ConcurrentTo: a.respID, Block: png})
	if err != nil {
		a.w.outputFailed(a.ctx, err)
		a.abandon(err)
		return false
	}
	return true
}

// ownsURL reports whether the shard of normalized URL u is one this
// worker owns now (its group is assigned here), so its politeness key's
// limiter is the cluster-wide one.
func (w *Worker) ownsURL(u string) bool {
	p := w.owned.Load()
	if p == nil {
		return false
	}
	_, found := slices.BinarySearch(*p, w.layout.Shard(u))
	return found
}

// dropServed returns links without the requisites (hop E as the last hop)
// whose URL the browser was served: they are stored already, or queued
// for their owner.
func dropServed(links []frontier.Item, served map[string]bool) []frontier.Item {
	if len(served) == 0 {
		return links
	}
	return slices.DeleteFunc(links, func(it frontier.Item) bool {
		return strings.HasSuffix(it.Hops, string(frontier.HopEmbed)) && served[it.URL]
	})
}
