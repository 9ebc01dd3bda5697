package testenv

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

const walkerAgent = "zkcrawl-testwalker/1.0"

// testWebConfig is the web of the end-to-end walk: host 3 answers robots.txt
// with 500 (crawl nothing), host 4 with 404 (crawl everything).
func testWebConfig() WebConfig {
	return WebConfig{
		Seed: 42, Hosts: 5, PagesPerHost: 30, LinksPerPage: 6, CrossHostShare: 0.2,
		Features: true, RobotsDisallow: []string{WebPathPrivate}, RobotsStatus: map[int]int{3: 500, 4: 404},
		SlowDelay: 100 * time.Millisecond, LargeBytes: 256 << 10,
	}
}

type walkResult struct{ Status, Depth int }

// walker is a small breadth-first crawler written independently of the
// ground truth: it reads the served HTML and robots.txt over real HTTP.
type walker struct {
	t          *testing.T
	client     *http.Client
	scope      string // WebScopeSameHost or WebScopeAny
	maxDepth   int
	obeyRobots bool
	maxBody    int64

	robots  map[string]*walkRobots // by host:port
	seen    map[string]bool
	fetched map[string]walkResult
	blocked map[string]int // robots-disallowed URL -> depth
}

type walkRobots struct {
	allowAll, disallowAll bool
	disallow              []string
	sitemaps              []string
}

type walkItem struct {
	url   string
	depth int
	chain int // embed hops at the end of its path; 0 for a link
	sm    int // sitemap hops on its path; 0 if not a sitemap
	seed  bool
}

func newWalker(t *testing.T, scope string, maxDepth int, obeyRobots bool) *walker {
	return &walker{
		t: t, scope: scope, maxDepth: maxDepth, obeyRobots: obeyRobots, maxBody: 128 << 10,
		client: &http.Client{
			Timeout:       10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		robots: map[string]*walkRobots{}, seen: map[string]bool{},
		fetched: map[string]walkResult{}, blocked: map[string]int{},
	}
}

// canon resolves href against base and canonicalizes it: lower-case scheme
// and host, no default port, no fragment, dot segments removed, "/" for an
// empty path. Non-http(s) links give ok == false.
func canon(base *url.URL, href string) (*url.URL, bool) {
	ref, err := url.Parse(strings.TrimSpace(href)) // HTML strips surrounding ASCII whitespace
	if err != nil {
		return nil, false
	}
	u := base.ResolveReference(ref)
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, false
	}
	u.Host = strings.TrimSuffix(strings.ToLower(u.Host), ":80")
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u, true
}

func (wk *walker) run(seeds []string) {
	var queue []walkItem
	add := func(u string, d int) {
		if !wk.seen[u] {
			wk.seen[u] = true
			queue = append(queue, walkItem{url: u, depth: d, seed: d == 0})
		}
	}
	addEmbed := func(u string, d, chain int) {
		if !wk.seen[u] {
			wk.seen[u] = true
			queue = append(queue, walkItem{url: u, depth: d, chain: chain})
		}
	}
	addSitemap := func(u string, d, sm int) {
		if !wk.seen[u] {
			wk.seen[u] = true
			queue = append(queue, walkItem{url: u, depth: d, sm: sm})
		}
	}
	for _, s := range seeds {
		u, ok := canon(&url.URL{}, s)
		if !ok {
			wk.t.Fatalf("bad seed %q", s)
		}
		add(u.String(), 0)
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		page, _ := url.Parse(it.url)
		if wk.obeyRobots && !wk.allowed(page) {
			wk.blocked[it.url] = it.depth
			continue
		}
		status, header, body := wk.fetch(it.url)
		wk.fetched[it.url] = walkResult{status, it.depth}
		if it.seed { // its host's sitemaps: robots.txt Sitemap: lines and /sitemap.xml
			for _, s := range append(wk.robotsOf(page.Host).sitemaps, "/sitemap.xml") {
				if to, ok := canon(page, s); ok && wk.inScope(page, to) {
					addSitemap(to.String(), it.depth, 1)
				}
			}
		}
		if it.sm > 0 {
			if status == http.StatusOK {
				kids, urls := wk.sitemap(it.url, body)
				for _, k := range kids {
					if to, ok := canon(page, k); ok && wk.inScope(page, to) && it.sm < 3 {
						addSitemap(to.String(), it.depth, it.sm+1)
					}
				}
				for _, l := range urls {
					if to, ok := canon(page, l); ok && wk.inScope(page, to) && it.depth < wk.maxDepth {
						add(to.String(), it.depth+1)
					}
				}
			}
			continue
		}
		switch {
		case status == http.StatusMovedPermanently || status == http.StatusFound:
			if to, ok := canon(page, header.Get("Location")); ok && wk.inScope(page, to) {
				add(to.String(), it.depth) // new item, same depth
			}
		case status == http.StatusOK:
			for _, to := range wk.requisites(page, header, body) { // at any depth, each URL once
				addEmbed(to, it.depth, it.chain+1)
			}
			if it.depth >= wk.maxDepth || it.chain > 0 {
				continue
			}
			for _, to := range wk.links(page, header, body) {
				add(to, it.depth+1)
			}
		}
	}
}

