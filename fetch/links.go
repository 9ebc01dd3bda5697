package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"

	"github.com/zkcrawl/zkcrawl/internal/plainurl"
)

// Link extraction limits.
const (
	// DefaultMaxLinks is the number of links ExtractLinks returns per page at
	// most; the rest are counted in Links.Dropped.
	DefaultMaxLinks = 10_000
	// MaxLinkLength: longer URLs are skipped (counted in Links.Invalid). 2083
	// characters is the classic browser limit Heritrix also uses for URIs.
	MaxLinkLength = 2083
	// MaxTitleBytes caps Links.Title (a page title is a label for the crawl
	// log and a WACZ page list, not content).
	MaxTitleBytes = 256
)

// ErrNotHTML is returned by ExtractLinks for a content type other than
// text/html or application/xhtml+xml; such bodies are not parsed.
var ErrNotHTML = errors.New("not an HTML content type")

// Links is what ExtractLinks found in one page. URLs are absolute http or
// https URLs without fragment, serialized by the WHATWG URL Standard parser
// (github.com/nlnwa/whatwg-url), deduplicated, in document order.
type Links struct {
	// URLs are the links to follow: a[href], area[href], frame[src],
	// iframe[src], minus rel="nofollow" links.
	URLs []string
	// NoFollowURLs are a/area links marked rel="nofollow". They must not be
	// followed; they are kept for the crawl log and statistics only.
	NoFollowURLs []string
	// Requisites are the page's embedded resources (requisites.go: img
	// src/srcset, source, script src, link rel=stylesheet|icon|preload|
	// modulepreload|manifest|apple-touch-icon (and imagesrcset), video/audio/track, object data, embed src, input type=image, url()
	// and @import in style attributes and <style> elements), absolute,
	// deduplicated, in document order, at most maxLinks of them. They are
	// extracted whatever meta robots says: a page needs them to replay.
	Requisites []string
	// NoFollow is set when <meta name="robots"> says "nofollow" or "none":
	// URLs and NoFollowURLs are then empty.
	NoFollow bool
	// NoIndex is set when <meta name="robots"> says "noindex" or "none".
	// Informational: zkcrawl archives pages regardless.
	NoIndex bool
	// Base is the URL relative links were resolved against: the page URL, or
	// its <base href> when that is a valid http(s) URL.
	Base string
	// Title is the text of the page's first <title> element (HTML
	// Standard: entities decoded), whitespace runs collapsed to one space
	// and trimmed, cut to at most MaxTitleBytes at a UTF-8 character
	// boundary; "" when the page has none.
	Title string
	// Dropped counts link elements not examined because the cap was reached.
	Dropped int
	// Invalid counts links skipped because they do not parse as URLs, are not
	// http(s) (javascript:, mailto:, data:, ...), or exceed MaxLinkLength.
	Invalid int
}

// ExtractLinks is ExtractLinksLimit with DefaultMaxLinks.
func ExtractLinks(base *url.URL, body []byte, contentType string) (Links, error) {
	return ExtractLinksLimit(base, body, contentType, DefaultMaxLinks)
}

// ExtractLinksLimit scans an HTML page with golang.org/x/net/html's
// tokenizer (the HTML Standard's tokenization, so any byte sequence scans;
// see scanTokens) and returns its outgoing links, at most maxLinks of them
// (maxLinks <= 0: DefaultMaxLinks).
//
// base is the page's URL. body is the decoded (not gzip-compressed) body;
// its character encoding is taken from contentType's charset, a BOM or
// <meta charset> (golang.org/x/net/html/charset), else UTF-8 when the body
// is valid UTF-8, else windows-1252, as browsers do. Relative links resolve
// against the first <base href> (HTML Standard, "document base URL") or base.
// Fragments are removed. Query strings are percent-encoded as UTF-8 whatever
// the page's encoding (browsers use the page's encoding there; whatwg-url's
// encoding override would also wrongly apply it to paths and hosts).
// Only text/html and application/xhtml+xml are parsed; any other
// contentType gives ErrNotHTML. A nil base is an error.
//
// Embedded resources are returned apart, in Links.Requisites.
func ExtractLinksLimit(base *url.URL, body []byte, contentType string, maxLinks int) (Links, error) {
	if base == nil {
		return Links{}, errors.New("extract links: base URL is nil")
	}
	if mt := mediaType(contentType); mt != "text/html" && mt != "application/xhtml+xml" {
		return Links{}, fmt.Errorf("extract links from %s: content type %q: %w", base, contentType, ErrNotHTML)
	}
	if maxLinks <= 0 {
		maxLinks = DefaultMaxLinks
	}
	baseURL, err := linkParser.Parse(base.String())
	if err != nil {
		return Links{}, fmt.Errorf("extract links: base URL %q: %w", base, err)
	}

	utf8Body := body
	if enc, _, certain := charset.DetermineEncoding(body, contentType); enc != encoding.Nop && (certain || !utf8.Valid(body)) {
		if dec, err := enc.NewDecoder().Bytes(body); err == nil {
			utf8Body = dec
		}
	}

	sc := scanTokens(utf8Body)
	return sc.links(baseURL, maxLinks), nil
}

