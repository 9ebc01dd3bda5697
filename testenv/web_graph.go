package testenv

// The synthetic web's pages and link graph. One function, route, says what a
// host answers for a request target; the HTTP handlers (web_handlers.go) and
// the ground truth (web_truth.go) both use it, so they cannot disagree.
//
// Every host serves:
//
//	/            seed page, links to /p/0
//	/p/<n>       n in [0,PagesPerHost): links to /p/<n+1> (the chain, so
//	             every page is reachable from the seed), LinksPerPage random
//	             links (a CrossHostShare of them to /p/<m> of another host),
//	             filler text (about 3 KB in all)
//	/robots.txt  User-agent: *, Disallow lines, Crawl-delay
//
// and with Features on, on every host, these special pages. Entry i of the
// list below is linked from /p/<i mod min(PagesPerHost,4)>:
//
//	/redirect/301        301 -> http://host/redirect/302 (absolute Location)
//	/redirect/302        302 -> /redirect/final.html (relative Location)
//	/loop/a, /loop/b     302 -> each other, forever
//	/missing.html        404
//	/flaky.html          500 on its first request per host, then 200 linking
//	                     to flaky/child.html (relative)
//	/slow.html           200 after SlowDelay
//	/large.html          200 text/html of LargeBytes bytes, no links
//	/files/readme.txt    text/plain (its text mentions URLs; not links)
//	/files/image.png     image/png
//	/files/doc.pdf       application/pdf
//	/cal/2024/01         calendar trap: /cal/YYYY/MM links ../YYYY/MM+1
//	/base/index.html     <base href="/b/">: "one.html", "sub/two.html" mean
//	                     /b/one.html, /b/sub/two.html (/base/one.html is 404)
//	/rel/a/b/index.html  ../c.html, ./d.html, ../../e.html, ./../b/./f.html,
//	                     ../../../p/<2 mod P>
//	/forms.html          HTTP://host/forms/upper.html#top, hTTp://host/p/<3
//	                     mod P>#top, /forms/frag.html#section-2, #top,
//	                     //host/forms/scheme-relative.html, an href with
//	                     surrounding whitespace, http://host (no path),
//	                     /forms/./dots/../dot-segments.html,
//	                     /search?q=zk&page=2, mailto: and javascript: links
//	/nofollow.html       rel="nofollow" -> /nf/one.html, rel="external
//	                     NOFOLLOW" -> /nf/two.html (both reachable only that
//	                     way), plain link -> /nf/followed.html
//	/meta-nofollow.html  <meta name="robots" content="nofollow">, links to
//	                     /mnf/one.html and /mnf/two.html (reachable only so)
//	/private/index.html  links /hidden/child.html (reachable only so); put
//	                     "/private/" in RobotsDisallow to hide both
//	/embed.html          <iframe src="/frame/inner.html"> and
//	                     <area href="/area/target.html">
//	/requisites.html     page requisites: <link rel=stylesheet> /assets/site.css
//	                     (which @imports print.css and loads bg.png;
//	                     print.css loads deep.png, a third embed hop),
//	                     <script src> app.js, <link
//	                     rel=icon>, <img src> + srcset (one URL with a
//	                     comma), a style attribute's url(), and, with more
//	                     than one host, the next host's /assets/shared.png
//	                     (only requisites_scope any reaches it); links to
//	                     /req/next.html
//	/sitemap.xml         urlset: /sm/root.html (lastmod, priority) and /
//	/sitemap-index.xml   named by robots.txt's "Sitemap:" line; a sitemap
//	                     index of /sitemaps/a.xml.gz (gzip-compressed
//	                     urlset: /sm/gz-one.html, /sm/gz-two.html and, with
//	                     more than one host, the next host's
//	                     /sm/foreign.html, out of same_host scope) and
//	                     /sitemaps/b.xml (urlset: /sm/plain.html); the /sm/
//	                     pages are reachable only through sitemaps
//	/xrobots.html        header "x-ROBOTS-tag: nofollow" (odd case kept on
//	                     the wire), "X-odd-CASE: Yes", chunked body; links
//	                     to /xnf/one.html (reachable only so)
//
// Targets not listed above are small HTML pages without links. Link elements
// are <a href>, <area href> and <iframe src> only (no <img>, <link> or
// <script>), so "which elements are links" is unambiguous.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/fnv"
	"html"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/temoto/robotstxt"
)

