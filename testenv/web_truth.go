package testenv

// Ground truth: which URLs a correct crawler fetches from the synthetic web,
// with which final status, at which depth. It walks the same routes the HTTP
// handlers serve (web_graph.go), not the HTML, so a crawler's link extraction
// and URL normalization are checked against the structure they came from.
//
// Crawl semantics modelled (the crawler implements the same):
//
//   - Seeds have depth 0. A link found on a page at depth d gets depth d+1.
//     Depth is the minimum number of link hops from any seed.
//   - A redirect (301/302) is logged with its own status; its Location,
//     resolved against the redirecting URL, is a NEW item at the SAME depth
//     (not followed inline). A redirect loop therefore ends at the seen-set.
//   - URLs with depth > MaxDepth are not enqueued (MaxDepth -1: no limit).
//   - Each URL is enqueued and fetched at most once (seen-set on the
//     canonical URL).
//   - Scope is judged against the host of the page where the link was found
//     (for a redirect, the redirecting URL): "same_host" = same host:port;
//     "same_domain" = same registrable domain of the host name without port,
//     which for an IP literal is the IP itself, so on this web (all hosts are
//     127.0.0.1) it admits every host, like "any". Seeds are always in scope.
//   - Sitemaps: each fetched seed adds the Sitemap: URLs of its host's
//     robots.txt (read whether or not robots.txt is obeyed) and its host's
//     /sitemap.xml at the seed's depth; a sitemap index adds its children
//     at the same depth, a urlset its URLs at depth+1, judged by scope
//     against the sitemap's host (a 404 /sitemap.xml is just logged).
//   - Page requisites (img src/srcset, link stylesheet/icon, script src,
//     style url(), and url()/@import in style sheets) are fetched at the
//     depth of their page, judged by the requisites scope (default any)
//     against the page or style sheet that loads them, at any number of
//     embed hops in a row (page -> style sheet -> imported style sheet ->
//     image; each URL once); a requisite's own links are not followed.
//   - Links are <a href>, <area href>, <iframe src>, resolved against
//     <base href> when present; only http(s) links count. Links whose rel
//     has the token nofollow (case-insensitive), and all links of a page
//     with <meta name="robots" content="nofollow"> or an X-Robots-Tag
//     header saying nofollow or none, are not followed.
//   - With ObeyRobots, a URL disallowed by its host's robots.txt for any
//     user agent is not fetched (Status 0) and yields nothing. robots.txt
//     answering 4xx allows everything, 5xx disallows everything (RFC 9309
//     section 2.3.1.3 and 2.3.1.4). robots.txt itself is not listed.
//   - /flaky.html answers 500 once, then 200: a crawler that retries 5xx
//     logs 200 and follows its links. /slow.html is 200 (use a fetch
//     timeout above SlowDelay). /large.html, text, PNG and PDF are fetched
//     (200) but yield no links.
//   - A faulty host (WebConfig.HostFault) answers nothing: its URLs have
//     Status 0 and yield no links or sitemaps.
//   - Canonical URL: lower-case scheme and host, no default port, no
//     fragment, dot segments removed, empty path "/", query kept as is.
//
// Depths equal what a crawler records when it dequeues breadth-first (FIFO)
// with one fetch in flight per host; redirect targets and their pages are
// built so that the 0-hop redirect edge cannot change anyone's depth. A
// crawler fetching several URLs of one host at once, or several hosts in
// parallel under scope "any", may record larger depths for some URLs and,
// near MaxDepth, miss URLs; compare sets with MaxDepth well above the
// graph's depth (Features off and MaxDepth -1) in such tests.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Crawl scopes for WebCrawlOptions.Scope.
const (
	// WebScopeSameHost follows links to the same host:port only.
	WebScopeSameHost = "same_host"
	// WebScopeSameDomain follows links to the same registrable domain (for
	// an IP literal, the same IP; the port does not count).
	WebScopeSameDomain = "same_domain"
	// WebScopeAny follows every http(s) link.
	WebScopeAny = "any"
)

// ErrWebInfiniteCrawl is returned by GroundTruth when the crawl would never
// end: MaxDepth is -1 and the calendar trap (Features on) is reachable.
var ErrWebInfiniteCrawl = errors.New("testenv: crawl of the synthetic web is infinite (calendar trap without MaxDepth)")

// WebCrawlOptions are the crawl settings GroundTruth models.
type WebCrawlOptions struct {
	// MaxDepth is the largest depth enqueued; -1 means no limit.
	MaxDepth int
	// Scope is WebScopeSameHost (the default when ""), WebScopeSameDomain
	// or WebScopeAny.
	Scope string
	// ObeyRobots makes robots.txt-disallowed URLs unfetchable (Status 0).
	ObeyRobots bool
	// Seeds are the seed URLs; nil means Web.Seeds(). Each must be an
	// http URL of one of the web's hosts.
	Seeds []string
	// NoRequisites models a crawl with page_requisites false (the zero
	// value models the default, true).
	NoRequisites bool
	// NoSitemaps models a crawl with sitemaps false (the zero value models
	// the default, true).
	NoSitemaps bool
	// RequisitesScope is the scope requisites are judged by (the crawl's
	// requisites_scope); "" means WebScopeAny, the crawler's default.
	RequisitesScope string
}