func (wk *walker) inScope(from, to *url.URL) bool {
	return wk.scope == WebScopeAny || from.Host == to.Host
}

// fetch GETs u, retrying once after a 5xx, and returns the last answer.
// body is nil when it exceeds maxBody.
func (wk *walker) fetch(u string) (int, http.Header, []byte) {
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(wk.t.Context(), http.MethodGet, u, nil)
		if err != nil {
			wk.t.Fatalf("request %s: %v", u, err)
		}
		req.Header.Set("User-Agent", walkerAgent)
		resp, err := wk.client.Do(req)
		if err != nil {
			wk.t.Fatalf("GET %s: %v", u, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, wk.maxBody+1))
		_ = resp.Body.Close()
		if err != nil {
			wk.t.Fatalf("read %s: %v", u, err)
		}
		if int64(len(body)) > wk.maxBody {
			body = nil
		}
		if resp.StatusCode >= 500 && attempt < 2 {
			continue
		}
		return resp.StatusCode, resp.Header, body
	}
}

// links extracts the followable links of an HTML page, honouring base
// href, rel=nofollow, meta robots nofollow and X-Robots-Tag nofollow.
func (wk *walker) links(page *url.URL, header http.Header, body []byte) []string {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if mt != "text/html" || body == nil {
		return nil
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		wk.t.Fatalf("parse %s: %v", page, err)
	}
	nofollow := false
	for _, tok := range strings.Split(header.Get("X-Robots-Tag"), ",") {
		tok = strings.ToLower(strings.TrimSpace(tok))
		nofollow = nofollow || tok == "nofollow" || tok == "none"
	}
	doc.Find("meta[name]").Each(func(_ int, s *goquery.Selection) {
		if strings.EqualFold(s.AttrOr("name", ""), "robots") {
			for _, tok := range strings.Split(s.AttrOr("content", ""), ",") {
				tok = strings.ToLower(strings.TrimSpace(tok))
				nofollow = nofollow || tok == "nofollow" || tok == "none"
			}
		}
	})
	if nofollow {
		return nil
	}
	base := page
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		if b, ok := canon(page, href); ok {
			base = b
		}
	}
	var out []string
	doc.Find("a[href], area[href], iframe[src], frame[src]").Each(func(_ int, s *goquery.Selection) {
		if slices.Contains(strings.Fields(strings.ToLower(s.AttrOr("rel", ""))), "nofollow") {
			return
		}
		href, ok := s.Attr("href")
		if !ok {
			href = s.AttrOr("src", "")
		}
		if to, ok := canon(base, href); ok && wk.inScope(page, to) {
			out = append(out, to.String())
		}
	})
	return out
}

var (
	cssComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	cssURL     = regexp.MustCompile(`(?i)url\(\s*['"]?([^'")]+?)['"]?\s*\)`)
	cssImport  = regexp.MustCompile(`(?i)@import\s+['"]([^'"]+)['"]`)
)

// cssRefs finds url() and @import "..." references with regular
// expressions (enough for the web's own style sheets).
func cssRefs(css string) []string {
	css = cssComment.ReplaceAllString(css, "")
	var out []string
	for _, m := range cssImport.FindAllStringSubmatch(css, -1) {
		out = append(out, m[1])
	}
	for _, m := range cssURL.FindAllStringSubmatch(css, -1) {
		out = append(out, m[1])
	}
	return out
}

