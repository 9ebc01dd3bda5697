package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// replayWebFiles are the files of ReplayWeb.page (npm package
// replaywebpage) that a self-hosted replay needs: the UI and the service
// worker.
var replayWebFiles = []string{"ui.js", "sw.js"}

// replayPrefix is the path under the replay server's origin at which
// ReplayWeb.page's service worker answers archived URLs
// (/replay/w/<collection>/[:<hash>/]<timestamp><modifier>_/<archived URL>).
const replayPrefix = "/replay/w/"

// replayAPI is the path of ReplayWeb.page's own API (collection listing,
// polled while the archive loads), under the replay prefix but no archived
// URL.
const replayAPI = "/replay/w/api/"

// replayViewport is the browser window, in CSS pixels, of the live page and
// of the replay (whose frame fills it).
const replayViewportW, replayViewportH = 900, 600

// replayBrowser is one headless Chromium (chromedp) and the folder of
// ReplayWeb.page's files.
type replayBrowser struct {
	dir string
	ctx context.Context

	mu       sync.Mutex
	requests []*replayRequest // in the order sent, since the last reset
	byID     map[network.RequestID]*replayRequest
	frames   map[cdp.FrameID]string // each frame's document URL, since the last reset

	swActive map[string]bool // replay servers (base URLs) whose service worker is active
}

// replayRequest is one request the browser sent: its URL, and its answer
// (HTTP status, whether the service worker gave it) or failure, once known.
type replayRequest struct {
	url      string
	frame    cdp.FrameID
	answered bool
	status   int64
	fromSW   bool
	failure  string
}

// reset forgets the requests seen so far.
func (b *replayBrowser) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests, b.byID, b.frames = nil, map[network.RequestID]*replayRequest{}, map[cdp.FrameID]string{}
}

// pageView is what the browser saw of one page (live or replayed), as
// pageProbe gives it: an element's computed style (color, fontFamily,
// fontSize, backgroundColor, backgroundImage), the status of each web font
// by family ("loaded", "error", ...), the resources the document fetched
// (URL and HTTP status), its icons and its URL; then a screenshot (PNG of
// the viewport), and for a replay the number of requests the archive
// answered and the misses.
type pageView struct {
	Style     map[string]string `json:"style"`
	Fonts     map[string]string `json:"fonts"`
	Resources []struct {
		Name   string `json:"name"`
		Status int    `json:"status"`
	} `json:"resources"`
	Icons  []string `json:"icons"`
	Href   string   `json:"href"`
	PNG    []byte   `json:"-"`
	Served int      `json:"-"`
	Misses []string `json:"-"`
}

// fetched reports whether the document fetched a resource whose URL ends
// in suffix with status 200.
func (v pageView) fetched(suffix string) bool {
	for _, r := range v.Resources {
		if strings.HasSuffix(r.Name, suffix) && r.Status == 200 {
			return true
		}
	}
	return false
}

// missingResources lists each resource the live page fetched with status
// 200 that the replayed page v did not fetch with status 200 (resource
// URLs compared with the replay prefix taken off). Icons are left out: a
// browser fetches them for a top-level page only, and the replayed page is
// in a frame.
func (v pageView) missingResources(live pageView) []string {
	got := map[string]bool{}
	for _, r := range v.Resources {
		if r.Status == 200 {
			got[unreplayed(r.Name)] = true
		}
	}
	var missing []string
	for _, r := range live.Resources {
		if r.Status == 200 && !got[r.Name] && !slices.Contains(live.Icons, r.Name) {
			missing = append(missing, "the live page fetched "+r.Name+", the replay did not")
		}
	}
	return missing
}