// webTarget is one URL of the synthetic web.
type webTarget struct {
	host int    // index into Web.hosts; -1 for a URL outside the web (mailto:, javascript:)
	path string // canonical path plus "?query" if any: no dot segments, no fragment
}

// webLink is one link element of an HTML page.
type webLink struct {
	tag      string    // "a", "area" or "iframe"
	href     string    // attribute value exactly as written, before HTML escaping
	to       webTarget // what href resolves to, canonical
	rel      string    // rel attribute, "" for none
	nofollow bool      // rel has the nofollow token
	text     string    // anchor text or alt/title
}

type webKind int

const (
	webKindHTML     webKind = iota // 200 text/html, may have links
	webKindRedirect                // 301/302 with Location
	webKindError                   // fixed error status (404)
	webKindBlob                    // 200 non-HTML bytes, no links
	webKindLarge                   // 200 text/html of LargeBytes, no links
)

// webRoute is what a host answers for one request target.
type webRoute struct {
	kind         webKind
	status       int // final status a crawler should log
	title        string
	links        []webLink
	metaNofollow bool
	xRobotsTag   string      // X-Robots-Tag value sent (as "x-ROBOTS-tag"); "nofollow"/"none" stop links
	embeds       []webLink   // page requisites (HTML: img, link, script, style; CSS: url(), @import)
	head         string      // extra markup rendered into <head> (the requisite elements)
	tail         string      // extra markup rendered at the end of <body>
	sitemapKids  []webTarget // a sitemap index's children (hop M, same depth)
	sitemapURLs  []webTarget // a urlset's URLs (hop L, depth+1)
	chunked      bool        // sent with Transfer-Encoding: chunked, in several chunks
	baseHref     string
	fill         []int     // filler paragraph indices
	location     string    // redirect: Location header as sent
	redirect     webTarget // redirect: where Location resolves to
	flaky        bool      // first request per host answers 500
	slow         bool      // sleeps SlowDelay
	contentType  string    // blob
	body         []byte    // prerendered body; nil means render on demand
}

// webBlobs are the shared non-HTML and oversized bodies.
type webBlobs struct {
	png, pdf, large []byte
}

var webNotFound = &webRoute{
	kind: webKindError, status: 404, title: "Not found",
	body: []byte("<!DOCTYPE html>\n<html><head><title>Not found</title></head><body><h1>404 Not found</h1></body></html>\n"),
}

// build precomputes filler text, robots.txt, homes, blobs and special pages.
// Called once by StartWeb after the ports are known.
func (w *Web) build() error {
	w.filler = webFiller(w.cfg.Seed)
	n := len(w.hosts)
	w.robotsTxt = make([][]byte, n)
	w.robots = make([]*robotstxt.RobotsData, n)
	for h := range n {
		body := w.robotsBody(h)
		st, ok := w.cfg.RobotsStatus[h]
		if !ok {
			st = 200
		}
		b := body
		if w.cfg.Features {
			b = append(append([]byte(nil), body...), "Sitemap: http://"+w.hosts[h]+"/sitemap-index.xml\n"...)
		}
		if st >= 300 {
			b = []byte(strconv.Itoa(st) + " robots.txt not available\n")
		}
		rd, err := robotstxt.FromStatusAndBytes(st, b)
		if err != nil {
			return fmt.Errorf("%w: robots.txt of host %d with status %d: %w", ErrWebConfig, h, st, err)
		}
		w.robotsTxt[h], w.robots[h] = b, rd
	}
	w.homes = make([]*webRoute, n)
	for h := range n {
		r := &webRoute{kind: webKindHTML, status: 200, title: fmt.Sprintf("Host %d home", h),
			links: []webLink{{tag: "a", href: "/p/0", to: webTarget{h, "/p/0"}, text: "first page"}},
			fill:  w.fillFor("/", h, 2)}
		if w.cfg.HomeLinksAll {
			for i := 1; i < w.PagesOf(h); i++ {
				p := "/p/" + strconv.Itoa(i)
				r.links = append(r.links, webLink{tag: "a", href: p, to: webTarget{h, p}, text: "page " + strconv.Itoa(i)})
			}
		}
		r.body = w.render(r)
		w.homes[h] = r
	}
	if !w.cfg.Features {
		return nil
	}
	png, err := webPNG()
	if err != nil {
		return fmt.Errorf("testenv: build web: encode png: %w", err)
	}
	w.blobs = webBlobs{png: png, pdf: []byte(webPDF), large: webLarge(w.cfg.LargeBytes, w.filler)}
	w.specials = make([]map[string]*webRoute, n)
	w.entries = make([][]webLink, n)
	for h := range n {
		w.specials[h], w.entries[h] = w.buildSpecials(h)
	}
	return nil
}

