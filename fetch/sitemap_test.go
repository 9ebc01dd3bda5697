package fetch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func gz(t testing.TB, s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func TestParseSitemapURLSet(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://example.com/a?x=1&amp;y=2 </loc><lastmod>2026-11-01</lastmod><priority>0.8</priority></url>
  <url><loc>http://example.com/b</loc><priority>7</priority><changefreq>daily</changefreq></url>
  <url><lastmod>2026-01-01</lastmod></url>
</urlset>`
	for name, data := range map[string][]byte{"plain": []byte(doc), "gzip": gz(t, doc), "bom": append([]byte("\xef\xbb\xbf"), doc...)} {
		sm, err := ParseSitemap(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sm.Index || len(sm.URLs) != 2 || sm.URLs[0].Loc != "http://example.com/a?x=1&y=2" || sm.URLs[0].Lastmod != "2026-11-01" ||
			sm.URLs[0].Priority == nil || *sm.URLs[0].Priority != 0.8 || sm.URLs[1].Priority != nil {
			t.Errorf("%s: %+v", name, sm)
		}
	}
}

func TestParseSitemapIndexAndText(t *testing.T) {
	idx := `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://example.com/s1.xml.gz</loc><lastmod>2026-11-01</lastmod></sitemap>
<sitemap><loc>/relative.xml</loc></sitemap></sitemapindex>`
	sm, err := ParseSitemap(strings.NewReader(idx))
	if err != nil || !sm.Index || len(sm.Sitemaps) != 2 || sm.Sitemaps[1] != "/relative.xml" || len(sm.URLs) != 0 {
		t.Fatalf("index: %+v %v", sm, err)
	}
	sm, err = ParseSitemap(strings.NewReader("http://example.com/one\n\n  http://example.com/two  \n"))
	if err != nil || len(sm.URLs) != 2 || sm.URLs[1].Loc != "http://example.com/two" {
		t.Fatalf("text: %+v %v", sm, err)
	}
	if sm, err := ParseSitemap(strings.NewReader("")); err != nil || len(sm.URLs) != 0 {
		t.Fatalf("empty: %+v %v", sm, err)
	}
}

func TestParseSitemapLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := 0; i < MaxSitemapURLs+5; i++ {
		fmt.Fprintf(&b, "<url><loc>http://e.com/%d</loc></url>", i)
	}
	b.WriteString("</urlset>")
	sm, err := ParseSitemap(bytes.NewReader(gz(t, b.String())))
	if err != nil || len(sm.URLs) != MaxSitemapURLs || sm.Dropped != 5 {
		t.Fatalf("50,000 URL limit: %d URLs, %d dropped, %v", len(sm.URLs), sm.Dropped, err)
	}
	// 50 MiB uncompressed (a small gzip file): the entries so far and an error.
	big := "<urlset><url><loc>http://e.com/first</loc></url>" + strings.Repeat(" ", MaxSitemapBytes) + "<url><loc>http://e.com/late</loc></url></urlset>"
	sm, err = ParseSitemap(bytes.NewReader(gz(t, big)))
	if !errors.Is(err, ErrSitemapTooLarge) || len(sm.URLs) != 1 {
		t.Fatalf("50 MiB limit: %d URLs, %v", len(sm.URLs), err)
	}
	if _, err := ParseSitemap(strings.NewReader("<urlset><url><loc>x</loc></url><url><loc a=\"b>")); err == nil || !strings.Contains(err.Error(), "byte") {
		t.Errorf("malformed XML: %v", err)
	}
}

// <lastmod> is kept only when it is a W3C Datetime (sitemap protocol 0.9);
// anything else is dropped and its URL kept, so no stray bytes (a cut
// inside a multi-byte character) reach the frontier.
func TestParseSitemapLastmod(t *testing.T) {
	valid := []string{"2026", "2026-11", "2026-11-01", "2026-11-01T10:00Z", "2026-11-01T10:00+01:00",
		"2026-11-01T10:00:59-05:30", "2026-11-01T10:00:00.5Z", "2026-11-01T23:59:59.123456789+14:00"}
	invalid := []string{"yesterday", "2026-13-01", "2026-02-30", "2026-11-01T24:00Z", "2026-11-01T10:00",
		"2026-11-01 10:00:00Z", "2026-11-01T10:00:00Z" + strings.Repeat("\u00e9", 30), "26-11-01",
		"2026-11-01T10:00:00." + strings.Repeat("1", 60) + "Z"}
	var b strings.Builder
	b.WriteString("<urlset>")
	for i, lm := range append(append([]string{}, valid...), invalid...) {
		fmt.Fprintf(&b, "<url><loc>http://e.com/%d</loc><lastmod> %s </lastmod></url>", i, lm)
	}
	b.WriteString("</urlset>")
	sm, err := ParseSitemap(strings.NewReader(b.String()))
	if err != nil || len(sm.URLs) != len(valid)+len(invalid) {
		t.Fatalf("%d URLs, %v", len(sm.URLs), err)
	}
	for i, e := range sm.URLs {
		if i < len(valid) && e.Lastmod != valid[i] {
			t.Errorf("valid lastmod %q read as %q", valid[i], e.Lastmod)
		}
		if i >= len(valid) && e.Lastmod != "" {
			t.Errorf("invalid lastmod %q kept as %q", invalid[i-len(valid)], e.Lastmod)
		}
	}
}

// Every protocol value of <changefreq> is kept (trimmed, lower-cased);
// garbage is ignored and the entry kept, never an error.
func TestParseSitemapChangefreq(t *testing.T) {
	valid := []string{"always", "hourly", "daily", "weekly", "monthly", "yearly", "never", " Daily ", "WEEKLY"}
	want := []string{"always", "hourly", "daily", "weekly", "monthly", "yearly", "never", "daily", "weekly"}
	garbage := []string{"", "fortnightly", "daily weekly", "1d", "<b>daily</b>", strings.Repeat("x", 100000), "nevermore"}
	var b strings.Builder
	b.WriteString("<urlset>")
	for i, cf := range append(append([]string{}, valid...), garbage...) {
		fmt.Fprintf(&b, "<url><loc>http://e.com/%d</loc><changefreq>%s</changefreq></url>", i, cf)
	}
	b.WriteString("<url><loc>http://e.com/none</loc></url></urlset>")
	sm, err := ParseSitemap(strings.NewReader(b.String()))
	if err != nil || len(sm.URLs) != len(valid)+len(garbage)+1 {
		t.Fatalf("%d URLs, %v", len(sm.URLs), err)
	}
	for i, e := range sm.URLs {
		switch {
		case i < len(valid) && e.Changefreq != want[i]:
			t.Errorf("changefreq %q read as %q, want %q", valid[i], e.Changefreq, want[i])
		case i >= len(valid) && e.Changefreq != "":
			t.Errorf("entry %d (%s): garbage changefreq kept as %q", i, e.Loc, e.Changefreq)
		}
	}
	for _, s := range []string{"Daily", "", "biweekly"} {
		if ValidChangefreq(s) {
			t.Errorf("ValidChangefreq(%q) = true", s)
		}
	}
}
