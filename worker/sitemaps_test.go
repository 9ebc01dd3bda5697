package worker

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// sitemapLinks turns a urlset into link items at depth+1 carrying lastmod,
// priority and changefreq (garbage changefreq dropped), an index into sitemap items at the same depth, and applies
// scope against the sitemap's URL.
func TestSitemapLinks(t *testing.T) {
	cfg := config.Default()
	scope, err := frontier.NewScope(frontier.ScopeConfig{Mode: cfg.Scope, MaxDepth: cfg.MaxDepth})
	if err != nil {
		t.Fatal(err)
	}
	live := &liveConfig{cfg: cfg, scope: scope, reqScope: scope}
	w := &Worker{log: testLogger(t)}
	sm := frontier.Item{URL: "http://example.com/sitemap.xml", Hops: "M"}
	res := &fetch.Result{URL: sm.URL, Status: 200, Header: http.Header{}, Body: []byte(`<urlset>
<url><loc>http://example.com/a</loc><lastmod>2026-11-01</lastmod><priority>0.7</priority><changefreq>weekly</changefreq></url>
<url><loc>/relative</loc><changefreq>every tuesday</changefreq></url>
<url><loc>http://elsewhere.example/b</loc></url></urlset>`)}
	got := w.sitemapLinks(sm, res, live)
	if len(got) != 2 || got[0].URL != "http://example.com/a" || got[0].Depth != 1 || got[0].Hops != "ML" ||
		got[0].Lastmod != "2026-11-01" || got[0].Priority == nil || *got[0].Priority != 0.7 || got[0].Changefreq != "weekly" ||
		got[1].URL != "http://example.com/relative" || got[1].Priority != nil || got[1].Changefreq != "" {
		t.Fatalf("urlset items: %+v", got)
	}
	res.Body = []byte(`<sitemapindex><sitemap><loc>http://example.com/s1.xml.gz</loc></sitemap></sitemapindex>`)
	got = w.sitemapLinks(sm, res, live)
	if len(got) != 1 || got[0].Hops != "MM" || got[0].Depth != 0 || got[0].URL != "http://example.com/s1.xml.gz" {
		t.Fatalf("index items: %+v", got)
	}
	deep := frontier.Item{URL: sm.URL, Hops: "MMM"}
	if got = w.sitemapLinks(deep, res, live); len(got) != 0 {
		t.Fatalf("an index three sitemaps deep still nested: %+v", got)
	}
}

// Whatever a sitemap's <lastmod> holds (a multi-byte character across byte
// 64, a date that is not a W3C Datetime, control characters), its URLs are
// kept and every item goes record -> ready item -> decoded item unchanged:
// none can become an undecodable ready item that is dead-lettered unfetched.
func TestSitemapHostileLastmodStaysDecodable(t *testing.T) {
	cfg := config.Default()
	scope, err := frontier.NewScope(frontier.ScopeConfig{Mode: cfg.Scope, MaxDepth: cfg.MaxDepth})
	if err != nil {
		t.Fatal(err)
	}
	live := &liveConfig{cfg: cfg, scope: scope, reqScope: scope}
	w := &Worker{log: testLogger(t)}
	sm := frontier.Item{URL: "http://example.com/sitemap.xml", Hops: "M"}
	lastmods := []string{
		"2026-11-01T10:00:00+01:00 " + strings.Repeat("\u00e9", 30), // é straddles byte 64
		"yesterday", "2026-13-01", "2026-11-01\tx", "2026-11-01x", "2026-11-01T10:00:00.123456789Z",
	}
	var b strings.Builder
	b.WriteString("<urlset>")
	for i, lm := range lastmods {
		fmt.Fprintf(&b, "<url><loc>http://example.com/%d</loc><lastmod>%s</lastmod></url>", i, lm)
	}
	b.WriteString("</urlset>")
	res := &fetch.Result{URL: sm.URL, Status: 200, Header: http.Header{}, Body: []byte(b.String())}
	got := w.sitemapLinks(sm, res, live)
	if len(got) != len(lastmods) {
		t.Fatalf("%d of %d URLs kept: %+v", len(got), len(lastmods), got)
	}
	for _, it := range got {
		rec, err := it.Record()
		if err != nil {
			t.Fatalf("Record(%+v): %v", it, err)
		}
		back, err := frontier.DecodeRecord(rec)
		if err != nil {
			t.Fatalf("DecodeRecord of %+v: %v", it, err)
		}
		data, err := back.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", back, err)
		}
		ready, err := frontier.DecodeItem(data)
		if err != nil || ready.Lastmod != it.Lastmod || ready.URL != it.URL {
			t.Fatalf("ready item %s of %+v: %+v, %v", data, it, ready, err)
		}
	}
	if got[5].Lastmod != "2026-11-01T10:00:00.123456789Z" {
		t.Errorf("a valid lastmod was dropped: %+v", got[5])
	}
	for _, it := range got[:5] {
		if it.Lastmod != "" {
			t.Errorf("invalid lastmod kept: %+v", it)
		}
	}
}