// replayedURL matches the replay prefix ReplayWeb.page puts before an
// archived URL (base/replay/w/<collection>/[:<hash>/]<timestamp><modifier>_/).
var replayedURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/replay/w/[^/]+/(?::[0-9a-f]+/)?[0-9]+(?:[a-z]{2}_)?/`)

// unreplayed is s with each replay prefix taken off the URLs in it, so a
// replayed style value (url("<prefix>http://site/img/e.png")) compares
// with the live one.
func unreplayed(s string) string { return replayedURL.ReplaceAllString(s, "") }

// replayWebDir is the folder holding ReplayWeb.page's files:
// $ZKCRAWL_REPLAYWEB, else tools/replayweb of the repository (make deps).
func replayWebDir() string {
	if d := os.Getenv("ZKCRAWL_REPLAYWEB"); d != "" {
		return d
	}
	abs, _ := filepath.Abs(filepath.Join("..", "tools", "replayweb"))
	return abs
}

// newReplayBrowser starts headless Chromium for the test; it skips the test,
// naming what is missing and how to install it, when Chromium or
// ReplayWeb.page's files are absent.
func newReplayBrowser(t *testing.T) *replayBrowser {
	t.Helper()
	exe := browserPath()
	dir := replayWebDir()
	var missing []string
	if exe == "" {
		missing = append(missing, "Chromium (Debian package chromium: `make deps` or `apt-get install chromium`)")
	}
	var absent []string
	for _, f := range replayWebFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			absent = append(absent, f)
		}
	}
	if len(absent) > 0 {
		missing = append(missing, fmt.Sprintf("ReplayWeb.page's %s in %s (`make deps` fetches replaywebpage@%s from npm; or set ZKCRAWL_REPLAYWEB)", strings.Join(absent, ", "), dir, replayWebVersion))
	}
	if len(missing) > 0 {
		t.Skip("!!! replay in ReplayWeb.page NOT checked: missing " + strings.Join(missing, "; ") + " !!!")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("ignore-certificate-errors", true), // the live fixture's TLS certificate is httptest's
		chromedp.WindowSize(replayViewportW, replayViewportH))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	b := &replayBrowser{dir: dir, ctx: bctx, swActive: map[string]bool{}}
	b.reset()
	err := chromedp.Listen(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if r := b.byID[ev.RequestID]; r != nil { // a redirect: the same request goes on
				r.url = ev.Request.URL
				if ev.Type == network.ResourceTypeDocument {
					b.frames[ev.FrameID] = ev.Request.URL
				}
				return
			}
			if ev.Type == network.ResourceTypeDocument {
				b.frames[ev.FrameID] = ev.Request.URL
			}
			r := &replayRequest{url: ev.Request.URL, frame: ev.FrameID}
			b.requests = append(b.requests, r)
			b.byID[ev.RequestID] = r
		case *network.EventResponseReceived:
			if r := b.byID[ev.RequestID]; r != nil {
				r.answered, r.status, r.fromSW = true, ev.Response.Status, ev.Response.FromServiceWorker
			}
		case *network.EventLoadingFailed:
			if r := b.byID[ev.RequestID]; r != nil {
				r.answered, r.failure = true, ev.ErrorText
				if ev.Canceled {
					r.failure += " (canceled)"
				}
			}
		}
	})
	if err != nil {
		t.Fatalf("start Chromium %s: %v", exe, err)
	}
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("Chromium: Network.enable: %v", err)
	}
	return b
}

// replayWebVersion is the version of the npm package replaywebpage that
// make deps installs (REPLAYWEB_VERSION in the Makefile).
const replayWebVersion = "2.5.3"

// pageProbe is a JavaScript function of a document, a CSS selector and a
// font family ("" for none): the computed style of the selector's first
// element, the status of each web font (FontFace) by family and the URL and
// status of each resource the document fetched, the URLs of its icons
// (link rel=icon); null while the document
// (its style sheets and images: the load event) or a web font is still
// loading, or while a declared face of the family is not yet loaded.
const pageProbe = `(d, sel, font) => {
  const el = d.querySelector(sel);
  if (!el || d.readyState !== 'complete' || d.fonts.status !== 'loaded') return null;
  const family = (f) => f.family.replace(/"/g, '');
  if ([...d.fonts].some(f => f.status === 'loading' || (family(f) === font && f.status === 'unloaded'))) return null;
  const cs = d.defaultView.getComputedStyle(el);
  const fonts = {};
  for (const f of d.fonts) fonts[family(f)] = f.status;
  const resources = d.defaultView.performance.getEntriesByType('resource').map(e => ({name: e.name, status: e.responseStatus}));
  return {style: {color: cs.color, fontFamily: cs.fontFamily, fontSize: cs.fontSize, backgroundColor: cs.backgroundColor, backgroundImage: cs.backgroundImage},
    fonts, resources, icons: [...d.querySelectorAll('link[rel~="icon"]')].map(l => l.href), href: d.location.href};
}`

// live loads url in the browser and returns its view once the first
// element matching sel is there and the page and font family have loaded
// (pageProbe).
func (b *replayBrowser) live(t *testing.T, url, sel, font string) pageView {
	t.Helper()
	return b.view(t, url, `(() => JSON.stringify((`+pageProbe+`)(document, `+jsString(sel)+`, `+jsString(font)+`)))()`, "live "+url)
}

// replayFrames is JavaScript that finds, through open shadow roots and
// same-origin frames, the replayed document of the archived URL
// (window.zkWant) and runs pageProbe on it with window.zkSel and
// window.zkFont; "null" until it is loaded.
const replayFrames = `(() => {
  const probe = ` + pageProbe + `;
  const docs = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.tagName === 'IFRAME') {
        let d = null;
        try { d = el.contentDocument; } catch (e) {}
        if (d) { docs.push(d); walk(d); }
      }
    }
  };
  walk(document);
  const seen = [];
  for (const d of docs) {
    seen.push(d.location.href + ' ' + d.readyState + ' fonts ' + d.fonts.status + ' [' + [...d.fonts].map(f => f.family + ':' + f.status) + ']');
    if (!d.location.href.endsWith('mp_/' + window.zkWant)) continue;
    const v = probe(d, window.zkSel, window.zkFont);
    if (v) return JSON.stringify(v);
  }
  window.zkSeen = seen;
  return 'null';
})()`

// replay opens the replay of the archived URL in ReplayWeb.page served by
// the replay server at base and returns its view once loaded (pageProbe of
// sel and font), with the number of requests the archive answered and the
// misses. The requests of the replayed page are those sent by a frame
// whose document is under the replay prefix (not those of ReplayWeb.page's
// own frames, such as its look-up of the page's /favicon.ico), less those
// for ReplayWeb.page's own files (the wombat.js it injects); a miss is
// one answered with an error status, one that failed, one to another
// origin (it left the archive for the live web), or one still unanswered
// 10 s after the page loaded.
func (b *replayBrowser) replay(t *testing.T, base, archived, sel, font string) pageView {
	t.Helper()
	page := base + "/embed.html?url=" + strings.ReplaceAll(archived, "&", "%26")
	b.serviceWorker(t, base, page)
	b.reset()
	v := b.view(t, page, `(() => { window.zkWant = `+jsString(archived)+`; window.zkSel = `+jsString(sel)+`; window.zkFont = `+jsString(font)+`; return `+replayFrames+`; })()`, "replay of "+archived)
	pageRequests := func() (reqs []replayRequest, pending int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, r := range b.requests {
			doc := b.frames[r.frame]
			switch {
			case strings.HasPrefix(r.url, "data:") || strings.HasPrefix(r.url, "blob:"):
				continue
			case !strings.HasPrefix(doc, base+replayPrefix) || strings.HasPrefix(doc, base+replayAPI):
				continue // a request of ReplayWeb.page itself (its frames), not of a replayed document
			case strings.HasPrefix(r.url, base+"/") && (!strings.HasPrefix(r.url, base+replayPrefix) || strings.HasPrefix(r.url, base+replayAPI)):
				continue // ReplayWeb.page's own files (wombat.js under /replay/static/) and API
			}
			reqs = append(reqs, *r)
			if !r.answered {
				pending++
			}
		}
		return reqs, pending
	}
	reqs, pending := pageRequests()
	for deadline := time.Now().Add(10 * time.Second); pending > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // poll interval; the check is the count
		reqs, pending = pageRequests()
	}
	for _, r := range reqs {
		switch {
		case !strings.HasPrefix(r.url, base+"/"):
			v.Misses = append(v.Misses, fmt.Sprintf("%s: requested outside the archive (the live web), %s", r.url, r.outcome()))
		case !r.answered || r.failure != "" || r.status >= 400:
			v.Misses = append(v.Misses, fmt.Sprintf("%s: %s", r.url, r.outcome()))
		default:
			v.Served++
		}
	}
	return v
}

// serviceWorker makes sure ReplayWeb.page's service worker is active for
// base's /replay/ scope before a replay is measured: the first time for a
// base, it opens page (whose <replay-web-page> registers the worker) and
// polls for up to 30 s until the registration's worker is activated. A
// replay frame loaded before then is not controlled by it, and the element
// gives up after three reloads when activation is slow (a loaded machine).
func (b *replayBrowser) serviceWorker(t *testing.T, base, page string) {
	t.Helper()
	if b.swActive[base] {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	const active = `navigator.serviceWorker.getRegistration('/replay/').then(r => !!(r && r.active && r.active.state === 'activated'))`
	for deadline := time.Now().Add(30 * time.Second); ; {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](active, chromedp.EvalAwaitPromise))
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ReplayWeb.page's service worker (%s/replay/sw.js) was not activated within 30 s (%v)", base, err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval; the check is the registration's state
	}
	b.swActive[base] = true
}

// outcome says how the request ended.
func (r replayRequest) outcome() string {
	switch {
	case !r.answered:
		return "no answer"
	case r.failure != "":
		return "failed: " + r.failure
	default:
		return fmt.Sprintf("status %d (service worker: %v)", r.status, r.fromSW)
	}
}

// view navigates to url, polls probe (a JavaScript expression giving a
// pageView as JSON, or "null" while loading) for up to 30 s, then takes a
// screenshot of the viewport.
func (b *replayBrowser) view(t *testing.T, url, probe, what string) pageView {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("%s: navigate: %v", what, err)
	}
	var v pageView
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](probe))
		if err == nil && s != "null" {
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				t.Fatalf("%s: probe answered %q: %v", what, s, err)
			}
			break
		}
		if time.Now().After(deadline) {
			b.mu.Lock()
			var seen []string
			for _, r := range b.requests {
				seen = append(seen, r.url+" "+r.outcome())
			}
			b.mu.Unlock()
			docs, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.zkSeen || []`))
			t.Fatalf("%s: the page with h1.brand, its style sheets and fonts did not load within 30 s (last probe %q, %v); frames %q; requests %q", what, s, err, docs, seen)
		}
		time.Sleep(100 * time.Millisecond) // poll interval; the check is the probe
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("%s: screenshot: %v", what, err)
	}
	v.PNG = shot
	return v
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// newReplayServer serves a self-hosted ReplayWeb.page on a loopback port
// (a secure context for its service worker): /embed.html?url=U, a page
// whose <replay-web-page> element fills the window with the replay of U
// from /crawl.wacz; ui.js at the root and under /replay/, where sw.js is
// (the element's replaybase); and the package wacz at /crawl.wacz.
func newReplayServer(t *testing.T, dir, wacz string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	files := http.FileServer(http.Dir(dir))
	mux.Handle("/replay/", http.StripPrefix("/replay", files))
	mux.Handle("/ui.js", files)
	mux.HandleFunc("/crawl.wacz", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, wacz)
	})
	mux.HandleFunc("/embed.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><head><script src="/ui.js"></script>
<style>html, body { margin: 0; padding: 0; overflow: hidden }
replay-web-page { position: fixed; top: 0; left: 0; width: 100vw; height: 100vh; display: block }</style></head>
<body><replay-web-page source="/crawl.wacz" url="%s" replaybase="/replay/" embed="replayonly"></replay-web-page></body></html>`,
			html.EscapeString(r.URL.Query().Get("url")))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// browserPath finds a Chromium or Chrome binary; "" when none is installed.
func browserPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
