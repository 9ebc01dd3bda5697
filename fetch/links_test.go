package fetch

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func extract(t *testing.T, page, html string) Links {
	t.Helper()
	l, err := ExtractLinks(mustURL(t, page), []byte(html), "text/html; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestExtractLinksResolveAndFilter(t *testing.T) {
	l := extract(t, "http://example.com/dir/page.html", `<html><body>
		<a href="other.html">rel</a>
		<a href="/abs#frag">abs</a>
		<a href="../up?x=1&amp;y=2#top">up</a>
		<a href="//cdn.example.org/lib">scheme-relative</a>
		<a href="https://secure.example.com/">https</a>
		<a href="  spaced.html  ">spaces</a>
		<a href="other.html#again">dup after fragment strip</a>
		<a href="#only-fragment">same page</a>
		<a href="javascript:alert(1)">js</a>
		<a href="mailto:a@example.com">mail</a>
		<a href="data:text/html,hi">data</a>
		<a href="ftp://example.com/f">ftp</a>
		<a href="tel:+123">tel</a>
		<a href="http://[::1">broken</a>
		<a>no href</a>
		<map><area href="area.html" alt=""></map>
		<iframe src="frame-i.html"></iframe>
		</body></html>`)
	want := []string{
		"http://example.com/dir/other.html",
		"http://example.com/abs",
		"http://example.com/up?x=1&y=2",
		"http://cdn.example.org/lib",
		"https://secure.example.com/",
		"http://example.com/dir/spaced.html",
		"http://example.com/dir/page.html",
		"http://example.com/dir/area.html",
		"http://example.com/dir/frame-i.html",
	}
	if !slices.Equal(l.URLs, want) {
		t.Errorf("URLs:\n got %q\nwant %q", l.URLs, want)
	}
	if l.Invalid != 6 {
		t.Errorf("Invalid = %d, want 6 (js, mailto, data, ftp, tel, broken)", l.Invalid)
	}
	if l.NoFollow || l.Dropped != 0 || l.Base != "http://example.com/dir/page.html" {
		t.Errorf("unexpected %+v", l)
	}
}

func TestExtractLinksBaseHref(t *testing.T) {
	l := extract(t, "http://example.com/a/b.html", `<html><head>
		<base href="http://other.example/root/">
		<base href="http://ignored.example/">
		</head><body><a href="x.html">x</a><a href="/y">y</a></body></html>`)
	if want := []string{"http://other.example/root/x.html", "http://other.example/y"}; !slices.Equal(l.URLs, want) {
		t.Errorf("URLs %q, want %q", l.URLs, want)
	}
	if l.Base != "http://other.example/root/" {
		t.Errorf("Base %q", l.Base)
	}
	// A relative base resolves against the page; a javascript: base is ignored.
	l = extract(t, "http://example.com/a/b.html", `<base href="/sub/"><a href="x">x</a>`)
	if want := []string{"http://example.com/sub/x"}; !slices.Equal(l.URLs, want) {
		t.Errorf("relative base: URLs %q, want %q", l.URLs, want)
	}
	l = extract(t, "http://example.com/a/b.html", `<base href="javascript:void(0)"><a href="x">x</a>`)
	if want := []string{"http://example.com/a/x"}; !slices.Equal(l.URLs, want) {
		t.Errorf("bad base: URLs %q, want %q", l.URLs, want)
	}
}

func TestExtractLinksNoFollow(t *testing.T) {
	l := extract(t, "http://example.com/", `<a href="/follow">f</a>
		<a href="/nf" rel="external NoFollow">nf</a>
		<area href="/nf-area" rel="nofollow">`)
	if !slices.Equal(l.URLs, []string{"http://example.com/follow"}) {
		t.Errorf("URLs %q", l.URLs)
	}
	if !slices.Equal(l.NoFollowURLs, []string{"http://example.com/nf", "http://example.com/nf-area"}) {
		t.Errorf("NoFollowURLs %q", l.NoFollowURLs)
	}

	for _, content := range []string{"nofollow", "NOINDEX, NOFOLLOW", "none"} {
		l = extract(t, "http://example.com/", `<html><head><meta name="Robots" content="`+content+`"></head>
			<body><a href="/a">a</a></body></html>`)
		if !l.NoFollow || len(l.URLs) != 0 || len(l.NoFollowURLs) != 0 {
			t.Errorf("meta robots %q: %+v, want NoFollow and no links", content, l)
		}
	}
	l = extract(t, "http://example.com/", `<meta name="robots" content="noindex"><a href="/a">a</a>`)
	if l.NoFollow || !l.NoIndex || len(l.URLs) != 1 {
		t.Errorf("meta noindex: %+v", l)
	}
	l = extract(t, "http://example.com/", `<meta name="description" content="nofollow"><a href="/a">a</a>`)
	if l.NoFollow || len(l.URLs) != 1 {
		t.Errorf("other meta: %+v", l)
	}
}

func TestExtractLinksFrames(t *testing.T) {
	l := extract(t, "http://example.com/", `<html><frameset>
		<frame src="left.html"><frame src="right.html"><frame>
		</frameset></html>`)
	if want := []string{"http://example.com/left.html", "http://example.com/right.html"}; !slices.Equal(l.URLs, want) {
		t.Errorf("URLs %q, want %q", l.URLs, want)
	}
}

func TestExtractLinksCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("<html><body>")
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&b, `<a href="/p%d">%d</a>`, i, i)
	}
	b.WriteString("</body></html>")
	l, err := ExtractLinks(mustURL(t, "http://example.com/"), []byte(b.String()), "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.URLs) != DefaultMaxLinks || l.Dropped != 100_000-DefaultMaxLinks {
		t.Errorf("%d URLs, %d dropped; want %d and %d", len(l.URLs), l.Dropped, DefaultMaxLinks, 100_000-DefaultMaxLinks)
	}
	if l.URLs[9999] != "http://example.com/p9999" {
		t.Errorf("last kept link %q", l.URLs[9999])
	}
	l, err = ExtractLinksLimit(mustURL(t, "http://example.com/"), []byte(b.String()), "text/html", 10)
	if err != nil || len(l.URLs) != 10 || l.Dropped != 100_000-10 {
		t.Errorf("limit 10: %d URLs, %d dropped, %v", len(l.URLs), l.Dropped, err)
	}
}

