package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// requisiteSite is a loopback site whose page loads what a documentation
// site's does: a style sheet chain five deep (a.css -> b.css -> c.css ->
// d.css -> e.css, each @import written another way; e.css url()s a font
// and an image, d.css an image), an @import loop (loop-a.css <-> loop-b.css),
// img and source srcset, link rel=preload (font, and an image with
// imagesrcset), modulepreload, manifest, icon, apple-touch-icon, and a style
// attribute's url(). Its robots.txt redirects once. It counts the requests
// per path.
type requisiteSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

// requisiteSheets are the site's style sheets by path.
var requisiteSheets = map[string]string{
	"/css/a.css":      "@import url(b.css);\nbody { color: black }\n",
	"/css/b.css":      "@import \"c.css\" screen;\n",
	"/css/c.css":      "/* @import \"not-this.css\"; */\n@import url('d.css');\n",
	"/css/d.css":      "@import 'e.css';\nbody { background: url(/img/d.png) }\n",
	"/css/e.css":      "@font-face { font-family: Doc; src: url(\"../font/e.woff2\") format(\"woff2\") }\nh1 { background-image: url(../img/e.png) }\n",
	"/css/loop-a.css": "@import \"loop-b.css\";\n",
	"/css/loop-b.css": "@import \"loop-a.css\";\np { background: url(/img/loop.png) }\n",
}

// requisitePage is the site's page: every requisite kind once, and a link
// that max_depth 0 must not follow.
const requisitePage = `<!DOCTYPE html><html><head>
<link rel="stylesheet" href="/css/a.css"><link rel="stylesheet" href="/css/loop-a.css">
<link rel="preload" href="/font/pre.woff2" as="font" crossorigin>
<link rel="preload" as="image" href="/img/hero.png" imagesrcset="/img/hero-2x.png 2x">
<link rel="modulepreload" href="/js/mod.js"><link rel="manifest" href="/app.webmanifest">
<link rel="icon" href="/favicon.ico"><link rel="apple-touch-icon" href="/img/touch.png">
</head><body>
<img src="/img/logo.png" srcset="/img/logo-2x.png 2x, /img/logo-3x.png 3x" alt="logo">
<picture><source srcset="/img/wide.webp 800w, /img/wider.webp 1600w"><img src="/img/logo.png" alt=""></picture>
<div style="background-image: url('/img/styled.png')">styled</div>
<a href="/next.html">next</a>
</body></html>`

// requisiteWant are the hop paths of every requisite of requisitePage,
// by path: each is fetched once, at the page's depth 0.
var requisiteWant = map[string]string{
	"/css/a.css": "E", "/css/b.css": "EE", "/css/c.css": "EEE", "/css/d.css": "EEEE", "/css/e.css": "EEEEE",
	"/img/d.png": "EEEEE", "/font/e.woff2": "EEEEEE", "/img/e.png": "EEEEEE",
	"/css/loop-a.css": "E", "/css/loop-b.css": "EE", "/img/loop.png": "EEE",
	"/font/pre.woff2": "E", "/img/hero.png": "E", "/img/hero-2x.png": "E", "/js/mod.js": "E",
	"/app.webmanifest": "E", "/favicon.ico": "E", "/img/touch.png": "E",
	"/img/logo.png": "E", "/img/logo-2x.png": "E", "/img/logo-3x.png": "E",
	"/img/wide.webp": "E", "/img/wider.webp": "E", "/img/styled.png": "E",
}