// requisites extracts the page requisites of an HTML page (img src and
// srcset, link stylesheet/icon, script src, style attributes) or a style
// sheet (url(), @import), resolved against the page (every requisite is
// in scope: requisites_scope any).
func (wk *walker) requisites(page *url.URL, header http.Header, body []byte) []string {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	var refs []string
	switch mt {
	case "text/css":
		refs = cssRefs(string(body))
	case "text/html":
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
		if err != nil {
			wk.t.Fatalf("parse %s: %v", page, err)
		}
		doc.Find("link[href]").Each(func(_ int, s *goquery.Selection) {
			for _, rel := range strings.Fields(strings.ToLower(s.AttrOr("rel", ""))) {
				if rel == "stylesheet" || rel == "icon" {
					refs = append(refs, s.AttrOr("href", ""))
					return
				}
			}
		})
		doc.Find("script[src], img[src]").Each(func(_ int, s *goquery.Selection) { refs = append(refs, s.AttrOr("src", "")) })
		doc.Find("img[srcset]").Each(func(_ int, s *goquery.Selection) {
			for _, c := range strings.Split(s.AttrOr("srcset", ""), ", ") {
				if f := strings.Fields(c); len(f) > 0 {
					refs = append(refs, f[0])
				}
			}
		})
		doc.Find("[style]").Each(func(_ int, s *goquery.Selection) { refs = append(refs, cssRefs(s.AttrOr("style", ""))...) })
	}
	var out []string
	for _, r := range refs {
		if to, ok := canon(page, r); ok {
			out = append(out, to.String())
		}
	}
	return out
}

// allowed applies the host's robots.txt: 4xx allows all, 5xx disallows
// all, 200 disallows by path prefix (the test's robots.txt has one group).
// sitemap reads a urlset or sitemap index (gzip-compressed or not) with
// encoding/xml and returns the index's sitemaps and the urlset's URLs.
func (wk *walker) sitemap(u string, body []byte) (kids, urls []string) {
	if len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			wk.t.Fatalf("sitemap %s: %v", u, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			wk.t.Fatalf("sitemap %s: %v", u, err)
		}
	}
	var doc struct {
		URLs []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
		Sitemaps []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		wk.t.Fatalf("sitemap %s: %v", u, err)
	}
	for _, s := range doc.Sitemaps {
		kids = append(kids, s.Loc)
	}
	for _, l := range doc.URLs {
		urls = append(urls, l.Loc)
	}
	return kids, urls
}

func (wk *walker) allowed(u *url.URL) bool {
	r := wk.robotsOf(u.Host)
	if r.disallowAll {
		return false
	}
	target := u.RequestURI()
	for _, p := range r.disallow {
		if strings.HasPrefix(target, p) {
			return false
		}
	}
	return true
}

// robotsOf fetches and caches the robots.txt of host.
func (wk *walker) robotsOf(host string) *walkRobots {
	u := &url.URL{Host: host}
	r := wk.robots[u.Host]
	if r == nil {
		r = &walkRobots{}
		status, _, body := wk.fetch("http://" + u.Host + "/robots.txt")
		switch {
		case status >= 500:
			r.disallowAll = true
		case status >= 400:
			r.allowAll = true
		default:
			for _, line := range strings.Split(string(body), "\n") {
				k, v, ok := strings.Cut(line, ":")
				if v = strings.TrimSpace(v); ok && strings.EqualFold(strings.TrimSpace(k), "disallow") && v != "" {
					r.disallow = append(r.disallow, v)
				}
				if ok && strings.EqualFold(strings.TrimSpace(k), "sitemap") && v != "" {
					r.sitemaps = append(r.sitemaps, v)
				}
			}
		}
		wk.robots[u.Host] = r
	}
	return r
}

// compare asserts the walk fetched exactly the URLs the ground truth expects
// with the same statuses and depths, and blocked only Status 0 URLs.
func compareWalk(t *testing.T, wk *walker, truth map[string]WebExpect) {
	t.Helper()
	want := map[string]walkResult{}
	for u, e := range truth {
		if e.Status != 0 {
			want[u] = walkResult(e)
		}
	}
	for u, got := range wk.fetched {
		if w, ok := want[u]; !ok {
			t.Errorf("walk fetched %s (status %d, depth %d); ground truth: %+v", u, got.Status, got.Depth, truth[u])
		} else if w != got {
			t.Errorf("%s: walk got %+v, ground truth %+v", u, got, w)
		}
	}
	for u, w := range want {
		if _, ok := wk.fetched[u]; !ok {
			t.Errorf("walk did not fetch %s, ground truth %+v", u, w)
		}
	}
	for u, d := range wk.blocked {
		if e, ok := truth[u]; !ok || e.Status != 0 || e.Depth != d {
			t.Errorf("walk blocked %s at depth %d by robots; ground truth %+v (present %v)", u, d, e, ok)
		}
	}
}

