package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/sync/errgroup"
)

// ErrNoBrowser: no Chromium or Chrome binary is installed (run `make deps`,
// which installs Debian's chromium).
var ErrNoBrowser = errors.New("testenv: Chromium is not installed: run `make deps` (or apt-get install chromium)")

// Bounds of one page's render in SPA.RenderTruth.
const (
	// spaIdleQuiet is how long no request may be in flight for the network
	// to count as idle.
	spaIdleQuiet = 500 * time.Millisecond
	// spaRenderTimeout bounds one page's whole render (load, idle, scroll,
	// idle again).
	spaRenderTimeout = 30 * time.Second
	// spaRenderTabs is how many pages are rendered at once, each in its own
	// browser context.
	spaRenderTabs = 4
)

// BrowserPath returns the first of chromium, chromium-browser,
// google-chrome and google-chrome-stable on $PATH, or ErrNoBrowser.
func BrowserPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// SPATruth is the ground truth of the SPA fixture, found by rendering it
// live in headless Chromium (SPA.RenderTruth), written as JSON by
// `testweb --spa --truth FILE`.
type SPATruth struct {
	// Seed is the fixture's seed, the app host's "/".
	Seed string `json:"seed"`
	// AppHost and AssetHost are the two politeness keys, host:port.
	AppHost   string `json:"app_host"`
	AssetHost string `json:"asset_host"`
	// Pages are the URLs that exist only after the script runs: every
	// same-origin link of a rendered page (the seed's shell has none), the
	// history.pushState route included; sorted, the seed not among them.
	Pages []string `json:"pages"`
	// Resources are the URLs that renders of the seed and every page
	// requested and got a 200 for (script, style sheet, JSON, fonts,
	// images, the lazy ones after scrolling), page documents left out:
	// what a replay needs besides the pages; sorted.
	Resources []string `json:"resources"`
	// Renders gives, for the seed and each page, the resources its own
	// render requested (200 only), sorted.
	Renders map[string][]string `json:"renders"`
	// RouteChange is what clicking the seed's route link requested: the
	// in-page history.pushState to SPARoute, which fetches the route's
	// JSON without loading a document.
	RouteChange []string `json:"route_change"`
	// Browser is the browser's product and version.
	Browser string `json:"browser"`
}

// RenderTruth renders the fixture in the headless browser at browser
// (BrowserPath), starting at the seed and following every same-origin link
// of each rendered DOM, breadth first, 4 pages at once: each in a fresh
// browser context with the cache off, waiting for the network to be idle
// (no request in flight for 500 ms), for #app[data-ready], then scrolling
// to the bottom and waiting for idle again, at most 30 s a page. It also clicks the seed's route
// link and checks the history.pushState route change. The renders'
// requests arrive at the fixture like any client's (ResetArrivals forgets
// them). Errors name the page and the step.
func (s *SPA) RenderTruth(ctx context.Context, browser string) (SPATruth, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(900, 600))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ver, err := chromedp.Run(bctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		return SPATruth{}, fmt.Errorf("testenv: SPA truth: start %s: %w", browser, err)
	}
	t := SPATruth{Seed: s.Seed(), AppHost: s.app, AssetHost: s.assets, Renders: map[string][]string{}, Browser: ver}
	resources := map[string]bool{}
	level, seen := []string{t.Seed}, map[string]bool{t.Seed: true}
	for len(level) > 0 {
		renders := make([]spaRender, len(level))
		g, gctx := errgroup.WithContext(bctx)
		g.SetLimit(spaRenderTabs)
		for i, page := range level {
			g.Go(func() (err error) {
				renders[i], err = s.renderPage(gctx, page, page == t.Seed)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return SPATruth{}, err
		}
		var next []string
		for i, r := range renders {
			t.Renders[level[i]] = r.resources
			for _, u := range r.resources {
				resources[u] = true
			}
			if r.routeChange != nil {
				t.RouteChange = r.routeChange
			}
			for _, l := range r.links {
				if !seen[l] {
					seen[l] = true
					next = append(next, l)
					t.Pages = append(t.Pages, l)
				}
			}
		}
		level = next
	}
	for u := range resources {
		if !seen[u] {
			t.Resources = append(t.Resources, u)
		}
	}
	slices.Sort(t.Pages)
	slices.Sort(t.Resources)
	if t.RouteChange == nil {
		return SPATruth{}, fmt.Errorf("testenv: SPA truth: the seed's route link made no request")
	}
	return t, nil
}

// spaRender is what one page's render gave.
type spaRender struct {
	resources   []string // URLs answered 200, sorted, the page itself left out
	links       []string // same-origin http links of the rendered DOM, fragment cut
	routeChange []string // the seed only: URLs the route link's click requested
}

// spaNet follows one tab's requests: in flight, and those answered 200.
type spaNet struct {
	mu       sync.Mutex
	pending  map[network.RequestID]string
	ok       map[string]bool
	last     time.Time // of the last request start or end
	requests []string  // every URL requested, in order
}

func (n *spaNet) event(ev any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		n.pending[ev.RequestID] = ev.Request.URL
		n.requests = append(n.requests, ev.Request.URL)
	case *network.EventResponseReceived:
		if ev.Response.Status == 200 {
			n.ok[ev.Response.URL] = true
		}
	case *network.EventLoadingFinished:
		delete(n.pending, ev.RequestID)
	case *network.EventLoadingFailed:
		delete(n.pending, ev.RequestID)
	default:
		return
	}
	n.last = time.Now()
}

