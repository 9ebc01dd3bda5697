package fetch

// Page requisites: the embedded resources a browser loads to render a page
// (Heritrix's "E" hop, wget's -p). HTML attributes come from the same
// tokenizer scan as the links (links.go); CSS is tokenised with
// github.com/tdewolff/parse/v2/css (CSS Syntax Level 3). The srcset
// microsyntax has no Go library; it is parsed by hand below, following the
// HTML Standard's algorithm.

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/css"
	"golang.org/x/net/html"
)

// requisiteRels are the <link rel> keywords whose href is a requisite
// (HTML Standard, "link types": external resources a page needs to render
// or that a browser loads with it; manifest is the web app manifest,
// apple-touch-icon Apple's home-screen icon).
var requisiteRels = map[string]bool{
	"stylesheet": true, "icon": true, "preload": true, "modulepreload": true, "apple-touch-icon": true,
	"manifest": true,
}

// requisiteRefs returns, as written, the requisite URLs of one element:
// img src/srcset, source src/srcset, script src, link href (rel stylesheet,
// icon, preload, modulepreload, apple-touch-icon, manifest) and a link's
// imagesrcset (a preloaded responsive image), video src/poster, audio src,
// track src, object data, embed src, input type=image src, and the url()s
// of a style attribute.
func requisiteRefs(tag string, attrs []html.Attribute) []string {
	var out []string
	add := func(key string) {
		if v, ok := attr(attrs, key); ok && strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	switch tag {
	case "img", "source":
		add("src")
		if v, ok := attr(attrs, "srcset"); ok {
			out = append(out, ParseSrcset(v)...)
		}
	case "script", "embed", "track", "audio":
		add("src")
	case "video":
		add("src")
		add("poster")
	case "object":
		add("data")
	case "input":
		if t, _ := attr(attrs, "type"); strings.EqualFold(strings.TrimSpace(t), "image") {
			add("src")
		}
	case "link":
		rel, _ := attr(attrs, "rel")
		for _, tok := range strings.Fields(rel) {
			if requisiteRels[strings.ToLower(tok)] {
				add("href")
				if v, ok := attr(attrs, "imagesrcset"); ok {
					out = append(out, ParseSrcset(v)...)
				}
				break
			}
		}
	}
	if style, ok := attr(attrs, "style"); ok {
		out = append(out, CSSRefs([]byte(style))...)
	}
	return out
}

// ParseSrcset returns the image candidate URLs of a srcset attribute value
// (HTML Standard, "parse a srcset attribute", 4.8.4.3.10): candidates are
// separated by commas; a URL is a run of non-whitespace characters, trailing
// commas removed; descriptors ("2x", "480w") follow it up to the next comma
// outside parentheses. URLs may contain commas ("a,b.png 1x"). Invalid
// descriptors do not drop the URL here: a crawler fetches every candidate.
func ParseSrcset(v string) []string {
	var out []string
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }
	i := 0
	for i < len(v) {
		for i < len(v) && (isSpace(v[i]) || v[i] == ',') {
			i++
		}
		if i >= len(v) {
			break
		}
		start := i
		for i < len(v) && !isSpace(v[i]) {
			i++
		}
		u := v[start:i]
		endsWithComma := strings.HasSuffix(u, ",")
		u = strings.TrimRight(u, ",")
		if u != "" {
			out = append(out, u)
		}
		if endsWithComma {
			continue // no descriptors
		}
		// Skip the descriptors: up to a comma outside parentheses.
		depth := 0
		for i < len(v) {
			c := v[i]
			i++
			if c == '(' {
				depth++
			} else if c == ')' && depth > 0 {
				depth--
			} else if c == ',' && depth == 0 {
				break
			}
		}
	}
	return out
}

