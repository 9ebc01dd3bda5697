package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/render"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// spaSite is a small single-page app on two hosts: every page of host A
// is a shell whose script fetches JSON and builds its links and content;
// the index moves to a route by history.pushState; each article
// lazy-loads an image when scrolled to; every page loads a shared script
// from host B. Each server notes every request's arrival time and
// User-Agent.
type spaSite struct {
	a, b *httptest.Server
	mu   sync.Mutex
	hits map[string][]time.Time // host -> arrivals
	reqs map[string]int         // host+path -> requests
	uas  map[string]bool        // User-Agent values seen
}

// spaShell is every page of host A: an empty root and the app script.
func spaShell(b string) string {
	return `<!doctype html><html><head><title>spa</title><script src="/app.js"></script><script src="` + b + `/shared.js"></script></head>
<body><div id="root"></div><div style="height:5000px"></div><div id="lazy"></div></body></html>`
}

// spaApp renders the page from JSON: /api/index.json for the index (and
// its pushState route), /api/p/N.json for article N.
const spaApp = `addEventListener('DOMContentLoaded', async () => {
  const path = location.pathname;
  const api = path.startsWith('/p/') ? '/api' + path + '.json' : '/api/index.json';
  const data = await (await fetch(api)).json();
  const root = document.getElementById('root');
  for (const l of data.links) { const a = document.createElement('a'); a.href = l; a.textContent = l; root.appendChild(a); }
  const p = document.createElement('p'); p.textContent = data.text; root.appendChild(p);
  if (path === '/') history.pushState({}, '', '/route/home');
  if (data.image) {
    const io = new IntersectionObserver((es) => { if (es.some(e => e.isIntersecting)) {
      const img = new Image(); img.src = data.image; document.getElementById('lazy').appendChild(img); io.disconnect(); } });
    io.observe(document.getElementById('lazy'));
  }
});`

// spaArticles is the number of articles /p/1.. linked from the index.
const spaArticles = 3

func newSPASite(t *testing.T) *spaSite {
	t.Helper()
	s := &spaSite{hits: map[string][]time.Time{}, reqs: map[string]int{}, uas: map[string]bool{}}
	note := func(r *http.Request) {
		s.mu.Lock()
		s.hits[r.Host] = append(s.hits[r.Host], time.Now())
		s.reqs[r.Host+r.URL.Path]++
		s.uas[r.UserAgent()] = true
		s.mu.Unlock()
	}
	s.b = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note(r)
		if r.URL.Path == "/shared.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, "window.shared = true;")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.b.Close)
	s.a = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note(r)
		p := r.URL.Path
		json := func(v string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, v)
		}
		var n int
		_, _ = fmt.Sscanf(p, "/api/p/%d.json", &n)
		switch {
		case p == "/" || p == "/route/home" || strings.HasPrefix(p, "/p/"):
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, spaShell(s.b.URL))
		case p == "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, spaApp)
		case p == "/api/index.json":
			var links []string
			for i := 1; i <= spaArticles; i++ {
				links = append(links, fmt.Sprintf(`"/p/%d"`, i))
			}
			json(`{"text":"index","links":[` + strings.Join(links, ",") + `]}`)
		case n > 0:
			json(fmt.Sprintf(`{"text":"article %d","links":["/"],"image":"/img/%d.png"}`, n, n))
		case strings.HasPrefix(p, "/img/"):
			w.Header().Set("Content-Type", "image/png")
			fmt.Fprint(w, "not really a png")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.a.Close)
	return s
}