// route says what host h answers for target (path plus "?query").
// Unknown targets answer 404.
func (w *Web) route(h int, target string) *webRoute {
	switch {
	case target == "/":
		return w.homes[h]
	case strings.HasPrefix(target, "/p/"):
		if n, ok := webParseIndex(target[len("/p/"):], w.PagesOf(h)); ok {
			return w.pageRoute(h, n)
		}
		return webNotFound
	}
	if !w.cfg.Features {
		return webNotFound
	}
	if r := w.specials[h][target]; r != nil {
		return r
	}
	if y, m, ok := webParseCal(target); ok {
		return w.calRoute(h, y, m)
	}
	return webNotFound
}

// webParseIndex parses a canonical decimal in [0,limit): digits only, no
// leading zero, so /p/05 and /p/+5 are 404 rather than aliases.
func webParseIndex(s string, limit int) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n < limit
}

// pageRoute builds /p/<n> of host h from a PRNG seeded by (Seed, h, n), so
// a page is the same whatever order pages are asked in.
func (w *Web) pageRoute(h, n int) *webRoute {
	cfg := &w.cfg
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(h)<<32|uint64(n)))
	r := &webRoute{kind: webKindHTML, status: 200, title: fmt.Sprintf("Host %d page %d", h, n)}
	r.links = make([]webLink, 0, cfg.LinksPerPage+6)
	if n+1 < w.PagesOf(h) {
		r.links = append(r.links, w.pageLink(rng, h, n+1, "next page"))
	}
	for range cfg.LinksPerPage {
		if len(w.hosts) > 1 && rng.Float64() < cfg.CrossHostShare {
			t := rng.IntN(len(w.hosts) - 1)
			if t >= h {
				t++
			}
			m := strconv.Itoa(rng.IntN(w.PagesOf(t)))
			r.links = append(r.links, webLink{tag: "a", href: "http://" + w.hosts[t] + "/p/" + m,
				to: webTarget{t, "/p/" + m}, text: "host " + strconv.Itoa(t) + " page " + m})
			continue
		}
		r.links = append(r.links, w.pageLink(rng, h, rng.IntN(w.PagesOf(h)), "see also"))
	}
	if cfg.Features {
		spread := min(w.PagesOf(h), 4)
		for i, e := range w.entries[h] {
			if i%spread == n {
				r.links = append(r.links, e)
			}
		}
	}
	r.fill = make([]int, 8)
	for i := range r.fill {
		r.fill[i] = rng.IntN(len(w.filler))
	}
	return r
}

// pageLink is a link from a /p/ page of host h to /p/<m> of the same host,
// written in one of several equivalent forms.
func (w *Web) pageLink(rng *rand.Rand, h, m int, text string) webLink {
	ms := strconv.Itoa(m)
	var href string
	switch rng.IntN(5) {
	case 0:
		href = "/p/" + ms
	case 1:
		href = ms // relative to /p/<n>
	case 2:
		href = "./" + ms
	case 3:
		href = "../p/" + ms
	default:
		href = "http://" + w.hosts[h] + "/p/" + ms
	}
	return webLink{tag: "a", href: href, to: webTarget{h, "/p/" + ms}, text: text + " " + ms}
}

