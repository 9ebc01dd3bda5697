package fetch

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseSrcset(t *testing.T) {
	cases := map[string][]string{
		"":                                     nil,
		"a.png":                                {"a.png"},
		"a.png 1x, b.png 2x":                   {"a.png", "b.png"},
		" a.png  480w ,\n b.png 800w ":         {"a.png", "b.png"},
		"a,b.png 1x, c.png":                    {"a,b.png", "c.png"},
		"a.png, b.png":                         {"a.png", "b.png"},
		"a.png 1x (weird, desc), b.png 2x":     {"a.png", "b.png"},
		",,,a.png,,,":                          {"a.png"},
		"data:image/png;base64,xyz= 1x, d.png": {"data:image/png;base64,xyz=", "d.png"},
	}
	for in, want := range cases {
		if got := ParseSrcset(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseSrcset(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSSRefs(t *testing.T) {
	sheet := `@import "base.css";
@import url(print.css) print;
@IMPORT 'other.css';
/* url(comment.png) is not a reference */
body { background: url( "bg.png" ) no-repeat, URL(x\2c y.png); }
.a { content: "url(string.png)"; cursor: url('cur.cur'), auto }
@font-face { src: url(font.woff2) format("woff2") }
.b { background: url(bad url.png) }
.c { background-image: image-set(url(one.png) 1x) }`
	want := []string{"base.css", "print.css", "other.css", "bg.png", "x,y.png", "cur.cur", "font.woff2", "one.png"}
	if got := CSSRefs([]byte(sheet)); !reflect.DeepEqual(got, want) {
		t.Errorf("CSSRefs = %q\nwant %q", got, want)
	}
}

func TestExtractRequisites(t *testing.T) {
	page := `<!DOCTYPE html><html><head>
<base href="/assets/">
<link rel="stylesheet" href="site.css"><link rel="ICON shortcut" href="/favicon.ico">
<link rel="preload" href="font.woff2" as="font"><link rel="alternate" href="/feed.xml">
<link rel="modulepreload" href="mod.js"><link rel="manifest" href="app.webmanifest">
<link rel="apple-touch-icon" href="touch.png"><link rel="preload" as="image" href="hero.png" imagesrcset="hero-2x.png 2x, hero-3x.png 3x">
<script src="app.js"></script><script>var notAURL = "x.js";</script>
<style>@import "inline-import.css"; h1 { background: url(h1.png) }</style>
<meta name="robots" content="nofollow">
</head><body>
<img src="a.png" srcset="a-2x.png 2x, a-3x.png 3x">
<picture><source srcset="wide.webp 800w" media="(min-width: 800px)"><img src="a.png"></picture>
<video src="v.mp4" poster="poster.jpg"><source src="v.webm"><track src="subs.vtt"></video>
<audio src="s.ogg"></audio><object data="movie.swf"></object><embed src="e.svg">
<input type="image" src="button.png"><input type="text" src="not-this.png">
<div style="background-image: url('div.png')"></div>
<img src="javascript:void(0)"><img src="data:image/gif;base64,R0lGOD=="><img src="https://cdn.example.net/logo.png#x">
<a href="/page">link</a>
</body></html>`
	base, _ := url.Parse("http://example.com/dir/page.html")
	l, err := ExtractLinks(base, []byte(page), "text/html")
	if err != nil {
		t.Fatal(err)
	}
	a := "http://example.com/assets/"
	want := []string{a + "site.css", "http://example.com/favicon.ico", a + "font.woff2",
		a + "mod.js", a + "app.webmanifest", a + "touch.png", a + "hero.png", a + "hero-2x.png", a + "hero-3x.png", a + "app.js",
		a + "inline-import.css", a + "h1.png", a + "a.png", a + "a-2x.png", a + "a-3x.png", a + "wide.webp",
		a + "v.mp4", a + "poster.jpg", a + "v.webm", a + "subs.vtt", a + "s.ogg", a + "movie.swf", a + "e.svg",
		a + "button.png", a + "div.png", "https://cdn.example.net/logo.png"}
	if !reflect.DeepEqual(l.Requisites, want) {
		t.Errorf("Requisites =\n%q\nwant\n%q", l.Requisites, want)
	}
	if !l.NoFollow || len(l.URLs) != 0 {
		t.Errorf("meta robots nofollow: URLs %q, NoFollow %v", l.URLs, l.NoFollow)
	}
	// The tokenizer path (documents nested too deep for the tree) finds
	// the same requisites.
	deep := strings.Replace(page, "<body>", "<body>"+strings.Repeat("<div>", 600), 1)
	l2, err := ExtractLinks(base, []byte(deep), "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l2.Requisites, want) {
		t.Errorf("tokenizer path: Requisites =\n%q\nwant\n%q", l2.Requisites, want)
	}
}

func TestExtractCSSRequisites(t *testing.T) {
	base, _ := url.Parse("http://cdn.example.net/css/site.css")
	got, err := ExtractCSSRequisites(base, []byte(`@import "../print.css"; a{background:url(img/a.png)} b{background:url(img/a.png)} c{background:url(mailto:x)}`), "text/css; charset=utf-8", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://cdn.example.net/print.css", "http://cdn.example.net/css/img/a.png"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// A style sheet's URLs are capped like a page's links.
	var many strings.Builder
	for i := range 50 {
		fmt.Fprintf(&many, "@import url(i%d.css);\n", i)
	}
	if got, _ := ExtractCSSRequisites(base, []byte(many.String()), "text/css", 20); len(got) != 20 {
		t.Errorf("cap 20: %d URLs", len(got))
	}
	if _, err := ExtractCSSRequisites(base, nil, "text/html", 0); err == nil || !strings.Contains(err.Error(), "text/html") {
		t.Errorf("non-CSS content type: %v", err)
	}
}
