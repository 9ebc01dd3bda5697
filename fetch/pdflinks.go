package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// PDF link extraction limits.
const (
	// MaxPDFParseBytes is the largest PDF body ExtractPDFLinks parses:
	// 16 MiB; a larger one is not parsed (ErrPDFTooLarge).
	MaxPDFParseBytes = 16 << 20
	// DefaultMaxPDFLinks is how many URLs ExtractPDFLinks returns per
	// document at most when called with maxLinks <= 0.
	DefaultMaxPDFLinks = 1000
	// PDFParseTimeout bounds one document's parse; pdfcpu checks the
	// context between objects.
	PDFParseTimeout = 10 * time.Second
)

// Errors of ExtractPDFLinks.
var (
	ErrPDFTooLarge = errors.New("PDF larger than MaxPDFParseBytes")
	ErrPDFPanic    = errors.New("PDF parser panicked")
)

// IsPDF reports whether mediaType (lower case, no parameters) is a PDF
// type: application/pdf (RFC 8118) or the older application/x-pdf.
func IsPDF(mediaType string) bool {
	return mediaType == "application/pdf" || mediaType == "application/x-pdf"
}

// pdfConf is the pdfcpu configuration every parse copies: relaxed
// validation, no config directory on disk, and resource limits scaled to
// a MaxPDFParseBytes body (a 16 MiB file holds no more than about a
// million objects; decoded streams are capped at 64 MiB).
var pdfConf = sync.OnceValue(func() *model.Configuration {
	model.ConfigPath = "disable" // no config.yml written under the user's home
	c := model.NewDefaultConfiguration()
	c.ValidationMode = model.ValidationRelaxed
	c.ValidateLinks = false
	c.Offline = true
	c.DecodeAllStreams = false
	c.Limits.MaxStreamBytes = 64 << 20
	c.Limits.MaxDecodeBytes = 64 << 20
	c.Limits.MaxImageBytes = 64 << 20
	c.Limits.MaxObjectCount = 1 << 20
	c.Limits.MaxObjectStreamCount = 1 << 16
	c.Limits.MaxXRefEntries = 1 << 20
	return c
})

// readPDF is the PDF parser ExtractPDFLinks calls; a test replaces it
// with one that panics.
var readPDF = pdfcpu.ReadWithContext

// ExtractPDFLinks returns the URLs of a PDF's link annotations, as
// Heritrix's ExtractorPDF takes them: the /URI of every annotation of
// /Subtype /Link whose action (/A) is a URI action (/S /URI; ISO 32000-1
// sections 12.5.6.5 and 12.6.4.7), resolved against base, each absolute,
// without fragment, serialized by the WHATWG URL parser, http or https
// only, deduplicated, in object-number order, at most maxLinks of them
// (maxLinks <= 0: DefaultMaxPDFLinks).
//
// The document is parsed by pdfcpu (relaxed validation, limits of
// pdfConf, at most PDFParseTimeout); the annotations are found by walking
// every object of its cross-reference table, and the dictionaries and
// arrays nested in it (walkDicts: annotations are often direct objects
// of a page's /Annots), rather than its page tree, so a damaged page tree
// still yields its links, at a cost linear in the parsed objects. Input from the web is hostile: a body over MaxPDFParseBytes is
// not parsed (ErrPDFTooLarge), a parse error is returned wrapped with the
// reason, and a panic inside pdfcpu is recovered and returned as
// ErrPDFPanic; none of them yields links.
func ExtractPDFLinks(ctx context.Context, base *url.URL, pdf []byte, maxLinks int) (links []string, err error) {
	if maxLinks <= 0 {
		maxLinks = DefaultMaxPDFLinks
	}
	if len(pdf) > MaxPDFParseBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrPDFTooLarge, len(pdf))
	}
	baseURL, err := whatwg.Parse(base.String())
	if err != nil {
		return nil, fmt.Errorf("PDF base URL %q: %w", base, err)
	}
	defer func() {
		if p := recover(); p != nil {
			links, err = nil, fmt.Errorf("%w: %v", ErrPDFPanic, p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, PDFParseTimeout)
	defer cancel()
	conf := *pdfConf()
	pc, err := readPDF(ctx, bytes.NewReader(pdf), &conf)
	if err != nil {
		return nil, fmt.Errorf("PDF not parsed: %w", err)
	}
	xt := pc.XRefTable
	nums := make([]int, 0, len(xt.Table))
	for n, e := range xt.Table {
		if e != nil && !e.Free {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	seen := map[string]bool{}
	keep := func(d types.Dict) bool {
		if u, ok := linkURI(xt, d); ok {
			if abs, ok := resolveLink(baseURL, u); ok && !seen[abs] {
				seen[abs] = true
				links = append(links, abs)
			}
		}
		return len(links) < maxLinks
	}
	for _, n := range nums {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("PDF not parsed: %w", err)
		}
		if !walkDicts(xt.Table[n].Object, maxPDFNesting, keep) {
			break
		}
	}
	return links, nil
}

// maxPDFNesting bounds how deep walkDicts descends into the direct
// objects of one indirect object (an /Annots array in a page dictionary
// holding annotation dictionaries is 2 levels).
const maxPDFNesting = 32

// walkDicts calls visit on every dictionary of o and of the arrays and
// dictionaries directly inside it, down to depth levels (indirect
// references are not followed: each referenced object is walked on its
// own), in array and key order; it stops and returns false as soon as
// visit returns false.
func walkDicts(o types.Object, depth int, visit func(types.Dict) bool) bool {
	if depth <= 0 {
		return true
	}
	switch v := o.(type) {
	case types.Dict:
		if !visit(v) {
			return false
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if !walkDicts(v[k], depth-1, visit) {
				return false
			}
		}
	case types.StreamDict:
		return walkDicts(v.Dict, depth, visit)
	case types.Array:
		for _, e := range v {
			if !walkDicts(e, depth-1, visit) {
				return false
			}
		}
	}
	return true
}

// linkURI returns the /URI of d's URI action when d is a link annotation
// (/Subtype /Link, /A a dictionary or a reference to one, with /S /URI and
// a string /URI).
func linkURI(xt *model.XRefTable, d types.Dict) (string, bool) {
	if st := d.Subtype(); st == nil || *st != "Link" {
		return "", false
	}
	a, ok := d.Find("A")
	if !ok {
		return "", false
	}
	ad, err := xt.DereferenceDict(a)
	if err != nil || ad == nil {
		return "", false
	}
	if s := ad.NameEntry("S"); s == nil || *s != "URI" {
		return "", false
	}
	o, ok := ad.Find("URI")
	if !ok {
		return "", false
	}
	o, err = xt.Dereference(o)
	if err != nil {
		return "", false
	}
	s, err := types.StringOrHexLiteral(o)
	if err != nil || s == nil || *s == "" {
		return "", false
	}
	return *s, true
}