// webParseCal parses "/cal/YYYY/MM" (year 0001..9999, month 01..12).
func webParseCal(target string) (year, month int, ok bool) {
	const prefix = "/cal/"
	if len(target) != len(prefix)+7 || !strings.HasPrefix(target, prefix) || target[len(prefix)+4] != '/' {
		return 0, 0, false
	}
	ys, ms := target[len(prefix):len(prefix)+4], target[len(prefix)+5:]
	for _, c := range ys + ms {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
	}
	year, _ = strconv.Atoi(ys)
	month, _ = strconv.Atoi(ms)
	return year, month, year >= 1 && month >= 1 && month <= 12
}

func webCalPath(year, month int) string { return fmt.Sprintf("/cal/%04d/%02d", year, month) }

// calRoute is the calendar trap: every month links to the next one. After
// 9999-12 the link leads to a 404, about 96,000 hops later.
func (w *Web) calRoute(h, year, month int) *webRoute {
	ny, nm := year, month+1
	if nm > 12 {
		ny, nm = year+1, 1
	}
	next := fmt.Sprintf("%04d/%02d", ny, nm)
	to := webTarget{h, "/cal/" + next} // a 404 after 9999-12, see webParseCal
	return &webRoute{kind: webKindHTML, status: 200, title: fmt.Sprintf("Calendar %04d-%02d", year, month),
		links: []webLink{{tag: "a", href: "../" + next, to: to, text: "next month"}},
		fill:  w.fillFor(webCalPath(year, month), h, 1)}
}

