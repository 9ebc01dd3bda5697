package worker

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// pdfSite serves a page linking a PDF whose link annotation (a URI
// action) links /from-pdf.html, and a page linking a "PDF" that is not one.
func pdfSite(t *testing.T) (*httptest.Server, func(path string) int) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><a href="/doc.pdf">report</a> <a href="/bad.pdf">broken</a></body></html>`)
		case "/from-pdf.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body>linked from a PDF</body></html>`)
		case "/doc.pdf":
			f := fpdf.New("P", "mm", "A4", "")
			f.SetFont("Helvetica", "", 12)
			f.AddPage()
			f.WriteLinkString(6, "next page", "http://"+r.Host+"/from-pdf.html")
			var b bytes.Buffer
			if err := f.Output(&b); err != nil {
				t.Error(err)
			}
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(b.Bytes())
		case "/bad.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			fmt.Fprint(w, "%PDF-1.7\n1 0 obj << /Type /Annot /Subtype /Link /A << /S /URI /URI (/never.html) >>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[path]
	}
}

// extract_pdf_links takes a PDF's link annotations as links (hop L, one
// depth): with it on, the page the PDF links is fetched; off, it is not.
// A body that says application/pdf but is a broken PDF gives no links and
// does not stop the crawl.
func TestCrawlPDFLinks(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	for _, on := range []bool{true, false} {
		t.Run("extract_pdf_links="+strconv.FormatBool(on), func(t *testing.T) {
			srv, hit := pdfSite(t)
			cfg := testConfig()
			cfg.MaxDepth = 2
			cfg.Sitemaps = false
			cfg.ExtractPDFLinks = on
			c := newCrawl(t, zk.Addr(), "pdf-"+strconv.FormatBool(on), cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{srv.URL + "/"})
			c.runWorkers(1, 60*time.Second)

			logged := map[string]storage.LogEntry{}
			for _, e := range c.logs() {
				logged[strings.TrimPrefix(e.URL, srv.URL)] = e
			}
			for _, p := range []string{"/doc.pdf", "/bad.pdf"} {
				if e := logged[p]; e.Status != 200 || e.MIME != "application/pdf" {
					t.Errorf("%s logged %+v; want 200 application/pdf", p, e)
				}
			}
			e, ok := logged["/from-pdf.html"]
			switch {
			case on && (!ok || e.Status != 200 || e.Hops != "LL" || e.Depth != 2 || e.Via != srv.URL+"/doc.pdf"):
				t.Errorf("/from-pdf.html logged %+v (ok %v); want 200, hops LL, depth 2, via /doc.pdf", e, ok)
			case !on && (ok || hit("/from-pdf.html") != 0):
				t.Errorf("/from-pdf.html fetched with extract_pdf_links off")
			}
			if hit("/never.html") != 0 {
				t.Error("/never.html, named only by a broken PDF, was fetched")
			}
		})
	}
}