// WebExpect is the expected crawl outcome for one canonical URL.
type WebExpect struct {
	// Status is the final HTTP status the crawler should log: 200, 301, 302
	// or 404 (the flaky page's 500-then-200 is 200). 0 means the crawler
	// must NOT fetch this URL: robots-disallowed, or reachable only through
	// nofollow links, meta-robots-nofollow pages or disallowed pages.
	Status int
	// Depth is the minimum hops from a seed (for Status 0: the depth a
	// crawler ignoring nofollow and robots would give it).
	Depth int
}

// GroundTruth returns, by canonical URL ("http://127.0.0.1:port/path"),
// every URL a correct crawl with opts fetches (Status != 0), plus the URLs
// that a crawler ignoring nofollow, meta robots and robots.txt would fetch
// but a correct one must not (Status 0). Errors: a bad option or seed, or
// ErrWebInfiniteCrawl.
func (w *Web) GroundTruth(opts WebCrawlOptions) (map[string]WebExpect, error) {
	var err error
	if opts.Scope, err = webScopeOr("scope", opts.Scope, WebScopeSameHost); err != nil {
		return nil, err
	}
	if opts.RequisitesScope, err = webScopeOr("requisites scope", opts.RequisitesScope, WebScopeAny); err != nil {
		return nil, err
	}
	if opts.MaxDepth < -1 {
		return nil, fmt.Errorf("testenv: ground truth: MaxDepth %d: want -1 (no limit) or >= 0", opts.MaxDepth)
	}
	seeds := opts.Seeds
	if seeds == nil {
		seeds = w.Seeds()
	}
	var start []webTarget
	for _, s := range seeds {
		t, err := w.lookup(s)
		if err != nil {
			return nil, fmt.Errorf("testenv: ground truth: seed %q: %w", s, err)
		}
		start = append(start, t)
	}
	strict, err := w.walk(opts, start, true)
	if err != nil {
		return nil, err
	}
	naive, err := w.walk(opts, start, false)
	if err != nil {
		return nil, err
	}
	out := make(map[string]WebExpect, len(naive))
	for t, e := range naive {
		out[w.urlOf(t)] = WebExpect{Status: 0, Depth: e.Depth}
	}
	for t, e := range strict {
		out[w.urlOf(t)] = e
	}
	return out, nil
}

// webScopeOr returns scope, or def when it is "", or an error naming what
// (the option) for an unknown scope.
func webScopeOr(what, scope, def string) (string, error) {
	switch scope {
	case "":
		return def, nil
	case WebScopeSameHost, WebScopeSameDomain, WebScopeAny:
		return scope, nil
	}
	return "", fmt.Errorf("testenv: ground truth: %s %q: want %q, %q or %q", what, scope, WebScopeSameHost, WebScopeSameDomain, WebScopeAny)
}

func (w *Web) urlOf(t webTarget) string { return "http://" + w.hosts[t.host] + t.path }