func newRequisiteSite(t *testing.T) *requisiteSite {
	t.Helper()
	s := &requisiteSite{hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		p := r.URL.Path
		switch {
		case p == "/robots.txt":
			http.Redirect(w, r, "/robots-moved.txt", http.StatusMovedPermanently)
		case p == "/robots-moved.txt":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		case p == "/page.html" || p == "/next.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, requisitePage)
		case requisiteSheets[p] != "":
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			fmt.Fprint(w, requisiteSheets[p])
		case requisiteWant[p] != "":
			w.Header().Set("Content-Type", "application/octet-stream")
			fmt.Fprintf(w, "bytes of %s", p)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *requisiteSite) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// A crawl with max_depth 0 from the page fetches every requisite of it at
// any depth (the five-deep style sheet chain, the font and images of its
// last sheet, srcset, preload, the style attribute, ...) exactly once, at
// depth 0 with the hop path that found it, ends the @import loop by the
// seen-set, and follows no link; each is stored once in the WARC files,
// and so are both hops of robots.txt (read back with warcio.js), which
// the crawl log does not list.
func TestCrawlRequisitesAtAnyDepth(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	site := newRequisiteSite(t)
	cfg := testConfig()
	cfg.MaxDepth = 0
	cfg.Sitemaps = false
	c := newCrawl(t, zk.Addr(), "requisites", cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{site.srv.URL + "/page.html"})
	c.runWorkers(1, 60*time.Second)

	logged := map[string][]storage.LogEntry{}
	for _, e := range c.logs() {
		logged[strings.TrimPrefix(e.URL, site.srv.URL)] = append(logged[strings.TrimPrefix(e.URL, site.srv.URL)], e)
	}
	if len(logged) != len(requisiteWant)+1 {
		t.Errorf("crawl log has %d URLs, want the page and its %d requisites", len(logged), len(requisiteWant))
	}
	responses := c.warcResponses()
	for path, hops := range requisiteWant {
		es := logged[path]
		if len(es) != 1 {
			t.Errorf("%s logged %d times, want once", path, len(es))
			continue
		}
		if e := es[0]; e.Status != 200 || e.Depth != 0 || e.Hops != hops {
			t.Errorf("%s logged status %d depth %d hops %q; want 200, 0, %q", path, e.Status, e.Depth, e.Hops, hops)
		}
		if n := site.hit(path); n != 1 {
			t.Errorf("%s requested %d times, want once", path, n)
		}
		if n := responses[site.srv.URL+path]; n != 1 {
			t.Errorf("%s has %d WARC response records, want 1", path, n)
		}
	}
	if n := site.hit("/next.html"); n != 0 {
		t.Errorf("/next.html (a link, max_depth 0) requested %d times", n)
	}
	for _, path := range []string{"/robots.txt", "/robots-moved.txt"} {
		if _, ok := logged[path]; ok {
			t.Errorf("%s is in the crawl log; robots.txt goes to the WARC files only", path)
		}
		if n := responses[site.srv.URL+path]; n != 1 || site.hit(path) != 1 {
			t.Errorf("%s: %d WARC response records, %d requests; want 1 and 1", path, n, site.hit(path))
		}
	}

	// The independent reader finds both robots.txt hops, with the request
	// records beside them.
	_, files := warcRecords(t, c.out)
	got := map[string]bool{}
	for _, f := range files {
		lines, err := testenv.WarcioCDX(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			got[strings.TrimPrefix(l.URL, site.srv.URL)+" "+l.MIME+" "+l.Status] = true
		}
	}
	for _, want := range []string{"/robots.txt text/html 301", "/robots-moved.txt text/plain 200"} {
		if !got[want] {
			t.Errorf("warcio did not index %q", want)
		}
	}
	// Each hop's request record: warcio indexes it under the same URL
	// without a MIME type.
	for _, path := range []string{"/robots.txt", "/robots-moved.txt"} {
		if !got[path+"  "] {
			t.Errorf("warcio did not index the request record of %s", path)
		}
	}
}

// robotsFailStore is a memStore whose writes of robots.txt exchanges fail.
type robotsFailStore struct{ *memStore }

func (s robotsFailStore) WriteExchange(ex storage.Exchange) (storage.ResponseInfo, error) {
	if strings.HasSuffix(ex.TargetURI, "/robots.txt") {
		s.calls.add("warc %s: failed", ex.TargetURI)
		return storage.ResponseInfo{}, errors.New("no space left on device")
	}
	return s.memStore.WriteExchange(ex)
}

// A robots.txt response that cannot be written to the WARC file is logged
// and dropped: the page that asked is still fetched, stored, logged and
// completed, and the worker keeps claiming.
func TestProcessRobotsWriteFailureKeepsThePage(t *testing.T) {
	robots := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	}))
	t.Cleanup(robots.Close)
	page := robots.URL + "/p"
	cfg := config.Default()
	cfg.AllowPrivateNetworks, cfg.PageRequisites = true, false
	p := newPipeline(t, cfg, map[string]memPage{page: {status: 200, mime: "text/html", body: "<p>hi</p>"}})
	// newPipeline turns robots.txt off; turn it on with a real fetcher to
	// the loopback server, its responses going to the failing store.
	live := *p.w.current()
	live.cfg.ObeyRobots = true
	p.w.live.Store(&live)
	p.w.store = robotsFailStore{p.store}
	p.w.robots = fetch.NewRobots(fetch.New(fetch.Options{AllowPrivateNetworks: true, Logger: testLogger(t)}),
		fetch.RobotsOptions{Logger: testLogger(t), Gate: p.w.robotsGate, Fetched: p.w.robotsFetched})
	p.run(t, frontier.Item{URL: page}, nil)
	p.wantCalls(t, "warc "+robots.URL+"/robots.txt: failed", "fetch "+page, "warc "+page, "log 200", "complete")
	if p.w.outputError() != "" || !p.w.outputsWritable() {
		t.Errorf("a failed robots.txt write stopped claiming: %q", p.w.outputError())
	}
}

// A hostile site whose every style sheet @imports a new one (an endless
// chain: /s/1.css -> /s/2.css -> ...) is stopped by what stops any URL,
// not by a chain length: here max_pages_per_host 80 with action drop ends
// the crawl with exactly 80 of its URLs fetched, each once, all at depth
// 0, the last with its hop path cut to frontier.MaxHops letters.
func TestCrawlEndlessImportChainEndsAtTheHostBudget(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		var n int
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<link rel="stylesheet" href="/s/1.css">`)
		case func() bool { _, err := fmt.Sscanf(r.URL.Path, "/s/%d.css", &n); return err == nil }():
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprintf(w, "@import \"%d.css\";\n", n+1)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxDepth = 0
	cfg.Sitemaps, cfg.ObeyRobots = false, false
	const budget = 80
	cfg.MaxPagesPerHost, cfg.HostBudgetAction = budget, config.HostBudgetDrop
	c := newCrawl(t, zk.Addr(), "endless-css", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
	c.runWorkers(1, 60*time.Second)
	lines := c.logs()
	if len(lines) != budget {
		t.Errorf("crawl log has %d lines, want the budget of %d", len(lines), budget)
	}
	last, found := fmt.Sprintf("%s/s/%d.css", srv.URL, budget-1), false
	for _, e := range lines {
		found = found || e.URL == last
		if e.Depth != 0 || e.Status != 200 {
			t.Errorf("%s: depth %d status %d, want 0 and 200", e.URL, e.Depth, e.Status)
		}
		if want := "+" + strings.Repeat("E", frontier.MaxHops-1); e.URL == last && e.Hops != want {
			t.Errorf("%s: hops %q, want %q", e.URL, e.Hops, want)
		}
	}
	if !found {
		t.Errorf("%s (the %dth URL of the chain) not logged", last, budget)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != budget {
		t.Errorf("%d paths requested, want %d", len(hits), budget)
	}
	for p, n := range hits {
		if n != 1 {
			t.Errorf("%s requested %d times", p, n)
		}
	}
}