// A crawl of a small single-page app with render always, by two workers:
// every page that exists only after script (the articles, the pushState
// route) is crawled and marked rendered; the browser's requests (the
// JSON, the lazy images, the scripts) are in the WARC files, each with a
// crawl-log line (hop E, via its page) and fetched once; nothing reached
// a server but the crawler's own requests (its User-Agent), spaced by the
// host's politeness interval as seen by the server.
func TestCrawlRenderedSPA(t *testing.T) {
	if _, err := render.FindChromium(""); err != nil {
		t.Skip("!!! browser capture NOT tested: no chromium binary (make deps installs Debian's chromium) !!!")
	}
	zk := testenv.ZooKeeper(t)
	site := newSPASite(t)
	cfg := testConfig()
	cfg.Render = config.RenderAlways
	cfg.PerHostRatePerS = 5 // 200 ms between requests to a host
	cfg.PerHostMaxInFlight = 1
	cfg.MaxDepth = 3
	cfg.Sitemaps = false
	cfg.RenderScreenshot = true
	c := newCrawl(t, zk.Addr(), "render", cfg, frontier.Layout{Shards: 8, Spread: 1}, []string{site.a.URL + "/"})
	c.runWorkers(2, 150*time.Second)

	logged := map[string][]storage.LogEntry{}
	for _, e := range c.logs() {
		logged[e.URL] = append(logged[e.URL], e)
	}
	a := site.a.URL
	pages := []string{a + "/", a + "/route/home"}
	for i := 1; i <= spaArticles; i++ {
		pages = append(pages, fmt.Sprintf("%s/p/%d", a, i))
	}
	for _, p := range pages {
		es := logged[p]
		if len(es) == 0 {
			t.Errorf("page %s (exists only after script) was not crawled", p)
			continue
		}
		if e := es[len(es)-1]; e.Status != 200 || !e.Render {
			t.Errorf("page %s: status %d render %v; want 200 and rendered", p, e.Status, e.Render)
		}
	}
	responses := c.warcResponses()
	subs := []string{a + "/app.js", a + "/api/index.json", site.b.URL + "/shared.js"}
	for i := 1; i <= spaArticles; i++ {
		subs = append(subs, fmt.Sprintf("%s/api/p/%d.json", a, i), fmt.Sprintf("%s/img/%d.png", a, i))
	}
	for _, u := range subs {
		es := logged[u]
		if len(es) != 1 {
			t.Errorf("subrequest %s has %d crawl-log lines, want 1", u, len(es))
		} else if e := es[0]; e.Status != 200 || !strings.HasSuffix(e.Hops, "E") || !slices.Contains(pages, e.Via) {
			t.Errorf("subrequest %s logged status %d hops %q via %q; want 200, hop E, via a page", u, e.Status, e.Hops, e.Via)
		}
		if responses[u] != 1 {
			t.Errorf("subrequest %s has %d WARC response records, want 1", u, responses[u])
		}
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	for _, u := range subs {
		if n := site.reqs[strings.TrimPrefix(u, "http://")]; n != 1 {
			t.Errorf("%s reached its server %d times, want once", u, n)
		}
	}
	for ua := range site.uas {
		if ua != cfg.UserAgent {
			t.Errorf("a request with User-Agent %q reached a server: not the crawler's fetcher", ua)
		}
	}
	const interval = 200 * time.Millisecond
	for host, times := range site.hits {
		slices.SortFunc(times, func(x, y time.Time) int { return x.Compare(y) })
		for i := 1; i < len(times); i++ {
			if g := times[i].Sub(times[i-1]); g < interval-arrivalJitter {
				t.Errorf("host %s: requests %d and %d arrived %s apart, under the %s politeness interval", host, i-1, i, g, interval)
			}
		}
		t.Logf("host %s: %d requests", host, len(times))
	}
	// Each rendered page's screenshot: a PNG resource record concurrent to
	// the page's response record.
	recs, files := warcRecords(t, c.out)
	// The CDXJ index beside each file, screenshots included, is warcio.js's.
	for _, f := range files {
		want, err := testenv.WarcioCDXJLines(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(strings.TrimSuffix(f, ".warc.gz") + ".cdxj")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); !slices.Equal(got, want) {
			t.Errorf("%s: .cdxj differs from warcio cdx-index:\nours:\n%s\nwarcio:\n%s", f, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	ids := map[string]string{} // response record id -> target
	shots := map[string]*storage.Record{}
	for _, byOff := range recs {
		for _, r := range byOff {
			switch r.Get("WARC-Type") {
			case "response", "revisit":
				ids[r.Get("WARC-Record-ID")] = r.Get("WARC-Target-URI")
			case "resource":
				shots[r.Get("WARC-Target-URI")] = r
			}
		}
	}
	for _, p := range pages {
		r := shots["urn:screenshot:"+p]
		switch {
		case r == nil:
			t.Errorf("no screenshot resource record of %s", p)
		case r.Get("Content-Type") != "image/png" || len(r.Block) < 8 || string(r.Block[1:4]) != "PNG":
			t.Errorf("screenshot of %s: Content-Type %q, %d bytes, not a PNG", p, r.Get("Content-Type"), len(r.Block))
		case ids[r.Get("WARC-Concurrent-To")] != p:
			t.Errorf("screenshot of %s is concurrent to %q (%s), not the page's response", p, r.Get("WARC-Concurrent-To"), ids[r.Get("WARC-Concurrent-To")])
		}
	}
	t.Logf("%d crawl-log URLs, %d WARC response URLs, %d screenshots", len(logged), len(responses), len(shots))
}

// A page whose script never yields on its first fetch: the render times
// out, the browser is killed, the attempt fails (status -5, render: ...)
// and is retried; the second attempt renders and finds the script's link.
// A page that never yields is kept unrendered on its last attempt, its
// HTML's link followed. Nothing is lost.
func TestCrawlRenderHangRetried(t *testing.T) {
	if _, err := render.FindChromium(""); err != nil {
		t.Skip("!!! browser capture NOT tested: no chromium binary (make deps installs Debian's chromium) !!!")
	}
	zk := testenv.ZooKeeper(t)
	var mu sync.Mutex
	served := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			mu.Lock()
			served++
			first := served == 1
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			if first {
				fmt.Fprint(w, `<!doctype html><body><div id="root"></div><script>for(;;){}</script></body>`)
				return
			}
			fmt.Fprint(w, `<!doctype html><body><div id="root"></div><script>const a = document.createElement('a'); a.href = '/after'; document.getElementById('root').appendChild(a);</script></body>`)
		case "/always":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><body><div id="root"></div><a href="/plain">plain</a><script>for(;;){}</script></body>`)
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "linked by the HTML")
		case "/after":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "found by script")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.Render = config.RenderAuto
	cfg.RenderTimeoutMS = 4000
	cfg.MaxAttempts = 2
	cfg.Sitemaps = false
	c := newCrawl(t, zk.Addr(), "renderhang", cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{srv.URL + "/", srv.URL + "/always"})
	c.runWorkers(1, 90*time.Second)
	var page, always []storage.LogEntry
	after, plain := 0, 0
	for _, e := range c.logs() {
		switch e.URL {
		case srv.URL + "/":
			page = append(page, e)
		case srv.URL + "/always":
			always = append(always, e)
		case srv.URL + "/after":
			after++
		case srv.URL + "/plain":
			plain++
		}
	}
	// A page whose render fails on every attempt is kept unrendered on
	// the last one, with its HTML's links.
	if len(always) != 2 || always[0].Status != -5 || always[1].Status != 200 || always[1].Render || !strings.HasPrefix(always[1].Error, "unrendered: ") {
		t.Errorf("/always lines: %+v; want a failed render, then 200 kept unrendered", always)
	}
	if plain != 1 {
		t.Errorf("/plain (linked by /always's HTML) logged %d times, want once", plain)
	}
	if len(page) != 2 || page[0].Status != -5 || !strings.HasPrefix(page[0].Error, "render: ") || page[1].Status != 200 || !page[1].Render || page[1].Attempt != 2 {
		t.Fatalf("the page's lines: %+v; want a failed render (-5, attempt 1) and a rendered 200 (attempt 2)", page)
	}
	if after != 1 {
		t.Errorf("/after (linked only by script) logged %d times, want once", after)
	}
}

// In the pipeline (in-memory seams, a real browser): a rendered page's
// script on its own host is fetched through the worker's fetcher and
// stored with its own crawl-log line (hop E, via the page); a script on a
// host whose shard group another worker owns is not fetched here but
// queued as a requisite for its owner; the link the script builds is
// enqueued (hop L, one depth on).
func TestProcessRenderForeignKey(t *testing.T) {
	if _, err := render.FindChromium(""); err != nil {
		t.Skip("!!! browser capture NOT tested: no chromium binary (make deps installs Debian's chromium) !!!")
	}
	const page, own, foreign = "http://a.example/spa", "http://a.example/app.js", "http://b.example/shared.js"
	cfg := config.Default()
	cfg.Render = config.RenderAlways
	p := newPipeline(t, cfg, map[string]memPage{
		page: {status: 200, mime: "text/html", body: `<!doctype html><body><div id="root"></div>
<script src="/app.js"></script><script src="` + foreign + `"></script></body>`},
		own:     {status: 200, mime: "text/javascript", body: `const a = document.createElement('a'); a.href = '/built'; document.getElementById('root').appendChild(a);`},
		foreign: {status: 200, mime: "text/javascript", body: `window.shared = 1;`},
	})
	t.Cleanup(p.w.renders.close)
	shards := p.w.layout.GroupShards(p.w.layout.Group(page))
	slices.Sort(shards)
	p.w.owned.Store(&shards)
	if !p.w.ownsURL(own) || p.w.ownsURL(foreign) {
		t.Fatalf("test layout: a.example owned %v, b.example owned %v; want true, false", p.w.ownsURL(own), p.w.ownsURL(foreign))
	}
	p.run(t, frontier.Item{URL: page, Depth: 0, Hops: ""}, nil)
	calls := p.calls.get()
	if !slices.Contains(calls, "fetch "+own) || slices.Contains(calls, "fetch "+foreign) {
		t.Errorf("calls %q: want %s fetched, %s not", calls, own, foreign)
	}
	var pageLine, ownLine *storage.LogEntry
	for i, l := range p.store.lines {
		switch l.URL {
		case page:
			pageLine = &p.store.lines[i]
		case own:
			ownLine = &p.store.lines[i]
		}
	}
	if pageLine == nil || !pageLine.Render || pageLine.Status != 200 {
		t.Errorf("page line %+v: want status 200, render true", pageLine)
	}
	if ownLine == nil || ownLine.Hops != "E" || ownLine.Via != page || ownLine.Status != 200 || ownLine.WARCFile == "" {
		t.Errorf("app.js line %+v: want hop E via the page, stored", ownLine)
	}
	got := map[string]string{}
	for _, it := range p.links.items {
		got[it.URL] = fmt.Sprintf("%s %d", it.Hops, it.Depth)
	}
	if got[foreign] != "E 0" || got["http://a.example/built"] != "L 1" {
		t.Errorf("enqueued %v: want %s as a requisite (E 0) and /built as a link (L 1)", got, foreign)
	}
	if _, again := got[own]; again {
		t.Errorf("%s was fetched by the browser and enqueued again", own)
	}
}