// buildSpecials builds the Features pages of host h and the entry links to
// them that go onto the /p/ pages.
func (w *Web) buildSpecials(h int) (map[string]*webRoute, []webLink) {
	abs := "http://" + w.hosts[h]
	m := map[string]*webRoute{}
	a := func(href, path, text string) webLink {
		return webLink{tag: "a", href: href, to: webTarget{h, path}, text: text}
	}
	page := func(path, title string, links ...webLink) *webRoute {
		r := &webRoute{kind: webKindHTML, status: 200, title: title, links: links, fill: w.fillFor(path, h, 2)}
		m[path] = r
		return r
	}
	redirect := func(path string, status int, location, to string) {
		m[path] = &webRoute{kind: webKindRedirect, status: status, title: "Moved", location: location,
			redirect: webTarget{h, to},
			body: []byte("<!DOCTYPE html>\n<html><head><title>Moved</title></head><body><a href=\"" +
				html.EscapeString(location) + "\">Moved here</a>.</body></html>\n")}
	}
	blob := func(path, ctype string, body []byte) {
		m[path] = &webRoute{kind: webKindBlob, status: 200, contentType: ctype, body: body}
	}

	redirect(WebPathRedirect, 301, abs+"/redirect/302", "/redirect/302")
	redirect("/redirect/302", 302, "/redirect/final.html", WebPathRedirectFinal)
	page(WebPathRedirectFinal, "End of the redirect chain")
	redirect(WebPathLoop, 302, "/loop/b", "/loop/b")
	redirect("/loop/b", 302, abs+"/loop/a", WebPathLoop)
	page(WebPathFlaky, "Flaky page", a("flaky/child.html", "/flaky/child.html", "child of the flaky page")).flaky = true
	page("/flaky/child.html", "Child of the flaky page")
	page(WebPathSlow, "Slow page").slow = true
	m[WebPathLarge] = &webRoute{kind: webKindLarge, status: 200, title: "Large page"}
	blob("/files/readme.txt", "text/plain; charset=utf-8", []byte("Read me.\n\nThis plain text names "+abs+
		"/files/not-a-link.html and <a href=\"/files/not-a-link-either.html\">, which are not links.\n"))
	blob("/files/image.png", "image/png", w.blobs.png)
	blob("/files/doc.pdf", "application/pdf", w.blobs.pdf)
	page("/base/index.html", "Base href page",
		a("one.html", "/b/one.html", "one"),
		a("sub/two.html", "/b/sub/two.html", "two")).baseHref = "/b/"
	page("/b/one.html", "Base target one")
	page("/b/sub/two.html", "Base target two")
	p2 := "/p/" + strconv.Itoa(2%w.PagesOf(h))
	p3 := "/p/" + strconv.Itoa(3%w.PagesOf(h))
	page("/rel/a/b/index.html", "Relative links",
		a("../c.html", "/rel/a/c.html", "c"),
		a("./d.html", "/rel/a/b/d.html", "d"),
		a("../../e.html", "/rel/e.html", "e"),
		a("./../b/./f.html", "/rel/a/b/f.html", "f"),
		a("../../.."+p2, p2, "a normal page"))
	for _, p := range []string{"/rel/a/c.html", "/rel/a/b/d.html", "/rel/e.html", "/rel/a/b/f.html"} {
		page(p, "Relative target "+p)
	}
	page("/forms.html", "URL forms",
		a("HTTP://"+w.hosts[h]+"/forms/upper.html#top", "/forms/upper.html", "upper-case scheme"),
		a("hTTp://"+w.hosts[h]+p3+"#top", p3, "mixed-case scheme, normal page"),
		a("/forms/frag.html#section-2", "/forms/frag.html", "fragment"),
		a("#top", "/forms.html", "this page"),
		a("//"+w.hosts[h]+"/forms/scheme-relative.html", "/forms/scheme-relative.html", "scheme-relative"),
		a(" \n /forms/space.html \t", "/forms/space.html", "whitespace around href"),
		a(abs, "/", "host without path"),
		a("/forms/./dots/../dot-segments.html", "/forms/dot-segments.html", "dot segments"),
		a("/search?q=zk&page=2", "/search?q=zk&page=2", "query"),
		webLink{tag: "a", href: "mailto:webmaster@example.invalid", to: webTarget{-1, ""}, text: "mail"},
		webLink{tag: "a", href: "javascript:void(0)", to: webTarget{-1, ""}, text: "script"})
	for _, p := range []string{"/forms/upper.html", "/forms/frag.html", "/forms/scheme-relative.html",
		"/forms/space.html", "/forms/dot-segments.html", "/search?q=zk&page=2"} {
		page(p, "Form target "+p)
	}
	page("/nofollow.html", "Nofollow links",
		webLink{tag: "a", href: "/nf/one.html", to: webTarget{h, "/nf/one.html"}, rel: "nofollow", nofollow: true, text: "one"},
		webLink{tag: "a", href: "/nf/two.html", to: webTarget{h, "/nf/two.html"}, rel: "external NOFOLLOW", nofollow: true, text: "two"},
		a("/nf/followed.html", "/nf/followed.html", "followed"))
	page("/nf/one.html", "Nofollow target one")
	page("/nf/two.html", "Nofollow target two")
	page("/nf/followed.html", "Followed target")
	page("/meta-nofollow.html", "Meta robots nofollow",
		a("/mnf/one.html", "/mnf/one.html", "one"),
		a("mnf/two.html", "/mnf/two.html", "two")).metaNofollow = true
	page("/mnf/one.html", "Meta nofollow target one")
	page("/mnf/two.html", "Meta nofollow target two")
	page("/private/index.html", "Private directory", a("/hidden/child.html", "/hidden/child.html", "hidden child"))
	page("/hidden/child.html", "Hidden child")
	page("/embed.html", "Frames and image maps",
		webLink{tag: "iframe", href: "/frame/inner.html", to: webTarget{h, "/frame/inner.html"}, text: "inner frame"},
		webLink{tag: "area", href: "/area/target.html", to: webTarget{h, "/area/target.html"}, text: "area"})
	page("/frame/inner.html", "Inner frame")
	xr := page("/xrobots.html", "X-Robots-Tag nofollow", a("/xnf/one.html", "/xnf/one.html", "one"))
	xr.xRobotsTag, xr.chunked = "nofollow", true
	page("/xnf/one.html", "X-Robots-Tag nofollow target")
	w.buildRequisites(h, m, page, blob, a)
	w.buildSitemaps(h, m, page, blob)
	page("/area/target.html", "Area target")

	for _, r := range m {
		if r.kind == webKindHTML {
			r.body = w.render(r)
		}
	}
	entries := []webLink{
		a(WebPathRedirect, WebPathRedirect, "redirect chain"),
		a(WebPathLoop, WebPathLoop, "redirect loop"),
		a(WebPathMissing, WebPathMissing, "missing page"),
		a(WebPathFlaky, WebPathFlaky, "flaky page"),
		a(WebPathSlow, WebPathSlow, "slow page"),
		a(WebPathLarge, WebPathLarge, "large page"),
		a("/files/readme.txt", "/files/readme.txt", "text file"),
		a("/files/image.png", "/files/image.png", "image"),
		a("/files/doc.pdf", "/files/doc.pdf", "document"),
		a(WebPathCalendar, WebPathCalendar, "calendar"),
		a("/base/index.html", "/base/index.html", "base href"),
		a("/rel/a/b/index.html", "/rel/a/b/index.html", "relative links"),
		a("/forms.html", "/forms.html", "URL forms"),
		a("/nofollow.html", "/nofollow.html", "nofollow"),
		a("/meta-nofollow.html", "/meta-nofollow.html", "meta nofollow"),
		a("/private/index.html", "/private/index.html", "private"),
		a("/embed.html", "/embed.html", "frames"),
		a("/xrobots.html", "/xrobots.html", "X-Robots-Tag"),
		a("/requisites.html", "/requisites.html", "page requisites"),
	}
	return m, entries
}