func TestExtractLinksRobustness(t *testing.T) {
	base := mustURL(t, "http://example.com/")
	// Invalid UTF-8 in an href, declared UTF-8: replaced, percent-encoded.
	l, err := ExtractLinks(base, []byte("<a href=\"/caf\xe9\xff\">x</a>"), "text/html; charset=utf-8")
	if err != nil || len(l.URLs) != 1 || l.URLs[0] != "http://example.com/caf%EF%BF%BD%EF%BF%BD" {
		t.Errorf("invalid UTF-8: %q, %v", l.URLs, err)
	}
	// Undeclared windows-1252 (invalid as UTF-8): decoded as browsers do.
	l, err = ExtractLinks(base, []byte("<a href=\"/caf\xe9\">x</a>"), "text/html")
	if err != nil || len(l.URLs) != 1 || l.URLs[0] != "http://example.com/caf%C3%A9" {
		t.Errorf("windows-1252: %q, %v", l.URLs, err)
	}
	// A huge attribute: skipped, not returned.
	huge := `<a href="/` + strings.Repeat("a", 1<<20) + `">x</a><a href="/ok">ok</a>`
	l, err = ExtractLinks(base, []byte(huge), "text/html")
	if err != nil || !slices.Equal(l.URLs, []string{"http://example.com/ok"}) || l.Invalid != 1 {
		t.Errorf("huge attribute: %q invalid %d, %v", l.URLs, l.Invalid, err)
	}
	// Deep nesting.
	deep := strings.Repeat("<div>", 50_000) + `<a href="/deep">d</a>` + strings.Repeat("</div>", 50_000)
	l, err = ExtractLinks(base, []byte(deep), "text/html")
	if err != nil || !slices.Equal(l.URLs, []string{"http://example.com/deep"}) {
		t.Errorf("deep nesting: %q, %v", l.URLs, err)
	}
	// The tokenizer fallback for deep documents honours base, rel and meta.
	deep = `<base href="http://other.example/b/">` + strings.Repeat("<span>", 1000) +
		`<a href="x">x</a><a href="/nf" rel=nofollow>n</a><iframe src="i"></iframe>`
	l, err = ExtractLinks(base, []byte(deep), "text/html")
	if err != nil || !slices.Equal(l.URLs, []string{"http://other.example/b/x", "http://other.example/b/i"}) ||
		!slices.Equal(l.NoFollowURLs, []string{"http://other.example/nf"}) {
		t.Errorf("deep with base: %q %q, %v", l.URLs, l.NoFollowURLs, err)
	}
	l, err = ExtractLinks(base, []byte(strings.Repeat("<p><i>", 600)+`<meta name=robots content=nofollow><a href=/a>`), "text/html")
	if err != nil || !l.NoFollow || len(l.URLs) != 0 {
		t.Errorf("deep with meta nofollow: %+v, %v", l, err)
	}
	// Binary junk parses to nothing.
	if _, err := ExtractLinks(base, []byte{0, 1, 2, 0xff, '<', 'a', 0}, "text/html"); err != nil {
		t.Errorf("junk: %v", err)
	}
}

