package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// testPDF returns a PDF of pages pages whose first page links each of
// targets (a link annotation with a URI action per target) and repeats
// the first one on every other page.
func testPDF(t testing.TB, pages int, targets ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 12)
	for p := 0; p < pages; p++ {
		f.AddPage()
		f.Write(6, fmt.Sprintf("Page %d of a test document with some text. ", p+1))
		if p == 0 {
			for i, tg := range targets {
				f.LinkString(10, 20+float64(i)*8, 40, 6, tg)
			}
			f.WriteLinkString(6, "a written link", targets[0])
		} else {
			f.LinkString(10, 20, 40, 6, targets[0])
		}
	}
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestExtractPDFLinks(t *testing.T) {
	base, _ := url.Parse("https://example.org/docs/report.pdf")
	pdf := testPDF(t, 2,
		"https://example.org/a.html",
		"http://other.example.net/b?x=1#frag",
		"../up/c.html",
		"mailto:someone@example.org",
		"https://example.org/a.html",
	)
	got, err := ExtractPDFLinks(context.Background(), base, pdf, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"https://example.org/a.html",
		"http://other.example.net/b?x=1",
		"https://example.org/up/c.html",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("links %q, want %q", got, want)
	}
	if got, _ := ExtractPDFLinks(context.Background(), base, pdf, 2); len(got) != 2 {
		t.Fatalf("maxLinks 2 gave %d links", len(got))
	}
}

// TestExtractPDFLinksHostile: bodies that claim to be PDF but are not, or
// are cut short or corrupted, give no links and no panic. A PDF cut only
// in its trailer is repaired by relaxed validation and may keep its
// links: that case only must not panic.
func TestExtractPDFLinksHostile(t *testing.T) {
	base, _ := url.Parse("https://example.org/x.pdf")
	good := testPDF(t, 3, "https://example.org/a.html")
	corrupt := bytes.Clone(good)
	for i := len(corrupt) / 3; i < len(corrupt); i += 97 {
		corrupt[i] ^= 0x5a
	}
	cases := []struct {
		name      string
		body      []byte
		mayRepair bool
	}{
		{"empty", nil, false},
		{"garbage", []byte("<html><body>not a pdf</body></html>"), false},
		{"header only", []byte("%PDF-1.7\n"), false},
		{"no xref", append([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n"), bytes.Repeat([]byte{0xff}, 1000)...), false},
		{"zero bytes", make([]byte, 1<<16), false},
		{"truncated to a quarter", good[:len(good)/4], false},
		{"truncated to a half", good[:len(good)/2], false},
		{"corrupted", corrupt, false},
		{"trailer cut", good[:len(good)-40], true},
	}
	for _, c := range cases {
		links, err := ExtractPDFLinks(context.Background(), base, c.body, 0)
		t.Logf("%s: %d links, error %v", c.name, len(links), err)
		if !c.mayRepair && len(links) != 0 {
			t.Errorf("%s: links %q from a broken PDF", c.name, links)
		}
	}
	if _, err := ExtractPDFLinks(context.Background(), base, make([]byte, MaxPDFParseBytes+1), 0); !errors.Is(err, ErrPDFTooLarge) {
		t.Errorf("over-size body: error %v, want ErrPDFTooLarge", err)
	}
}

// A panic inside the parser is recovered: an ErrPDFPanic error, no links.
func TestExtractPDFLinksPanic(t *testing.T) {
	base, _ := url.Parse("https://example.org/x.pdf")
	pdf := testPDF(t, 1, "https://example.org/a.html")
	defer func(f func(context.Context, io.ReadSeeker, *model.Configuration) (*model.Context, error)) {
		readPDF = f
	}(readPDF)
	readPDF = func(context.Context, io.ReadSeeker, *model.Configuration) (*model.Context, error) {
		var m map[string]int
		m["boom"] = 1 // a nil map write, as a parser bug would
		return nil, nil
	}
	links, err := ExtractPDFLinks(context.Background(), base, pdf, 0)
	if !errors.Is(err, ErrPDFPanic) || links != nil {
		t.Fatalf("links %q, error %v; want none and ErrPDFPanic", links, err)
	}
}

// Workers parse PDFs concurrently: pdfcpu must hold no shared mutable
// state (run with -race).
func TestExtractPDFLinksConcurrent(t *testing.T) {
	base, _ := url.Parse("https://example.org/x.pdf")
	pdf := testPDF(t, 2, "https://example.org/a.html", "/b.html")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if links, err := ExtractPDFLinks(context.Background(), base, pdf, 0); err != nil || len(links) != 2 {
					t.Errorf("links %q, error %v", links, err)
				}
			}
		})
	}
	wg.Wait()
}

// FuzzExtractPDFLinks: no input makes ExtractPDFLinks panic (a parser
// panic must come back as ErrPDFPanic) or return a non-http(s) URL.
func FuzzExtractPDFLinks(f *testing.F) {
	f.Add(testPDF(f, 1, "https://example.org/a.html", "/b.html"))
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Subtype /Link /A << /S /URI /URI (x.html) >> >> endobj\n"))
	base, _ := url.Parse("https://example.org/x.pdf")
	f.Fuzz(func(t *testing.T, pdf []byte) {
		links, err := ExtractPDFLinks(context.Background(), base, pdf, 0)
		if errors.Is(err, ErrPDFPanic) {
			t.Logf("recovered: %v", err)
		}
		for _, l := range links {
			if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
				t.Errorf("link %q", l)
			}
		}
	})
}

// BenchmarkExtractPDFLinks measures the parse of a typical small PDF
// (three pages of text, six link annotations) and of a 100-page one.
func BenchmarkExtractPDFLinks(b *testing.B) {
	base, _ := url.Parse("https://example.org/x.pdf")
	for _, pages := range []int{3, 100} {
		pdf := testPDF(b, pages, "https://example.org/a.html", "https://example.org/b.html", "/c.html", "d.html")
		b.Run(fmt.Sprintf("pages=%d,bytes=%d", pages, len(pdf)), func(b *testing.B) {
			b.SetBytes(int64(len(pdf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ExtractPDFLinks(context.Background(), base, pdf, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
