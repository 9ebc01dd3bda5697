package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// scanTree is the tree-building scan the tokenizer scan replaced: goquery
// (html.Parse, the HTML Standard's tree construction) with CSS selectors.
// It stays here as an independent oracle for scanTokens.
func scanTree(body []byte) (sc pageScan, err error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return sc, err
	}
	doc.Find("meta[name]").Each(func(_ int, s *goquery.Selection) {
		if strings.EqualFold(strings.TrimSpace(s.AttrOr("name", "")), "robots") {
			sc.robots = append(sc.robots, s.AttrOr("content", ""))
		}
	})
	if tl := doc.Find("title").First(); tl.Length() > 0 {
		text := tl.Text()
		sc.title = &text
	}
	if b := doc.Find("base[href]").First(); b.Length() > 0 {
		href := b.AttrOr("href", "")
		sc.baseHref = &href
	}
	doc.Find("a[href], area[href], frame[src], iframe[src]").Each(func(_ int, s *goquery.Selection) {
		n := s.Get(0)
		sc.refs = append(sc.refs, linkOf(n.Data, n.Attr))
	})
	const requisites = "img, source, script[src], link[href], video, audio, track[src], object[data], embed[src], input[src], [style], style"
	doc.Find(requisites).Each(func(_ int, s *goquery.Selection) {
		n := s.Get(0)
		sc.embeds = append(sc.embeds, requisiteRefs(n.Data, n.Attr)...)
		if n.Data == "style" {
			sc.embeds = append(sc.embeds, CSSRefs([]byte(s.Text()))...)
		}
	})
	return sc, nil
}

// pgDocs is Debian's postgresql-doc-15 HTML manual (make bench installs it).
const pgDocs = "/usr/share/doc/postgresql-doc-15/html"

// TestScanTokensMatchesTree: the tokenizer scan finds what the tree scan
// finds, in the same order, on an inline page of tricky markup and on every
// page of the PostgreSQL manual when it is installed.
func TestScanTokensMatchesTree(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(pgDocs, "*.html"))
	pages := [][]byte{
		[]byte(`<html><head><base href="/b/"><meta name="ROBOTS" content="noindex"></head><body>
<a href="x" rel="NoFollow">x</a><script>document.write('<a href="nope">')</script><noscript><a href="ns">n</a></noscript>
<style>@import "s.css"; p { background: url(bg.png) }</style><p style="background:url('st.png')">
<img src="i.png" srcset="a.png 1x, b.png 2x"><textarea><a href="ta"></textarea><iframe src="f.html"></iframe>
<area href="ar"><link rel="stylesheet icon" href="c.css"><input type=IMAGE src="in.png"><video poster="p.png" src="v.mp4"></video>`),
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, b)
	}
	compared := 0
	for i, body := range pages {
		want, err := scanTree(body)
		if err != nil {
			continue // nested too deep for the tree: nothing to compare
		}
		compared++
		if got := scanTokens(body); !reflect.DeepEqual(got, want) {
			name := "inline page"
			if i > 0 {
				name = files[i-1]
			}
			t.Errorf("%s: tokenizer scan\n%+v\ntree scan\n%+v", name, got, want)
		}
	}
	t.Logf("%d of %d pages compared", compared, len(pages))
}

func BenchmarkScan(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(pgDocs, "sql-createtable.html"))
	if err != nil {
		b.Skip(err)
	}
	b.Run("tree", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			_, _ = scanTree(body)
		}
	})
	b.Run("tokens", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			scanTokens(body)
		}
	})
}