func TestExtractLinksContentTypes(t *testing.T) {
	base := mustURL(t, "http://example.com/")
	page := []byte(`<html xmlns="http://www.w3.org/1999/xhtml"><body><a href="/x">x</a></body></html>`)
	for _, ct := range []string{"text/html", "TEXT/HTML; charset=ISO-8859-1", "application/xhtml+xml"} {
		if l, err := ExtractLinks(base, page, ct); err != nil || len(l.URLs) != 1 {
			t.Errorf("%q: %q, %v", ct, l.URLs, err)
		}
	}
	for _, ct := range []string{"", "text/plain", "application/pdf", "image/png"} {
		if _, err := ExtractLinks(base, page, ct); !errors.Is(err, ErrNotHTML) {
			t.Errorf("%q: err %v, want ErrNotHTML", ct, err)
		}
	}
	if _, err := ExtractLinks(nil, page, "text/html"); err == nil {
		t.Error("nil base accepted")
	}
}

// FuzzExtractLinks: any body and content type must not panic, and every
// returned URL must be an absolute http(s) URL without fragment within the
// length limit.
func FuzzExtractLinks(f *testing.F) {
	seeds := []string{
		`<a href="/x">x</a>`,
		`<base href="http://b.example/d/"><a href="y#f">y</a>`,
		`<meta name=robots content=none><a href=/z>`,
		`<frameset><frame src=f.html></frameset>`,
		`<map><area href="javascript:x" rel=nofollow></map><iframe src="//h/i">`,
		"<a href=\"\xff\xfe\x00\">bad</a>",
		`<a href="http://[::1]:99999/">port</a><a href="http://ex ample.com/">space</a>`,
		strings.Repeat("<div>", 100) + `<a href="../../..">`,
		`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><a href="/x"/></html>`,
		`<meta charset="shift_jis"><a href="/\x82\xa0">`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), "text/html")
	}
	f.Add([]byte(`<a href="/x">`), "application/xhtml+xml; charset=windows-1252")
	f.Add([]byte(`<a href="/x">`), "text/plain")
	base := mustURL(f, "http://example.com/dir/page")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		l, err := ExtractLinksLimit(base, body, contentType, 50)
		if err != nil {
			return
		}
		if len(l.URLs)+len(l.NoFollowURLs) > 50 {
			t.Fatalf("%d links returned with limit 50", len(l.URLs)+len(l.NoFollowURLs))
		}
		for _, s := range append(slices.Clone(l.URLs), l.NoFollowURLs...) {
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
				strings.Contains(s, "#") || len(s) > MaxLinkLength {
				t.Fatalf("bad link %q (%v)", s, err)
			}
		}
	})
}

// The first <title> is the page's title: entities decoded, whitespace
// collapsed, markup inside it kept as text, capped at MaxTitleBytes on a
// character boundary; a page without one has "".
func TestExtractLinksTitle(t *testing.T) {
	for _, c := range []struct{ html, want string }{
		{"<html><head><title>\n  Caf&eacute;   &amp; <b>bar</b>\n</title><title>second</title>", "Café & <b>bar</b>"},
		{"<p>no title</p>", ""},
		{"<title></title><a href=/x>x</a>", ""},
		{"<svg><title>icon</title></svg><title>page</title>", "icon"},
		{"<title>" + strings.Repeat("é", 200) + "</title>", strings.Repeat("é", MaxTitleBytes/2)},
		{"<title>a" + strings.Repeat("é", 200) + "</title>", "a" + strings.Repeat("é", (MaxTitleBytes-1)/2)},
	} {
		if got := extract(t, "http://example.com/", c.html).Title; got != c.want {
			t.Errorf("%.60q: title %q, want %q", c.html, got, c.want)
		}
	}
}
