package fetch

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolvePlain: wherever resolveLink's unparsed path answers, the full
// WHATWG parse gives the same link.
func FuzzResolvePlain(f *testing.F) {
	for _, c := range [][2]string{
		{"http://example.com/a/b", "/p/1"}, {"http://example.com/a/b", "http://h2.test/p/2#x"}, {"https://u:p@example.com/", "/x"},
		{"http://example.com:8080/", "/p?q=1#f"}, {"http://[::1]:8080/", "/p"}, {"http://xn--bcher-kva.example/", "/p"},
		{"http://example.com/", "//other.test/p"}, {"http://example.com/", "/a/../b"}, {"http://example.com/", "/a%2e/b"},
		{"http://example.com/", "https://example.com:443/"}, {"http://example.com/", "/#"}, {"http://example.com/", "/a b"},
		{"http://example.com/a/b.html?q", "c.html#x"}, {"http://example.com/a/", "c/d?e=f"}, {"http://example.com/a/b", "mailto:x@y"},
		{"http://example.com/a/b", "./c"}, {"http://example.com/a/b", "../c"}, {"http://example.com/a/b", "?q=1"}, {"http://example.com/a/b", "c:d/e"},
		{"http://example.com/%7e/b", "c"}, {"http://example.com/a^b/c", "d"}, {"http://example.com/a/b", "httpd/x"}, {"http://example.com/", ""},
		{"http://example.com/p/3", "./7"}, {"http://example.com/p/3", "../p/7"}, {"http://example.com/a/b/c", "../../x"}, {"http://example.com/a", "../../x"},
		{"http://example.com/a/b/c", "..//x"}, {"http://example.com/a/b", "./"}, {"http://example.com/a/b", "../"}, {"http://example.com/a/b", "./a:b"},
		{"http://example.com/a/b", ".././x"}, {"http://example.com/a/b", "./../x/.."},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, baseStr, ref string) {
		base, err := linkParser.Parse(baseStr)
		if err != nil {
			return
		}
		fast, ok := resolvePlain(base, ref)
		if !ok {
			return
		}
		u, err := base.Parse(ref)
		if err != nil {
			t.Fatalf("resolvePlain(%q, %q) = %q, parse: %v", baseStr, ref, fast, err)
		}
		if slow := u.Href(true); slow != fast {
			t.Fatalf("resolvePlain(%q, %q) = %q, full parse %q", baseStr, ref, fast, slow)
		}
	})
}

// BenchmarkExtractLinks is link extraction per page, URL resolution
// included: a page of the PostgreSQL manual (relative links) and a page of
// crawlbench's synthetic web (root-relative and absolute links).
func BenchmarkExtractLinks(b *testing.B) {
	pg, err := os.ReadFile(filepath.Join(pgDocs, "sql-createtable.html"))
	if err != nil {
		b.Skip(err)
	}
	var synth strings.Builder
	synth.WriteString("<!doctype html><html><head><title>p</title></head><body>")
	for i := range 8 {
		fmt.Fprintf(&synth, `<a href="/p/%d">page %d</a> <a href="http://h%d.test/p/%d">x</a>`, i*7, i, i, i*3)
	}
	synth.WriteString("</body></html>")
	for _, c := range []struct {
		name, base string
		body       []byte
	}{{"pgdocs", "http://127.0.0.1:8080/docs/sql-createtable.html", pg}, {"synth", "http://h1.test/p/5", []byte(synth.String())}} {
		base, _ := url.Parse(c.base)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ExtractLinks(base, c.body, "text/html; charset=utf-8"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
