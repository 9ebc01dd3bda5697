package plainurl

import (
	"testing"

	whatwgurl "github.com/nlnwa/whatwg-url/url"
)

var seeds = []string{
	"http://example.com/", "https://a.b.c:8443/x/y.html?q=1&r=2", "http://127.0.0.1:8080/p/1", "http://h1.test/p/0",
	"http://example.com/a%20b?x=%C3%A9", "http://example.com/a%2eb", "http://example.com/a/./b", "http://example.com/a/../b",
	"http://example.com/.", "http://example.com/..", "http://example.com/?", "http://example.com/#f", "http://u@example.com/",
	"http://Example.com/", "http://example.com:80/", "https://example.com:443/", "http://example.com:0/", "http://example.com:65536/",
	"http://example.com:/", "http://1.2.3/", "http://0x7f.0.0.1/", "http://256.1.1.1/", "http://01.2.3.4/", "http://a..b/",
	"http://xn--nxasmq6b/", "http://a-.b/", "http://exa_mple.com/", "http://example.com/a b", "http://example.com/a'b?c'd",
	"http://example.com/a|b", "http://example.com/a\\b", "http://example.com/é", "http://example.com", "http://example.com?x",
	"ftp://example.com/", "http://example.com/a?b?c", "http://example.com/%", "http://example.com/%4", "http://example.com/%zz",
	"http://example.com/a%2Fb", "http://1.2.3.4/", "http://a.123/", "http://123.a/", "http://example.com/~x/(y)*+,;=:@!$&",
}

// FuzzSplit: wherever Split answers, the WHATWG parser gives the same URL
// back and the same components.
func FuzzSplit(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		p, ok := Split(u)
		if !ok {
			return
		}
		w, err := whatwgurl.Parse(u)
		if err != nil {
			t.Fatalf("Split(%q) ok, parse: %v", u, err)
		}
		search := ""
		if p.Query != "" {
			search = "?" + p.Query
		}
		got := [...]string{w.Href(false), w.Scheme(), w.Hostname(), w.Port(), w.Pathname(), w.Search()}
		want := [...]string{u, p.Scheme, p.Host, p.Port, p.Path, search}
		if got != want {
			t.Fatalf("Split(%q): %q, WHATWG parse %q", u, want, got)
		}
	})
}

func TestSplitSeeds(t *testing.T) {
	plain := map[string]bool{
		"http://example.com/": true, "https://a.b.c:8443/x/y.html?q=1&r=2": true, "http://127.0.0.1:8080/p/1": true,
		"http://h1.test/p/0": true, "http://example.com/a%20b?x=%C3%A9": true, "http://example.com/a?b?c": true,
		"http://example.com/a%2Fb": true, "http://1.2.3.4/": true, "http://123.a/": true, "http://example.com/~x/(y)*+,;=:@!$&": true,
	}
	for _, s := range seeds {
		if _, ok := Split(s); ok != plain[s] {
			t.Errorf("Split(%q) ok = %v, want %v", s, ok, plain[s])
		}
	}
}
