package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Request is one request the page made, as the browser would send it.
type Request struct {
	URL    string      // absolute, without fragment
	Method string      // GET, POST, ...
	Header http.Header // the browser's request headers
	// Type is the DevTools resource type: Document, Stylesheet, Image,
	// Script, XHR, Fetch, Font, Media, ...
	Type string
}

// Response answers a Request. Body is the payload as the page reads it:
// decoded (no Content-Encoding). Header's Content-Encoding,
// Content-Length, Transfer-Encoding and Connection are dropped before the
// browser sees it.
type Response struct {
	Status int // 100..599
	Header http.Header
	Body   []byte
}

// Fetcher answers one of the page's requests. It is called concurrently,
// once per request, with a ctx that ends when the render does (read,
// timed out, failed): a request still in flight then is not needed. An
// error fails the request in the page (Fetch.failRequest).
type Fetcher func(ctx context.Context, r Request) (Response, error)

// Page is what Render takes: the page's URL, the response to its main
// document, and the Fetcher of everything else.
type Page struct {
	URL        string
	Document   Response
	Fetch      Fetcher
	Screenshot bool // take a PNG of the viewport at the end
}

// Result is a rendered page.
type Result struct {
	// HTML is the rendered DOM, document.documentElement.outerHTML.
	HTML string
	// Links are the absolute URLs of a[href] and area[href] in the
	// rendered DOM, in document order, without repeats.
	Links []string
	// Routes are the URLs the page moved to: history.pushState and
	// replaceState, and main-frame navigations (which were not followed),
	// in order, without repeats; the page's own URL is left out.
	Routes []string
	// Screenshot is a PNG of the viewport, when asked for.
	Screenshot []byte
	// Requests counts the requests the page made past its document;
	// Failed counts those failed (by the Fetcher or blocked).
	Requests, Failed int
	// Took is the render's duration, from its page slot (and browser) on.
	Took time.Duration
}

// ErrTimeout is wrapped by Render's error when the render ran past
// Options.Timeout (the browser was killed).
var ErrTimeout = errors.New("render timed out; browser killed")

// ErrBrowserDied is wrapped by Render's error when the browser process
// died during the render.
var ErrBrowserDied = errors.New("browser died")

// hookScript runs in every frame before the page's scripts: it records the
// URLs given to history.pushState and replaceState and refuses service
// worker registration.
const hookScript = `(() => {
  const routes = window.__zkRoutes = [];
  for (const k of ['pushState', 'replaceState']) {
    const f = history[k];
    history[k] = function (s, t, u) {
      if (u !== undefined && u !== null) { try { routes.push(new URL(u, location.href).href); } catch (e) {} }
      return f.apply(this, arguments);
    };
  }
  if (navigator.serviceWorker) {
    try { navigator.serviceWorker.register = () => Promise.reject(new DOMException('service workers are off', 'SecurityError')); } catch (e) {}
  }
})()`

// readScript returns the rendered page: its DOM, links, routes, URL.
const readScript = `(() => {
  const seen = new Set(), links = [];
  for (const a of document.querySelectorAll('a[href], area[href]')) {
    const h = a.href;
    if (typeof h === 'string' && h && !seen.has(h)) { seen.add(h); links.push(h); }
  }
  return {html: document.documentElement ? document.documentElement.outerHTML : '', links, routes: window.__zkRoutes || [], href: location.href};
})()`

// domRead is what readScript returns.
type domRead struct {
	HTML   string   `json:"html"`
	Links  []string `json:"links"`
	Routes []string `json:"routes"`
	Href   string   `json:"href"`
}

// scrollScript scrolls one viewport down and reports whether the bottom
// was reached.
const scrollScript = `(() => {
  const el = document.scrollingElement || document.documentElement;
  window.scrollBy(0, window.innerHeight);
  return window.scrollY + window.innerHeight >= el.scrollHeight - 2;
})()`

// atBottomScript reports whether the viewport shows the page's bottom.
const atBottomScript = `(() => {
  const el = document.scrollingElement || document.documentElement;
  return window.scrollY + window.innerHeight >= el.scrollHeight - 2;
})()`

// tracker follows the page's requests for the idle wait.
type tracker struct {
	mu       sync.Mutex
	inFlight int
	last     time.Time
	wg       sync.WaitGroup
	requests int
	failed   int
	routes   []string
	docFrame string // the main frame's id, from its first document request
	docDone  bool
}

func (t *tracker) begin() {
	t.mu.Lock()
	t.inFlight++
	t.requests++
	t.last = time.Now()
	t.mu.Unlock()
}

func (t *tracker) end(failed bool) {
	t.mu.Lock()
	t.inFlight--
	if failed {
		t.failed++
	}
	t.last = time.Now()
	t.mu.Unlock()
}

// idle reports whether no request is in flight and none ended within quiet.
func (t *tracker) idle(quiet time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inFlight == 0 && time.Since(t.last) >= quiet
}