// fillFor picks k filler paragraphs for a special page from a hash of its
// path, so the choice does not depend on ports.
func (w *Web) fillFor(path string, h, k int) []int {
	f := fnv.New64a()
	fmt.Fprintf(f, "%d|%s", h, path)
	x := f.Sum64()
	out := make([]int, k)
	for i := range out {
		out[i] = int((x >> (8 * i)) % uint64(len(w.filler)))
	}
	return out
}

// render writes the HTML of an HTML route. Hand-written rather than
// html/template: it runs per request at benchmark rates and the markup is
// fixed, so plain appends with html.EscapeString are enough and cheaper.
func (w *Web) render(r *webRoute) []byte {
	var b bytes.Buffer
	b.Grow(4096)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	if r.baseHref != "" {
		b.WriteString("<base href=\"" + html.EscapeString(r.baseHref) + "\">\n")
	}
	if r.metaNofollow {
		b.WriteString("<meta name=\"robots\" content=\"nofollow\">\n")
	}
	b.WriteString(r.head)
	title := html.EscapeString(r.title)
	b.WriteString("<title>" + title + "</title></head>\n<body>\n<h1 id=\"top\">" + title + "</h1>\n")
	half := len(r.fill) / 2
	for _, i := range r.fill[:half] {
		b.WriteString("<p>" + w.filler[i] + "</p>\n")
	}
	b.WriteString("<ul>\n")
	var maps, frames []webLink
	for _, l := range r.links {
		switch l.tag {
		case "area":
			maps = append(maps, l)
			continue
		case "iframe":
			frames = append(frames, l)
			continue
		}
		b.WriteString("<li><a href=\"" + html.EscapeString(l.href) + "\"")
		if l.rel != "" {
			b.WriteString(" rel=\"" + html.EscapeString(l.rel) + "\"")
		}
		b.WriteString(">" + html.EscapeString(l.text) + "</a></li>\n")
	}
	b.WriteString("</ul>\n")
	for _, l := range frames {
		b.WriteString("<iframe src=\"" + html.EscapeString(l.href) + "\" title=\"" + html.EscapeString(l.text) + "\"></iframe>\n")
	}
	if len(maps) > 0 {
		b.WriteString("<map name=\"links\">\n")
		for i, l := range maps {
			fmt.Fprintf(&b, "<area shape=\"rect\" coords=\"%d,0,%d,10\" href=\"%s\" alt=\"%s\">\n",
				10*i, 10*i+10, html.EscapeString(l.href), html.EscapeString(l.text))
		}
		b.WriteString("</map>\n")
	}
	for _, i := range r.fill[half:] {
		b.WriteString("<p>" + w.filler[i] + "</p>\n")
	}
	b.WriteString(r.tail)
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

var webWords = strings.Fields(`crawler frontier seen set politeness crawl delay claim session
ephemeral sequential znode watch record archive hop scope robots fetch parse link anchor
queue shard worker ensemble leader follower quorum snapshot transaction log replica
host domain page title header body status redirect timeout retry backoff limit budget
harvest capture index search rank graph edge vertex depth breadth first order revisit
freshness politely distributed coordination consensus lease heartbeat expiry znode
version config barrier lock election membership heritrix nutch warc gzip digest`)

// webFiller returns 64 deterministic paragraphs of about 45 words (HTML-safe:
// lower-case words and punctuation only).
func webFiller(seed int64) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed_f111))
	out := make([]string, 64)
	for i := range out {
		var b strings.Builder
		n := 35 + rng.IntN(20)
		for j := range n {
			word := webWords[rng.IntN(len(webWords))]
			if j == 0 {
				word = strings.ToUpper(word[:1]) + word[1:]
			}
			b.WriteString(word)
			switch {
			case j == n-1:
				b.WriteString(".")
			case rng.IntN(9) == 0:
				b.WriteString(", ")
			default:
				b.WriteString(" ")
			}
		}
		out[i] = b.String()
	}
	return out
}