// linkParser is the WHATWG URL parser for links. It percent-encodes a lone
// "%" as "%25": the URL Standard keeps it as is, but Go's net/url (and so
// net/http) rejects such URLs, and every link returned must be fetchable.
var linkParser = whatwg.NewParser(whatwg.WithPercentEncodeSinglePercentSign())

// pageScan is what a page holds that link extraction needs, in document
// order, before any URL is resolved.
type pageScan struct {
	robots   []string // content of each <meta name="robots">
	baseHref *string  // href of the first <base href>
	title    *string  // text of the first <title>, as written (entities decoded)
	refs     []rawLink
	embeds   []string // requisite URLs as written
}

// rawLink is one candidate link as written in the page.
type rawLink struct {
	ref      string
	nofollow bool
}

// scanTokens collects meta robots, the first base href, the links and the
// requisites from the tokenizer's start tags (golang.org/x/net/html's
// tokenizer: the HTML Standard's tokenization, so raw text such as <script>
// and <noscript> bodies is not mistaken for tags). No tree is built: a
// link's meaning does not depend on its place in the tree, building one
// tripled the cost (BenchmarkScan: 1.7 ms against 0.57 ms for a 105 KB page
// with html.Parse, links_scan_test.go) and the tree builder refuses documents nested
// deeper than 512 elements. Only the attributes some rule reads (linkAttrs)
// are copied out of the tokenizer.
func scanTokens(body []byte) (sc pageScan) {
	z := html.NewTokenizer(bytes.NewReader(body))
	inStyle, inTitle := false, false
	var attrs []html.Attribute
	for {
		tt := z.Next()
		if tt == html.TextToken && inStyle {
			sc.embeds = append(sc.embeds, CSSRefs(z.Text())...)
		}
		if inTitle {
			// <title> is escapable raw text: one text token up to </title>.
			t := ""
			if tt == html.TextToken {
				t = string(z.Text())
			}
			sc.title = &t
		}
		inStyle, inTitle = false, false
		switch tt {
		case html.ErrorToken:
			return sc // io.EOF: the tokenizer reads from memory
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			attrs = attrs[:0]
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if linkAttrs[string(k)] {
					attrs = append(attrs, html.Attribute{Key: string(k), Val: string(v)})
				}
			}
			tag := atom.Lookup(name).String() // no allocation; "" for a tag no rule names
			sc.embeds = append(sc.embeds, requisiteRefs(tag, attrs)...)
			inStyle = tag == "style" && tt == html.StartTagToken
			inTitle = tag == "title" && tt == html.StartTagToken && sc.title == nil
			switch tag {
			case "a", "area", "frame", "iframe":
				if _, ok := attr(attrs, urlAttr(tag)); ok {
					sc.refs = append(sc.refs, linkOf(tag, attrs))
				}
			case "base":
				if href, ok := attr(attrs, "href"); ok && sc.baseHref == nil {
					sc.baseHref = &href
				}
			case "meta":
				if name, _ := attr(attrs, "name"); strings.EqualFold(strings.TrimSpace(name), "robots") {
					content, _ := attr(attrs, "content")
					sc.robots = append(sc.robots, content)
				}
			}
		}
	}
}

// linkAttrs are the attributes scanTokens reads (lowercase, as the
// tokenizer gives them).
var linkAttrs = map[string]bool{
	"href": true, "src": true, "srcset": true, "rel": true, "name": true, "content": true,
	"type": true, "style": true, "data": true, "poster": true, "imagesrcset": true,
}

// urlAttr names the attribute holding an element's link.
func urlAttr(tag string) string {
	if tag == "frame" || tag == "iframe" {
		return "src"
	}
	return "href"
}