// walk runs the crawl model breadth-first, level by level. Redirect
// targets join the current level (0 hops), links the next one. strict
// applies nofollow, meta robots and (with opts.ObeyRobots) robots.txt;
// otherwise they are ignored.
func (w *Web) walk(opts WebCrawlOptions, seeds []webTarget, strict bool) (map[webTarget]WebExpect, error) {
	depth := map[webTarget]int{}
	requisite := map[webTarget]bool{} // reached first as a requisite
	manifest := map[webTarget]int{}   // sitemap hops on the path (0: not a sitemap)
	isSeed := map[webTarget]bool{}
	out := map[webTarget]WebExpect{}
	var level []webTarget
	for _, s := range seeds {
		if _, ok := depth[s]; !ok {
			depth[s] = 0
			level = append(level, s)
		}
		isSeed[s] = true
	}
	add := func(t webTarget, d int, lv *[]webTarget) error {
		if old, ok := depth[t]; ok && old <= d {
			return nil
		}
		if opts.MaxDepth >= 0 && d > opts.MaxDepth {
			return nil
		}
		if opts.MaxDepth < 0 && strings.HasPrefix(t.path, "/cal/") {
			return ErrWebInfiniteCrawl
		}
		depth[t] = d
		*lv = append(*lv, t)
		return nil
	}
	for d := 0; len(level) > 0; d++ {
		var next []webTarget
		for i := 0; i < len(level); i++ { // level grows with redirect targets
			u := level[i]
			if _, done := out[u]; done || depth[u] != d {
				continue
			}
			if w.cfg.HostFault[u.host] != WebFaultNone {
				out[u] = WebExpect{Status: 0, Depth: d} // a faulty host answers nothing
				continue
			}
			if strict && opts.ObeyRobots && !w.robots[u.host].TestAgent(u.path, "zkcrawl") {
				out[u] = WebExpect{Status: 0, Depth: d}
				continue
			}
			rt := w.route(u.host, u.path)
			out[u] = WebExpect{Status: rt.status, Depth: d}
			// Sitemaps: a fetched seed adds its host's robots.txt Sitemap:
			// URLs and /sitemap.xml (hop M, its depth); a sitemap adds an
			// index's children (M, same depth, three levels at most) and a
			// urlset's URLs (L, depth+1, scope as links).
			if !opts.NoSitemaps && isSeed[u] {
				var sm []webTarget
				if w.robots[u.host] != nil {
					for _, s := range w.robots[u.host].Sitemaps {
						if t, err := w.lookup(s); err == nil {
							sm = append(sm, t)
						}
					}
				}
				for _, t := range append(sm, webTarget{u.host, "/sitemap.xml"}) {
					if !w.inScope(opts.Scope, u.host, t.host) {
						continue
					}
					if _, seen := depth[t]; !seen {
						manifest[t] = 1
					}
					if err := add(t, d, &level); err != nil {
						return nil, err
					}
				}
			}
			if manifest[u] > 0 && rt.status == 200 {
				if manifest[u] < 3 {
					for _, t := range rt.sitemapKids {
						if !w.inScope(opts.Scope, u.host, t.host) {
							continue
						}
						if _, seen := depth[t]; !seen {
							manifest[t] = manifest[u] + 1
						}
						if err := add(t, d, &level); err != nil {
							return nil, err
						}
					}
				}
				for _, t := range rt.sitemapURLs {
					if w.inScope(opts.Scope, u.host, t.host) {
						if err := add(t, d+1, &next); err != nil {
							return nil, err
						}
					}
				}
				continue
			}
			// Requisites: same depth, requisites scope, requisites of
			// requisites at any depth (the seen-set ends loops).
			if !opts.NoRequisites && (rt.kind == webKindHTML || rt.kind == webKindBlob) {
				for _, e := range rt.embeds {
					if !w.inScope(opts.RequisitesScope, u.host, e.to.host) {
						continue
					}
					if _, seen := depth[e.to]; !seen {
						requisite[e.to] = true
					}
					if err := add(e.to, d, &level); err != nil {
						return nil, err
					}
				}
			}
			switch rt.kind {
			case webKindRedirect:
				if w.inScope(opts.Scope, u.host, rt.redirect.host) {
					if err := add(rt.redirect, d, &level); err != nil {
						return nil, err
					}
				}
			case webKindHTML:
				if strict && (rt.metaNofollow || xRobotsNofollow(rt.xRobotsTag)) {
					continue
				}
				if requisite[u] {
					continue // a requisite's links are not followed
				}
				for _, l := range rt.links {
					if l.to.host < 0 || (strict && l.nofollow) || !w.inScope(opts.Scope, u.host, l.to.host) {
						continue
					}
					if err := add(l.to, d+1, &next); err != nil {
						return nil, err
					}
				}
			}
		}
		level = next
	}
	return out, nil
}

// inScope reports whether a link found on host from may go to host to.
func (w *Web) inScope(scope string, from, to int) bool {
	switch scope {
	case WebScopeAny:
		return true
	case WebScopeSameDomain:
		// Registrable domain of the host name without port; every host of
		// this web is the IP literal 127.0.0.1, whose registrable domain is
		// itself (public suffix rules do not apply to IPs).
		fh, _, _ := net.SplitHostPort(w.hosts[from])
		th, _, _ := net.SplitHostPort(w.hosts[to])
		return fh == th
	default:
		return from == to
	}
}

// lookup canonicalizes an absolute http URL of this web into a webTarget.
func (w *Web) lookup(raw string) (webTarget, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return webTarget{}, fmt.Errorf("parse: %w", err)
	}
	if !strings.EqualFold(u.Scheme, "http") || u.Host == "" {
		return webTarget{}, errors.New("not an absolute http URL")
	}
	// ResolveReference removes dot segments (RFC 3986 section 5.2.4).
	u = (&url.URL{Scheme: "http", Host: u.Host, Path: "/"}).ResolveReference(u)
	host := strings.ToLower(u.Host)
	host = strings.TrimSuffix(host, ":80")
	target := u.EscapedPath()
	if target == "" {
		target = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		target += "?" + u.RawQuery
	}
	for i, h := range w.hosts {
		if h == host {
			return webTarget{i, target}, nil
		}
	}
	return webTarget{}, fmt.Errorf("host %q is not a host of this web", host)
}

// xRobotsNofollow reports whether an X-Robots-Tag value (no user-agent
// prefix, as this web sends it) says nofollow or none.
func xRobotsNofollow(v string) bool {
	for _, tok := range strings.Split(v, ",") {
		if t := strings.ToLower(strings.TrimSpace(tok)); t == "nofollow" || t == "none" {
			return true
		}
	}
	return false
}