// Render renders pg and returns the result. Errors: ctx's, ErrClosed,
// the browser's start, a render past Options.Timeout (ErrTimeout), a
// browser that died (ErrBrowserDied), or a DevTools failure; the page
// should then be tried again later (nothing of it is kept). Render
// returns only once every Fetcher call of the page has returned.
func (p *Pool) Render(ctx context.Context, pg Page) (*Result, error) {
	if pg.Fetch == nil {
		return nil, errors.New("render: Page.Fetch is nil")
	}
	if !strings.HasPrefix(pg.URL, "http://") && !strings.HasPrefix(pg.URL, "https://") {
		return nil, fmt.Errorf("render: page URL %q is not http(s)", pg.URL)
	}
	// The wait for a page slot and a browser's start are not the page's
	// time: a slot frees within the other pages' timeouts, and a start is
	// bounded on its own (30 s).
	b, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	tctx, cancelT := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancelT()
	// A render past its deadline kills the browser at once: closing the
	// tab of a renderer that never yields would wait on it.
	stopKill := context.AfterFunc(tctx, func() {
		if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			p.kill(b, "render timed out")
		}
	})
	defer stopKill()
	// A browser that dies ends the render at once (its Fetcher calls too).
	rctx, cancelR := context.WithCancel(tctx)
	defer cancelR()
	stopWatch := context.AfterFunc(b.gone, cancelR)
	defer stopWatch()
	res, err := p.render(rctx, b, pg)
	kill := false
	switch {
	case err == nil:
	case errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		kill = true
		err = fmt.Errorf("render: %s: %w after %s", pg.URL, ErrTimeout, p.opts.Timeout)
	case b.gone.Err() != nil || !alive(b.pid):
		err = fmt.Errorf("render: %s: %w: %v", pg.URL, ErrBrowserDied, err)
	default:
		err = fmt.Errorf("render: %s: %w", pg.URL, err)
	}
	p.release(b, kill)
	if err != nil {
		return nil, err
	}
	res.Took = time.Since(start)
	return res, nil
}

// render runs one page in b under tctx (the render's deadline).
func (p *Pool) render(tctx context.Context, b *instance, pg Page) (*Result, error) {
	tr := &tracker{last: time.Now()}
	events := make(chan *fetch.EventRequestPaused, 1024)
	pctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			tr.begin()
			select {
			case events <- e:
			default: // the handler fell behind by 1024 requests: fail it later via the page's end
				tr.end(true)
			}
		}
	}))
	// Closing the tab first, then waiting for the handlers: a handler's
	// Fetcher call gets pctx, which ends here.
	defer func() {
		cancel()
		tr.wg.Wait()
	}()
	// The page's own context: commands must not outlive the render.
	stop := context.AfterFunc(tctx, cancel)
	defer stop()

	if _, err := chromedp.Call(pctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}}); err != nil {
		return nil, fmt.Errorf("Fetch.enable: %w", err)
	}
	if _, err := chromedp.Call(pctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: hookScript}); err != nil {
		return nil, fmt.Errorf("Page.addScriptToEvaluateOnNewDocument: %w", err)
	}
	// The dispatcher counts in tr.wg until it ends (with pctx), so every
	// handler it starts is added while the count is above zero, and the
	// deferred Wait waits for all of them.
	tr.wg.Add(1)
	go func() {
		defer tr.wg.Done()
		for {
			select {
			case <-pctx.Done():
				// Drain what is queued so begin/end balance.
				for {
					select {
					case <-events:
						tr.end(true)
					default:
						return
					}
				}
			case e := <-events:
				tr.wg.Add(1)
				go func() {
					defer tr.wg.Done()
					p.answer(pctx, tr, pg, e)
				}()
			}
		}
	}()
	if err := chromedp.Do(pctx, chromedp.Navigate(pg.URL)); err != nil {
		return nil, fmt.Errorf("navigate: %w", err)
	}
	t0 := time.Now()
	p.waitIdle(pctx, tr)
	p.log.Debug("render: idle", "after", time.Since(t0))
	// Scroll to the bottom; once there, wait for idle and look again: what
	// the idle wait brought in (a JSON answer that waited for its
	// politeness slot, then the content built from it) may have made the
	// page longer, with lazy content below the fold, and the scroll goes
	// on. At most MaxScrolls steps in all.
	for i := 0; i < p.opts.MaxScrolls; i++ {
		bottom, err := chromedp.Run(pctx, chromedp.Evaluate[bool](scrollScript))
		if err != nil {
			return nil, fmt.Errorf("scroll: %w", err)
		}
		// A short pause for the observers of lazy content to start their
		// requests.
		if err := chromedp.Do(pctx, chromedp.Sleep(100*time.Millisecond)); err != nil {
			return nil, err
		}
		if !bottom {
			continue
		}
		p.waitIdle(pctx, tr)
		if still, err := chromedp.Run(pctx, chromedp.Evaluate[bool](atBottomScript)); err != nil || still {
			break
		}
	}
	p.log.Debug("render: scrolled", "after", time.Since(t0))
	p.waitIdle(pctx, tr)
	p.log.Debug("render: idle again", "after", time.Since(t0))
	read, err := chromedp.Run(pctx, chromedp.Evaluate[domRead](readScript))
	if err != nil {
		return nil, fmt.Errorf("read the DOM: %w", err)
	}
	res := &Result{HTML: read.HTML, Links: read.Links}
	if pg.Screenshot {
		if res.Screenshot, err = chromedp.Run(pctx, chromedp.CaptureScreenshot()); err != nil {
			return nil, fmt.Errorf("screenshot: %w", err)
		}
	}
	tr.mu.Lock()
	routes := append(append([]string(nil), tr.routes...), read.Routes...)
	routes = append(routes, read.Href)
	res.Requests, res.Failed = tr.requests-1, tr.failed
	tr.mu.Unlock()
	seen := map[string]bool{pg.URL: true}
	for _, r := range routes {
		if r != "" && !seen[r] && (strings.HasPrefix(r, "http://") || strings.HasPrefix(r, "https://")) {
			seen[r] = true
			res.Routes = append(res.Routes, r)
		}
	}
	return res, nil
}