// attr returns the first attribute key (no namespace) of attrs.
func attr(attrs []html.Attribute, key string) (string, bool) {
	for _, a := range attrs {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// linkOf returns the candidate link of an a, area, frame or iframe element.
func linkOf(tag string, attrs []html.Attribute) rawLink {
	ref, _ := attr(attrs, urlAttr(tag))
	return rawLink{ref: ref, nofollow: hasNoFollowRel(attrs)}
}

// links applies meta robots and base href, then resolves, filters,
// deduplicates and caps the candidate links.
func (sc *pageScan) links(baseURL *whatwg.Url, maxLinks int) Links {
	var links Links
	var d RobotsDirectives
	for _, content := range sc.robots {
		for _, tok := range strings.Split(content, ",") {
			d.add(tok)
		}
	}
	links.NoFollow, links.NoIndex = d.NoFollow, d.NoIndex
	if sc.title != nil {
		links.Title = cleanTitle(*sc.title)
	}
	if sc.baseHref != nil {
		if bu, err := baseURL.Parse(*sc.baseHref); err == nil && isHTTPScheme(bu.Scheme()) {
			baseURL = bu
		}
	}
	links.Base = baseURL.Href(false)
	links.Requisites = resolveAll(baseURL, sc.embeds, maxLinks)
	if links.NoFollow {
		return links
	}

	seen := make(map[string]struct{})
	seenNoFollow := make(map[string]struct{})
	// A page repeats many hrefs (navigation at the top and the bottom): the
	// same ref resolves the same way against the same base, so each
	// distinct ref is parsed once (the URL parser is the scan's biggest CPU
	// cost after the tokenizer).
	resolved := make(map[string]string, len(sc.refs)) // ref -> abs, "" if invalid
	n := 0
	for i, rl := range sc.refs {
		if n >= maxLinks {
			links.Dropped = len(sc.refs) - i
			break
		}
		abs, done := resolved[rl.ref]
		if !done {
			abs, _ = resolveLink(baseURL, rl.ref)
			resolved[rl.ref] = abs
		}
		if abs == "" {
			links.Invalid++
			continue
		}
		if rl.nofollow {
			if _, dup := seenNoFollow[abs]; !dup {
				seenNoFollow[abs] = struct{}{}
				links.NoFollowURLs = append(links.NoFollowURLs, abs)
				n++
			}
			continue
		}
		if _, dup := seen[abs]; !dup {
			seen[abs] = struct{}{}
			links.URLs = append(links.URLs, abs)
			n++
		}
	}
	return links
}

// resolveLink resolves ref against base with the WHATWG URL parser (which
// strips surrounding whitespace and embedded tabs and newlines, as browsers
// do) and returns it without fragment if it is an http(s) URL of acceptable
// length.
func resolveLink(base *whatwg.Url, ref string) (string, bool) {
	if len(ref) > 4*MaxLinkLength {
		return "", false // cannot shrink below the limit; skip the parse
	}
	if abs, ok := resolvePlain(base, ref); ok {
		return abs, len(abs) <= MaxLinkLength
	}
	return resolveParsed(base, ref)
}

// resolvePlain is resolveLink without a parse for the commonest refs,
// each with or without a fragment (dropped): a plain absolute http(s) URL
// (internal/plainurl: its own WHATWG serialization), and, against an
// http(s) base without userinfo, a plain path starting with a single '/'
// (the base's scheme and host, then the ref) or a plain relative path
// without ':' in its first segment, after leading "./" and "../" (the
// base's directory, or its parents, then the ref).
// ok false: parse it. FuzzResolvePlain checks it against resolveParsed.
func resolvePlain(base *whatwg.Url, ref string) (string, bool) {
	ref, _, _ = strings.Cut(ref, "#")
	if strings.HasPrefix(ref, "http") {
		_, ok := plainurl.Split(ref)
		return ref, ok
	}
	if ref == "" || strings.HasPrefix(ref, "//") || ref[0] == '?' || !isHTTPScheme(base.Scheme()) || base.Hostname() == "" || base.Username() != "" || base.Password() != "" {
		return "", false
	}
	dir := ""
	if ref[0] != '/' {
		first, _, _ := strings.Cut(ref, "/")
		if strings.IndexByte(first, ':') >= 0 {
			return "", false // a scheme, or a ':' the parser may read as one
		}
		p := base.Pathname()
		dir = p[:strings.LastIndexByte(p, '/')+1]
		if dir == "" {
			return "", false
		}
		for { // leading dot segments: "./" stays in dir, "../" goes up one (not above "/")
			if rest, ok := strings.CutPrefix(ref, "./"); ok {
				ref = rest
			} else if rest, ok := strings.CutPrefix(ref, "../"); ok {
				ref, dir = rest, dir[:strings.LastIndexByte(dir[:max(len(dir)-1, 1)], '/')+1]
			} else {
				break
			}
		}
	}
	if _, _, ok := plainurl.PathQuery(dir + ref); !ok {
		return "", false
	}
	return base.Protocol() + "//" + base.Host() + dir + ref, true
}

// resolveParsed is resolveLink by a full WHATWG parse.
func resolveParsed(base *whatwg.Url, ref string) (string, bool) {
	u, err := base.Parse(ref)
	if err != nil || !isHTTPScheme(u.Scheme()) || u.Hostname() == "" {
		return "", false
	}
	abs := u.Href(true)
	if len(abs) > MaxLinkLength {
		return "", false
	}
	return abs, true
}

// isHTTPScheme reports whether a WHATWG scheme (no colon) is http or https.
func isHTTPScheme(s string) bool { return s == "http" || s == "https" }

// hasNoFollowRel reports whether an element's rel attribute contains the
// "nofollow" keyword (HTML Standard, link type "nofollow"; rel is a set of
// space-separated, ASCII case-insensitive tokens).
func hasNoFollowRel(attrs []html.Attribute) bool {
	rel, _ := attr(attrs, "rel")
	for _, tok := range strings.Fields(rel) {
		if strings.EqualFold(tok, "nofollow") {
			return true
		}
	}
	return false
}

// cleanTitle collapses the whitespace runs of a <title> text to one space,
// trims it and cuts it to at most MaxTitleBytes at a character boundary.
func cleanTitle(t string) string {
	t = strings.Join(strings.Fields(t), " ")
	if len(t) <= MaxTitleBytes {
		return t
	}
	cut := MaxTitleBytes
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut]
}