func TestWebGroundTruthMatchesWalk(t *testing.T) {
	w := NewWeb(t, testWebConfig())
	hosts := w.Hosts()
	at := func(h int, path string) string { return "http://" + hosts[h] + path }

	t.Run("same_host", func(t *testing.T) {
		w.Reset()
		opts := WebCrawlOptions{MaxDepth: 6, Scope: WebScopeSameHost, ObeyRobots: true}
		truth, err := w.GroundTruth(opts)
		if err != nil {
			t.Fatal(err)
		}
		wk := newWalker(t, opts.Scope, opts.MaxDepth, true)
		wk.run(w.Seeds())
		compareWalk(t, wk, truth)

		// Every feature is within reach at depth 6 and has the right outcome.
		for path, status := range map[string]int{
			"/": 200, "/p/0": 200, "/p/29": 200,
			WebPathRedirect: 301, "/redirect/302": 302, WebPathRedirectFinal: 200,
			WebPathLoop: 302, "/loop/b": 302, WebPathMissing: 404,
			WebPathFlaky: 200, "/flaky/child.html": 200, WebPathSlow: 200, WebPathLarge: 200,
			"/files/readme.txt": 200, "/files/image.png": 200, "/files/doc.pdf": 200,
			WebPathCalendar: 200, "/cal/2024/02": 200,
			"/b/one.html": 200, "/b/sub/two.html": 200, "/base/one.html": -1,
			"/rel/a/c.html": 200, "/rel/a/b/d.html": 200, "/rel/e.html": 200, "/rel/a/b/f.html": 200,
			"/forms/upper.html": 200, "/forms/frag.html": 200, "/forms/scheme-relative.html": 200,
			"/forms/space.html": 200, "/forms/dot-segments.html": 200, "/search?q=zk&page=2": 200,
			"/nf/one.html": 0, "/nf/two.html": 0, "/nf/followed.html": 200,
			"/mnf/one.html": 0, "/mnf/two.html": 0,
			"/private/index.html": 0, "/hidden/child.html": 0,
			"/frame/inner.html": 200, "/area/target.html": 200,
			"/assets/site.css": 200, "/assets/print.css": 200, "/assets/deep.png": 200, // a third embed hop
		} {
			e, ok := truth[at(0, path)]
			switch {
			case status == -1 && ok:
				t.Errorf("%s: in ground truth %+v, want absent", path, e)
			case status >= 0 && (!ok || e.Status != status):
				t.Errorf("%s: ground truth %+v (present %v), want status %d", path, e, ok, status)
			}
		}
		if e := truth[at(0, WebPathRedirectFinal)]; e.Depth != truth[at(0, WebPathRedirect)].Depth {
			t.Errorf("redirect target depth %d, want the redirecting URL's %d", e.Depth, truth[at(0, WebPathRedirect)].Depth)
		}
		for u, e := range truth {
			if strings.HasPrefix(u, "http://"+hosts[3]+"/") && e.Status != 0 {
				t.Errorf("%s: %+v, want status 0 (robots.txt answers 500)", u, e)
			}
		}
		if e := truth[at(4, "/hidden/child.html")]; e.Status != 200 {
			t.Errorf("host 4 (robots.txt 404) /hidden/child.html: %+v, want 200", e)
		}
		// The flaky page answered 500 then 200 on every host that may be crawled.
		var flaky []int
		for _, r := range w.Requests() {
			if r.HostIndex == 0 && r.Path == WebPathFlaky {
				flaky = append(flaky, r.Status)
			}
		}
		if !slices.Equal(flaky, []int{500, 200}) {
			t.Errorf("flaky page statuses on host 0: %v, want [500 200]", flaky)
		}
	})

	t.Run("any_scope_one_seed", func(t *testing.T) {
		w.Reset()
		opts := WebCrawlOptions{MaxDepth: 4, Scope: WebScopeAny, ObeyRobots: true, Seeds: w.Seeds()[:1]}
		truth, err := w.GroundTruth(opts)
		if err != nil {
			t.Fatal(err)
		}
		wk := newWalker(t, opts.Scope, opts.MaxDepth, true)
		wk.run(opts.Seeds)
		compareWalk(t, wk, truth)
		hostsSeen := map[string]bool{}
		for u := range wk.fetched {
			p, _ := url.Parse(u)
			hostsSeen[p.Host] = true
		}
		if len(hostsSeen) < 2 {
			t.Errorf("scope any from one seed reached hosts %v, want several", hostsSeen)
		}
	})

	t.Run("no_robots", func(t *testing.T) {
		w.Reset()
		opts := WebCrawlOptions{MaxDepth: 5, Scope: WebScopeSameHost, ObeyRobots: false}
		truth, err := w.GroundTruth(opts)
		if err != nil {
			t.Fatal(err)
		}
		wk := newWalker(t, opts.Scope, opts.MaxDepth, false)
		wk.run(w.Seeds())
		compareWalk(t, wk, truth)
		if e := truth[at(3, "/")]; e.Status != 200 {
			t.Errorf("host 3 seed without robots: %+v, want 200", e)
		}
	})
}