// waitIdle waits until the page's network is idle (tracker.idle with
// IdleQuiet), at most IdleMax, or until ctx ends.
func (p *Pool) waitIdle(ctx context.Context, tr *tracker) {
	deadline := time.Now().Add(p.opts.IdleMax)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !tr.idle(p.opts.IdleQuiet) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// blocked are the resource types failed without asking the Fetcher.
var blocked = map[network.ResourceType]bool{
	network.ResourceTypeWebSocket: true, network.ResourceTypeEventSource: true, network.ResourceTypePing: true,
	network.ResourceTypeCSPViolationReport: true, network.ResourceTypeSignedExchange: true, network.ResourceTypeFedCM: true,
}

// answer answers one paused request: the main document from pg.Document,
// a later main-frame navigation with 204 (noted as a route), a blocked
// type or a non-http(s) URL with a failure, anything else from pg.Fetch.
func (p *Pool) answer(pctx context.Context, tr *tracker, pg Page, e *fetch.EventRequestPaused) {
	failed := true
	defer func() { tr.end(failed) }()
	fail := func(reason network.ErrorReason) {
		_, _ = chromedp.Call(pctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: reason})
	}
	fulfill := func(r Response) {
		_, err := chromedp.Call(pctx, fetch.FulfillRequest, fetch.FulfillRequestParams{
			RequestID: e.RequestID, ResponseCode: int64(r.Status), ResponseHeaders: headerEntries(r.Header), Body: r.Body,
		})
		failed = err != nil
	}
	req := e.Request
	if e.ResourceType == network.ResourceTypeDocument {
		tr.mu.Lock()
		first := !tr.docDone
		main := first || string(e.FrameID) == tr.docFrame
		if first {
			tr.docDone, tr.docFrame = true, string(e.FrameID)
		} else if main {
			tr.routes = append(tr.routes, req.URL)
		}
		tr.mu.Unlock()
		if first {
			fulfill(pg.Document)
			return
		}
		if main {
			fulfill(Response{Status: http.StatusNoContent}) // the page stays where it is
			return
		}
	}
	if blocked[e.ResourceType] || eventStream(req.Headers) || !(strings.HasPrefix(req.URL, "http://") || strings.HasPrefix(req.URL, "https://")) {
		fail(network.ErrorReasonBlockedByClient)
		return
	}
	h := http.Header{}
	for k, v := range req.Headers {
		if s, ok := v.(string); ok {
			h.Set(k, s)
		}
	}
	r, err := pg.Fetch(pctx, Request{URL: req.URL, Method: req.Method, Header: h, Type: string(e.ResourceType)})
	if err != nil {
		fail(network.ErrorReasonFailed)
		return
	}
	if r.Status < 100 || r.Status > 599 {
		fail(network.ErrorReasonFailed)
		return
	}
	fulfill(r)
}

// eventStream reports whether a request asks for text/event-stream (an
// EventSource, which Chromium may report with another resource type).
func eventStream(h network.Headers) bool {
	for k, v := range h {
		if s, ok := v.(string); ok && strings.EqualFold(k, "Accept") && strings.Contains(s, "text/event-stream") {
			return true
		}
	}
	return false
}

// dropped are the response headers the browser must not see: the body it
// gets is decoded and whole.
var dropped = map[string]bool{"Content-Encoding": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true}

// headerEntries converts h for Fetch.fulfillRequest, without dropped.
func headerEntries(h http.Header) []*fetch.HeaderEntry {
	var out []*fetch.HeaderEntry
	for k, vs := range h {
		if dropped[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range vs {
			out = append(out, &fetch.HeaderEntry{Name: k, Value: v})
		}
	}
	return out
}
