package fetch

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExtractJSLinks(t *testing.T) {
	base, _ := url.Parse("https://example.org/dir/page.html")
	js := `
var a = "/img/logo.png", b = 'css/site.css?v=3', c = "https://cdn.example.net/lib/x.js";
var d = "//static.example.com/fonts/f.woff2"; load("../up/data.json#top");
var e = "app.js"; var f = "text/html"; var g = "this.id"; var h = "hello world.html";
var i = "application/vnd.ms-excel"; var j = "no-extension/path"; var k = "x.y";
var l = "http://localhost/"; var m = "a\"b.html"; var n = "javascript:go()"; var o = "/img/logo.png";
var p = "/api/list.do?page=2&sort=name";`
	got := ExtractJSLinks(base, []byte(js), 0)
	want := []string{
		"https://example.org/img/logo.png",
		"https://example.org/dir/css/site.css?v=3",
		"https://cdn.example.net/lib/x.js",
		"https://static.example.com/fonts/f.woff2",
		"https://example.org/up/data.json",
		"https://example.org/dir/app.js",
		"https://example.org/api/list.do?page=2&sort=name",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ExtractJSLinks =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := ExtractJSLinks(base, []byte(js), 2); len(got) != 2 {
		t.Errorf("maxLinks 2 gave %d links", len(got))
	}
}

// Hostile scripts cost one linear pass over at most MaxJSScanBytes and at
// most maxLinks URLs.
func TestExtractJSLinksBounded(t *testing.T) {
	base, _ := url.Parse("https://example.org/")
	var many bytes.Buffer
	for i := 0; many.Len() < 8<<20; i++ {
		many.WriteString(`"/p/` + strings.Repeat("a", 1+i%50) + `.html",`)
	}
	hostile := [][]byte{
		bytes.Repeat([]byte(`"`), 8<<20),                         // every byte opens a literal
		bytes.Repeat([]byte(`"a`), 4<<20),                        // unclosed literals
		append([]byte(`"`), bytes.Repeat([]byte("a"), 8<<20)...), // one literal far over MaxLinkLength
		bytes.Repeat([]byte(`'"`), 4<<20),
		many.Bytes(),
	}
	for i, js := range hostile {
		start := time.Now()
		got := ExtractJSLinks(base, js, 0)
		if len(got) > DefaultMaxJSLinks {
			t.Errorf("script %d: %d links, cap %d", i, len(got), DefaultMaxJSLinks)
		}
		t.Logf("script %d: %d bytes, %v", i, len(js), time.Since(start))
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("script %d (%d bytes) took %v", i, len(js), d)
		}
	}
	if got := ExtractJSLinks(base, many.Bytes(), 0); len(got) != 50 {
		t.Errorf("50 distinct URLs repeated: got %d", len(got))
	}
}

func TestIsJavaScript(t *testing.T) {
	for _, mt := range []string{"text/javascript", "application/javascript", "application/x-javascript"} {
		if !IsJavaScript(mt) {
			t.Errorf("%s is not JavaScript", mt)
		}
	}
	if IsJavaScript("text/html") || IsJavaScript("application/json") {
		t.Error("text/html or application/json taken as JavaScript")
	}
}