// idle waits until no request has been in flight for spaIdleQuiet.
func (n *spaNet) idle(ctx context.Context) error {
	for {
		n.mu.Lock()
		quiet := len(n.pending) == 0 && time.Since(n.last) >= spaIdleQuiet
		n.mu.Unlock()
		if quiet {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // poll interval; the check is the count
		}
	}
}

// answered returns the URLs answered 200 so far, sorted, data: URLs and
// those in skip left out.
func (n *spaNet) answered(skip ...string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for u := range n.ok {
		if !strings.HasPrefix(u, "data:") && !slices.Contains(skip, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// spaScroll scrolls to the bottom a viewport at a time, 150 ms apart (for
// IntersectionObserver to fire), until the bottom is reached, at most 200
// steps.
const spaScroll = `(async () => {
  for (let i = 0; i < 200; i++) {
    window.scrollBy(0, window.innerHeight);
    await new Promise(r => setTimeout(r, 150));
    if (window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1) break;
  }
  await new Promise(r => setTimeout(r, 150));
  return window.scrollY;
})()`

// spaLinks lists the rendered DOM's links as absolute URLs.
const spaLinks = `[...document.querySelectorAll('a[href]')].map(a => a.href)`

// renderPage renders page in a fresh browser context of the browser bctx.
func (s *SPA) renderPage(bctx context.Context, page string, clickRoute bool) (spaRender, error) {
	fail := func(step string, err error) (spaRender, error) {
		return spaRender{}, fmt.Errorf("testenv: SPA truth: render %s: %s: %w", page, step, err)
	}
	tctx, cancelTab := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tctx, spaRenderTimeout)
	defer cancel()
	n := &spaNet{pending: map[network.RequestID]string{}, ok: map[string]bool{}, last: time.Now()}
	if err := chromedp.Listen(tctx, n.event); err != nil {
		return fail("listen", err)
	}
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		return fail("Network.enable", err)
	}
	if _, err := chromedp.Call(tctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		return fail("Network.setCacheDisabled", err)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(page)); err != nil {
		return fail("navigate", err)
	}
	if err := n.idle(tctx); err != nil {
		return fail("network idle after load", err)
	}
	if err := s.ready(tctx); err != nil {
		return fail("#app[data-ready]", err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[float64](spaScroll, chromedp.EvalAwaitPromise)); err != nil {
		return fail("scroll", err)
	}
	if err := n.idle(tctx); err != nil {
		return fail("network idle after scrolling", err)
	}
	hrefs, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](spaLinks))
	if err != nil {
		return fail("links", err)
	}
	r := spaRender{resources: n.answered(page)}
	base, _ := url.Parse(page)
	for _, h := range hrefs {
		u, err := url.Parse(h)
		if err != nil || u.Host != base.Host || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		u.Fragment = ""
		if l := u.String(); !slices.Contains(r.links, l) {
			r.links = append(r.links, l)
		}
	}
	if !clickRoute {
		return r, nil
	}
	n.mu.Lock()
	before := len(n.requests)
	n.mu.Unlock()
	if err := chromedp.Do(tctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`),
		chromedp.Click(`a[href$="`+SPARoute+`"]`)); err != nil {
		return fail("click the route link", err)
	}
	if err := s.ready(tctx); err != nil {
		return fail("route change", err)
	}
	if err := n.idle(tctx); err != nil {
		return fail("network idle after the route change", err)
	}
	loc, err := chromedp.Run(tctx, chromedp.Location())
	if err != nil {
		return fail("location after the route change", err)
	}
	if !strings.HasSuffix(loc, SPARoute) {
		return fail("route change", fmt.Errorf("location is %s, want %s", loc, SPARoute))
	}
	n.mu.Lock()
	r.routeChange = slices.Clone(n.requests[before:])
	n.mu.Unlock()
	slices.Sort(r.routeChange)
	r.routeChange = slices.Compact(r.routeChange)
	return r, nil
}

// ready waits until the script marks #app[data-ready] "ok"; "error" (the
// JSON did not load) is an error.
func (s *SPA) ready(ctx context.Context) error {
	for {
		st, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById('app') || {getAttribute: () => ''}).getAttribute('data-ready') || ''`))
		switch {
		case err != nil:
			return err
		case st == "ok":
			return nil
		case st != "":
			return fmt.Errorf("the script reports %q", st)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // poll interval; the check is the attribute
		}
	}
}