// webLarge returns an HTML page of exactly size bytes without links.
func webLarge(size int, filler []string) []byte {
	const head = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Large page</title></head>\n<body>\n"
	const tail = "</body></html>\n"
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(head)
	for i := 0; b.Len() < size-len(tail); i++ {
		b.WriteString("<p>" + filler[i%len(filler)] + "</p>\n")
	}
	b.Truncate(size - len(tail))
	b.WriteString(tail)
	return b.Bytes()
}

// webPNG encodes a 16x16 gradient as PNG.
func webPNG() ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 16 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 16), 128, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// webPDF is a minimal one-page PDF 1.4 document (byte offsets in the xref
// table are not exact; readers repair that, and crawlers do not parse it).
const webPDF = `%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >> endobj
4 0 obj << /Length 44 >> stream
BT /F1 12 Tf 20 50 Td (zkcrawl test) Tj ET
endstream endobj
5 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj
trailer << /Root 1 0 R /Size 6 >>
%%EOF
`

// buildRequisites adds /requisites.html of host h, its requisites under
// /assets/ (reachable only as requisites) and /req/next.html.
func (w *Web) buildRequisites(h int, m map[string]*webRoute,
	page func(path, title string, links ...webLink) *webRoute,
	blob func(path, ctype string, body []byte),
	a func(href, path, text string) webLink) {
	e := func(href, path string) webLink {
		return webLink{tag: "embed", href: href, to: webTarget{h, path}}
	}
	css := func(path, body string, embeds ...webLink) {
		blob(path, "text/css; charset=utf-8", []byte(body))
		m[path].embeds = embeds
	}
	css("/assets/site.css", "@import \"print.css\";\n/* url(comment.png) is no reference */\nbody { background: url( 'bg.png' ) }\n",
		e("print.css", "/assets/print.css"), e("bg.png", "/assets/bg.png"))
	css("/assets/print.css", "h1 { background: url(deep.png) }\n", e("deep.png", "/assets/deep.png"))
	blob("/assets/app.js", "text/javascript; charset=utf-8", []byte("console.log(\"zkcrawl test\");\n"))
	for _, p := range []string{"/assets/bg.png", "/assets/deep.png", "/assets/logo.png", "/assets/logo-2x.png",
		"/assets/logo,3x.png", "/assets/div-bg.png", "/assets/favicon.ico", "/assets/shared.png"} {
		blob(p, "image/png", w.blobs.png)
	}
	embeds := []webLink{
		e("/assets/site.css", "/assets/site.css"),
		e("/assets/favicon.ico", "/assets/favicon.ico"),
		e("/assets/app.js", "/assets/app.js"),
		e("/assets/logo.png", "/assets/logo.png"),
		e("/assets/logo-2x.png", "/assets/logo-2x.png"),
		e("/assets/logo,3x.png", "/assets/logo,3x.png"),
		e("/assets/div-bg.png", "/assets/div-bg.png"),
	}
	body := "<img src=\"/assets/logo.png\" srcset=\"/assets/logo-2x.png 2x, /assets/logo,3x.png 3x\" alt=\"logo\">\n" +
		"<div style=\"background-image: url(&quot;/assets/div-bg.png&quot;)\">styled</div>\n"
	if len(w.hosts) > 1 {
		other := (h + 1) % len(w.hosts)
		href := "http://" + w.hosts[other] + "/assets/shared.png"
		embeds = append(embeds, webLink{tag: "embed", href: href, to: webTarget{other, "/assets/shared.png"}})
		body += "<img src=\"" + href + "\" alt=\"shared\">\n"
	}
	r := page("/requisites.html", "Page requisites", a("/req/next.html", "/req/next.html", "next"))
	r.embeds = embeds
	r.head = "<link rel=\"stylesheet\" href=\"/assets/site.css\">\n<link rel=\"shortcut icon\" href=\"/assets/favicon.ico\">\n" +
		"<script src=\"/assets/app.js\"></script>\n"
	r.tail = body
	page("/req/next.html", "After the requisites page")
}