// CSSRefs returns, as written, the URLs a style sheet (or a style
// attribute's declarations) loads: every url(...) token and the string of
// each @import rule (`@import "x.css"` as well as `@import url(x.css)`), in
// order. It tokenises with tdewolff/parse's CSS lexer (CSS Syntax Level 3),
// so comments, strings and escapes are handled; a bad url(...) token is
// skipped. It never fails: CSS is forgiving, so is this.
func CSSRefs(sheet []byte) []string {
	var out []string
	l := css.NewLexer(parse.NewInputBytes(sheet))
	afterImport := false
	for {
		tt, data := l.Next()
		switch tt {
		case css.ErrorToken:
			return out // io.EOF, or a lexer error: what we have is all there is
		case css.URLToken:
			if u, ok := cssURLValue(data); ok {
				out = append(out, u)
			}
			afterImport = false
		case css.StringToken:
			if afterImport {
				out = append(out, cssUnescape(data[1:len(data)-1]))
			}
			afterImport = false
		case css.AtKeywordToken:
			afterImport = bytes.EqualFold(data, []byte("@import"))
		case css.WhitespaceToken, css.CommentToken:
		default:
			afterImport = false
		}
	}
}

// cssURLValue returns the URL inside a url(...) token, quotes and escapes
// removed.
func cssURLValue(tok []byte) (string, bool) {
	if len(tok) < 5 || tok[len(tok)-1] != ')' {
		return "", false
	}
	i := bytes.IndexByte(tok, '(')
	if i < 0 {
		return "", false
	}
	v := bytes.TrimSpace(tok[i+1 : len(tok)-1])
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	s := cssUnescape(v)
	return s, strings.TrimSpace(s) != ""
}

// cssUnescape undoes CSS escapes (CSS Syntax Level 3, 4.3.7): a backslash
// followed by 1-6 hex digits (and one optional whitespace) is that code
// point, a backslash before a newline is removed, any other escaped
// character stands for itself.
func cssUnescape(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			sb.WriteByte(c)
			continue
		}
		i++
		if b[i] == '\n' {
			continue
		}
		j, r := i, rune(0)
		for j < len(b) && j-i < 6 && isHex(b[j]) {
			r = r*16 + rune(hexVal(b[j]))
			j++
		}
		if j == i {
			sb.WriteByte(b[i])
			continue
		}
		if r == 0 || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
			r = utf8.RuneError
		}
		sb.WriteRune(r)
		if j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n') {
			j++
		}
		i = j - 1
	}
	return sb.String()
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// ErrNotCSS is returned by ExtractCSSRequisites for a content type other
// than text/css.
var ErrNotCSS = errors.New("not a CSS content type")

// ExtractCSSRequisites returns the absolute http(s) URLs a style sheet
// loads (CSSRefs), resolved against base (the style sheet's own URL, CSS
// Values 4 section 4.5.1), fragments removed, deduplicated, at most
// maxLinks of them (<= 0: DefaultMaxLinks). body is the decoded style sheet;
// a contentType other than text/css gives ErrNotCSS.
func ExtractCSSRequisites(base *url.URL, body []byte, contentType string, maxLinks int) ([]string, error) {
	if base == nil {
		return nil, errors.New("extract CSS requisites: base URL is nil")
	}
	if mt := mediaType(contentType); mt != "text/css" {
		return nil, fmt.Errorf("extract CSS requisites from %s: content type %q: %w", base, contentType, ErrNotCSS)
	}
	if maxLinks <= 0 {
		maxLinks = DefaultMaxLinks
	}
	b, err := linkParser.Parse(base.String())
	if err != nil {
		return nil, fmt.Errorf("extract CSS requisites: base URL %q: %w", base, err)
	}
	return resolveAll(b, CSSRefs(body), maxLinks), nil
}

// resolveAll resolves refs against base (resolveLink) and returns the valid
// ones deduplicated, in order, at most max of them.
func resolveAll(base *whatwg.Url, refs []string, max int) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range refs {
		if len(out) >= max {
			break
		}
		if abs, ok := resolveLink(base, r); ok && !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	}
	return out
}