func TestWebRequestLogAndFlaky(t *testing.T) {
	w := NewWeb(t, WebConfig{Hosts: 2, PagesPerHost: 3, Features: true, RobotsStatus: map[int]int{1: 404},
		CrawlDelay: 1500 * time.Millisecond, LargeBytes: 4096})
	get := func(u string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		req.Header.Set("User-Agent", walkerAgent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	h0, h1 := w.Seeds()[0], w.Seeds()[1]
	if st, _, body := get(h0 + "robots.txt"); st != 200 || !strings.Contains(body, "User-agent: *\n") ||
		!strings.Contains(body, "Crawl-delay: 1.5\n") {
		t.Errorf("robots.txt: %d %q", st, body)
	}
	if st, _, _ := get(h1 + "robots.txt"); st != 404 {
		t.Errorf("robots.txt of host 1: status %d, want 404", st)
	}
	for i, want := range []int{500, 200, 200} {
		if st, _, _ := get(h0 + "flaky.html"); st != want {
			t.Errorf("flaky request %d: status %d, want %d", i+1, st, want)
		}
	}
	if st, hd, body := get(h0 + "large.html"); st != 200 || len(body) != 4096 || !strings.HasPrefix(hd.Get("Content-Type"), "text/html") {
		t.Errorf("large page: status %d, %d bytes, %q", st, len(body), hd.Get("Content-Type"))
	}
	for path, ctype := range map[string]string{"files/readme.txt": "text/plain", "files/image.png": "image/png", "files/doc.pdf": "application/pdf"} {
		if st, hd, _ := get(h0 + path); st != 200 || !strings.HasPrefix(hd.Get("Content-Type"), ctype) {
			t.Errorf("%s: status %d, type %q, want 200 %s", path, st, hd.Get("Content-Type"), ctype)
		}
	}
	get(h0 + "search?q=zk&page=2")
	get(h1 + "nothing-here")

	reqs := w.Requests()
	if len(reqs) != 11 {
		t.Fatalf("request log has %d entries, want 11: %+v", len(reqs), reqs)
	}
	first := reqs[0]
	if first.Host != w.Hosts()[0] || first.HostIndex != 0 || first.Path != "/robots.txt" || first.Status != 200 ||
		first.UserAgent != walkerAgent || time.Since(first.Time) > time.Minute {
		t.Errorf("first request: %+v", first)
	}
	if r := reqs[9]; r.Path != "/search?q=zk&page=2" || r.Status != 200 {
		t.Errorf("query request: %+v", r)
	}
	if r := reqs[10]; r.HostIndex != 1 || r.Path != "/nothing-here" || r.Status != 404 {
		t.Errorf("unknown path: %+v", r)
	}
	w.ResetRequests()
	if n := len(w.Requests()); n != 0 {
		t.Errorf("after ResetRequests: %d entries", n)
	}
	if st, _, _ := get(h0 + "flaky.html"); st != 200 {
		t.Errorf("flaky after ResetRequests: %d, want 200 (only Reset re-arms it)", st)
	}
	w.Reset()
	if st, _, _ := get(h0 + "flaky.html"); st != 500 {
		t.Errorf("flaky after Reset: %d, want 500", st)
	}
}

func TestWebRedirectLoopAndSlow(t *testing.T) {
	w := NewWeb(t, WebConfig{Hosts: 1, PagesPerHost: 5, Features: true, SlowDelay: 10 * time.Second})
	seed := w.Seeds()[0]
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{"loop/a": "/loop/b", "loop/b": seed + "loop/a",
		"redirect/301": seed + "redirect/302", "redirect/302": "/redirect/final.html"} {
		resp, err := noFollow.Get(seed + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 3 || resp.Header.Get("Location") != want {
			t.Errorf("%s: %d Location %q, want 3xx %q", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	if resp, err := http.Get(seed + "loop/a"); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		if resp != nil {
			resp.Body.Close()
		}
		t.Errorf("following the loop: err %v, want stopped after 10 redirects", err)
	}

	// The slow page honours the request context: the client gives up early
	// and the handler returns (503 in the log) instead of sleeping 10 s.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, seed+"slow.html", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("slow page answered before SlowDelay")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		reqs := w.Requests()
		if n := len(reqs); n > 0 && reqs[n-1].Path == "/slow.html" {
			if reqs[n-1].Status != 503 {
				t.Errorf("cut-short slow page logged %d, want 503", reqs[n-1].Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slow handler did not return after the client went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HostDelay slows every answer of one host; MaxInFlight counts the most
// requests each host served at once.
func TestWebHostDelayAndMaxInFlight(t *testing.T) {
	w := NewWeb(t, WebConfig{Hosts: 2, PagesPerHost: 5, HostDelay: map[int]time.Duration{0: time.Second}})
	get := func(u string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { get(fmt.Sprintf("%sp/%d", w.Seeds()[0], i)) })
	}
	wg.Wait()
	if took := time.Since(start); took < time.Second {
		t.Errorf("slow host answered in %v, want at least 1s", took)
	}
	get(w.Seeds()[1] + "p/0")
	get(w.Seeds()[1] + "p/1")
	if got := w.MaxInFlight(); got[0] != 3 || got[1] != 1 {
		t.Errorf("MaxInFlight() = %v, want [3 1]", got)
	}
}

// portless replaces every host:port of w by its index, so two webs compare.
func portless(w *Web, s string) string {
	for i, h := range w.Hosts() {
		s = strings.ReplaceAll(s, h, fmt.Sprintf("host%d", i))
	}
	return s
}

func TestWebDeterminism(t *testing.T) {
	cfg := testWebConfig()
	a, b := NewWeb(t, cfg), NewWeb(t, cfg)
	cfg.Seed++
	c := NewWeb(t, cfg)
	opts := WebCrawlOptions{MaxDepth: 5, Scope: WebScopeAny, ObeyRobots: true}
	norm := func(w *Web) map[string]WebExpect {
		truth, err := w.GroundTruth(opts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]WebExpect{}
		for u, e := range truth {
			out[portless(w, u)] = e
		}
		return out
	}
	ta, tb, tc := norm(a), norm(b), norm(c)
	if len(ta) < cfg.Hosts*cfg.PagesPerHost {
		t.Errorf("ground truth has %d URLs, want at least %d", len(ta), cfg.Hosts*cfg.PagesPerHost)
	}
	if !mapsEqual(ta, tb) {
		t.Error("same seed, different ground truth")
	}
	if mapsEqual(ta, tc) {
		t.Error("different seed, same ground truth")
	}
	body := func(w *Web, u string) string {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return portless(w, string(b))
	}
	for _, path := range []string{"/", "/p/0", "/p/7", "/p/29", "/forms.html", "/cal/2030/12"} {
		for h := range cfg.Hosts {
			if x, y := body(a, "http://"+a.Hosts()[h]+path), body(b, "http://"+b.Hosts()[h]+path); x != y {
				t.Errorf("host %d %s differs between two webs of the same seed", h, path)
			}
		}
	}
	if x, y := body(a, a.Seeds()[0]+"p/7"), body(c, c.Seeds()[0]+"p/7"); x == y {
		t.Error("different seeds serve the same /p/7")
	}
}

func mapsEqual(a, b map[string]WebExpect) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestWebGroundTruthLimits(t *testing.T) {
	w := NewWeb(t, WebConfig{Seed: 7, Hosts: 3, PagesPerHost: 40, LinksPerPage: 3, CrossHostShare: 0.5, Features: true})
	if _, err := w.GroundTruth(WebCrawlOptions{MaxDepth: -1}); !errors.Is(err, ErrWebInfiniteCrawl) {
		t.Errorf("MaxDepth -1 with the calendar trap: err %v, want ErrWebInfiniteCrawl", err)
	}
	truth, err := w.GroundTruth(WebCrawlOptions{MaxDepth: 0})
	if err != nil || len(truth) != 3+3*4 {
		t.Errorf("MaxDepth 0: %d URLs, err %v; want the 3 seeds and 4 sitemaps per host (they keep the seed's depth)", len(truth), err)
	}
	truth, err = w.GroundTruth(WebCrawlOptions{MaxDepth: 0, NoSitemaps: true})
	if err != nil || len(truth) != 3 {
		t.Errorf("MaxDepth 0 without sitemaps: %d URLs, err %v; want the 3 seeds", len(truth), err)
	}
	for _, bad := range []WebCrawlOptions{{MaxDepth: -2}, {Scope: "galaxy"}, {Seeds: []string{"http://127.0.0.1:1/"}}, {Seeds: []string{"ftp://x/"}}} {
		if _, err := w.GroundTruth(bad); err == nil {
			t.Errorf("GroundTruth(%+v): no error", bad)
		}
	}
	// A seed in non-canonical form is accepted.
	if truth, err := w.GroundTruth(WebCrawlOptions{MaxDepth: 0, Seeds: []string{"HTTP://" + w.Hosts()[1] + "/p/./5#x"}}); err != nil ||
		truth["http://"+w.Hosts()[1]+"/p/5"] != (WebExpect{200, 0}) {
		t.Errorf("non-canonical seed: %v, %v", truth, err)
	}

	plain := NewWeb(t, WebConfig{Seed: 7, Hosts: 3, PagesPerHost: 40, LinksPerPage: 3, CrossHostShare: 0.5})
	for _, scope := range []string{WebScopeSameHost, WebScopeSameDomain, WebScopeAny} {
		truth, err := plain.GroundTruth(WebCrawlOptions{MaxDepth: -1, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		if len(truth) != plain.Pages()+3+3 {
			t.Errorf("scope %s, no depth limit: %d URLs, want every page plus seeds plus /sitemap.xml (404) per host = %d", scope, len(truth), plain.Pages()+6)
		}
		if e := truth["http://"+plain.Hosts()[0]+"/sitemap.xml"]; e != (WebExpect{404, 0}) {
			t.Errorf("scope %s: /sitemap.xml expected as %+v, want a 404 at depth 0", scope, e)
		}
	}
}

func TestWebConfigErrors(t *testing.T) {
	for _, cfg := range []WebConfig{
		{Hosts: -1}, {PagesPerHost: -3}, {LinksPerPage: -1}, {CrossHostShare: 1.5},
		{RobotsDisallow: []string{"private"}}, {RobotsStatus: map[int]int{0: 302}},
		{Hosts: 2, RobotsStatus: map[int]int{5: 500}}, {LargeBytes: 10}, {SlowDelay: -time.Second},
		{Hosts: 2, HostDelay: map[int]time.Duration{2: time.Second}}, {HostDelay: map[int]time.Duration{0: -time.Second}},
	} {
		if w, err := StartWeb(t.Context(), cfg); !errors.Is(err, ErrWebConfig) {
			if w != nil {
				w.Close()
			}
			t.Errorf("StartWeb(%+v): err %v, want ErrWebConfig", cfg, err)
		}
	}
}

// BenchmarkWebServe measures how fast the web serves /p/ pages over
// keep-alive loopback connections (reported as pages/s).
func BenchmarkWebServe(b *testing.B) {
	w := NewWeb(b, WebConfig{Hosts: 10, PagesPerHost: 200, LinksPerPage: 8, CrossHostShare: 0.2, Features: true})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	seeds := w.Seeds()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			resp, err := client.Get(fmt.Sprintf("%sp/%d", seeds[i%len(seeds)], (i*7)%200))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pages/s")
}