// buildSitemaps adds the sitemaps of host h (see the list at the top) and
// the /sm/ pages reachable only through them.
func (w *Web) buildSitemaps(h int, m map[string]*webRoute,
	page func(path, title string, links ...webLink) *webRoute,
	blob func(path, ctype string, body []byte)) {
	abs := func(host int, path string) string { return "http://" + w.hosts[host] + path }
	urlset := func(entries ...string) string {
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n")
		for _, e := range entries {
			b.WriteString("  <url><loc>" + html.EscapeString(e) + "</loc><lastmod>2026-11-01</lastmod><priority>0.9</priority></url>\n")
		}
		b.WriteString("</urlset>\n")
		return b.String()
	}
	blob("/sitemap.xml", "application/xml", []byte(urlset(abs(h, "/sm/root.html"), abs(h, "/"))))
	m["/sitemap.xml"].sitemapURLs = []webTarget{{h, "/sm/root.html"}, {h, "/"}}
	blob("/sitemap-index.xml", "application/xml", []byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"+
		"<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"+
		"  <sitemap><loc>"+abs(h, "/sitemaps/a.xml.gz")+"</loc></sitemap>\n"+
		"  <sitemap><loc>"+abs(h, "/sitemaps/b.xml")+"</loc></sitemap>\n</sitemapindex>\n"))
	m["/sitemap-index.xml"].sitemapKids = []webTarget{{h, "/sitemaps/a.xml.gz"}, {h, "/sitemaps/b.xml"}}
	gzURLs := []webTarget{{h, "/sm/gz-one.html"}, {h, "/sm/gz-two.html"}}
	if len(w.hosts) > 1 {
		gzURLs = append(gzURLs, webTarget{(h + 1) % len(w.hosts), "/sm/foreign.html"})
	}
	var locs []string
	for _, t := range gzURLs {
		locs = append(locs, abs(t.host, t.path))
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(urlset(locs...)))
	zw.Close()
	blob("/sitemaps/a.xml.gz", "application/gzip", zb.Bytes())
	m["/sitemaps/a.xml.gz"].sitemapURLs = gzURLs
	blob("/sitemaps/b.xml", "text/xml; charset=utf-8", []byte(urlset(abs(h, "/sm/plain.html"))))
	m["/sitemaps/b.xml"].sitemapURLs = []webTarget{{h, "/sm/plain.html"}}
	for _, p := range []string{"/sm/root.html", "/sm/gz-one.html", "/sm/gz-two.html", "/sm/foreign.html", "/sm/plain.html"} {
		page(p, "Listed in a sitemap only: "+p)
	}
}
