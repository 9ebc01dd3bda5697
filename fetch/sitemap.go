package fetch

// Sitemaps (sitemap protocol 0.9, https://www.sitemaps.org/protocol.html).
// Written by hand over encoding/xml: the Go sitemap parsers the module
// proxy serves to this project were none (oxffaa/gopher-parse-sitemap,
// aafeher/go-sitemap-parser and yterajima/go-sitemap are refused), and the
// maintained one (aafeher/go-sitemap-parser) fetches URLs with its own HTTP
// client, which would bypass the SSRF guard, politeness and the WARC files.
// The format is small: a streaming decoder keeps memory flat on a 50 MiB
// file.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Sitemap protocol limits (sitemaps.org, "Sitemap file location" and
// "Using Sitemap index files").
const (
	// MaxSitemapURLs is the number of <url> (or <sitemap>) entries a file may
	// hold; ParseSitemap ignores any further ones.
	MaxSitemapURLs = 50_000
	// MaxSitemapBytes is the largest uncompressed sitemap file: 50 MiB.
	MaxSitemapBytes = 50 << 20
)

// MaxLastmodBytes is the longest <lastmod> kept (a W3C Datetime with
// nanoseconds and an offset has 35 bytes).
const MaxLastmodBytes = 64

// ErrSitemapTooLarge: the sitemap, once decompressed, exceeds
// MaxSitemapBytes; the entries read up to that point are returned with it.
var ErrSitemapTooLarge = errors.New("sitemap exceeds 50 MiB uncompressed")

// SitemapEntry is one <url> of a urlset.
type SitemapEntry struct {
	// Loc is the URL as written (whitespace trimmed, entities decoded).
	Loc string
	// Lastmod is <lastmod> as written (whitespace trimmed) when it is a
	// valid W3C Datetime (ValidLastmod) of at most MaxLastmodBytes; ""
	// when absent or invalid (the entry is kept).
	Lastmod string
	// Priority is <priority> when present and a number in 0.0..1.0.
	Priority *float64
	// Changefreq is <changefreq> (whitespace trimmed, lower-cased) when it
	// is one of the protocol's values (ValidChangefreq); "" when absent or
	// anything else (the entry is kept).
	Changefreq string
}

// Sitemap is what one sitemap file lists.
type Sitemap struct {
	// Index is set for a <sitemapindex>: Sitemaps holds its children.
	Index bool
	// URLs are the <url> entries of a <urlset> (or the lines of a plain
	// text sitemap), at most MaxSitemapURLs.
	URLs []SitemapEntry
	// Sitemaps are the <sitemap><loc> entries of an index, at most
	// MaxSitemapURLs.
	Sitemaps []string
	// Dropped counts entries past MaxSitemapURLs.
	Dropped int
}

// ParseSitemap reads one sitemap file: an XML <urlset> or <sitemapindex>
// (any namespace or none, as found in the wild), or a plain text sitemap
// (one URL per line), gzip-compressed or not (detected by its magic bytes,
// since .xml.gz files are served as application/gzip rather than with
// Content-Encoding). At most MaxSitemapBytes of decompressed data are read:
// past that ErrSitemapTooLarge is returned with the entries read so far.
// Malformed XML gives an error naming the byte offset, with the entries
// before it. Relative or invalid locs are returned as written: the caller
// normalizes and scopes them.
func ParseSitemap(r io.Reader) (Sitemap, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Sitemap{}, fmt.Errorf("sitemap: gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	lr := &limitedReader{r: br, n: MaxSitemapBytes}
	in := bufio.NewReader(lr)
	// XML or text: the first non-blank byte (after a BOM) decides.
	for {
		b, err := in.Peek(1)
		if err != nil {
			return Sitemap{}, nil // empty file
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n' {
			in.ReadByte()
			continue
		}
		if bom, _ := in.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
			in.Discard(3)
			continue
		}
		break
	}
	var sm Sitemap
	var err error
	if b, _ := in.Peek(1); len(b) == 1 && b[0] == '<' {
		err = parseSitemapXML(in, &sm)
	} else {
		err = parseSitemapText(in, &sm)
	}
	if lr.over {
		return sm, fmt.Errorf("sitemap: %w", ErrSitemapTooLarge)
	}
	return sm, err
}

// parseSitemapXML decodes a urlset or sitemapindex with a streaming
// decoder, element by element.
func parseSitemapXML(r io.Reader, sm *Sitemap) error {
	dec := xml.NewDecoder(r)
	dec.Strict = false // sitemaps in the wild have stray & and undeclared entities
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		if l := strings.ToLower(label); l == "utf-8" || l == "us-ascii" || l == "iso-8859-1" || l == "latin1" {
			return in, nil // the protocol requires UTF-8; be lenient about the label
		}
		return nil, fmt.Errorf("encoding %q (sitemaps must be UTF-8)", label)
	}
	rootSeen := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sitemap: XML at byte %d: %w", dec.InputOffset(), err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch strings.ToLower(se.Name.Local) {
		case "urlset", "sitemapindex":
			if !rootSeen {
				rootSeen = true
				sm.Index = strings.EqualFold(se.Name.Local, "sitemapindex")
			}
		case "url":
			var u struct {
				Loc        string `xml:"loc"`
				Lastmod    string `xml:"lastmod"`
				Priority   string `xml:"priority"`
				Changefreq string `xml:"changefreq"`
			}
			if err := dec.DecodeElement(&u, &se); err != nil {
				return fmt.Errorf("sitemap: <url> at byte %d: %w", dec.InputOffset(), err)
			}
			if loc := strings.TrimSpace(u.Loc); loc != "" {
				if len(sm.URLs) >= MaxSitemapURLs {
					sm.Dropped++
					continue
				}
				e := SitemapEntry{Loc: loc}
				if lm := strings.TrimSpace(u.Lastmod); ValidLastmod(lm) {
					e.Lastmod = lm
				}
				if p, err := strconv.ParseFloat(strings.TrimSpace(u.Priority), 64); err == nil && p >= 0 && p <= 1 {
					e.Priority = &p
				}
				if cf := strings.ToLower(strings.TrimSpace(u.Changefreq)); ValidChangefreq(cf) {
					e.Changefreq = cf
				}
				sm.URLs = append(sm.URLs, e)
			}
		case "sitemap":
			var s struct {
				Loc string `xml:"loc"`
			}
			if err := dec.DecodeElement(&s, &se); err != nil {
				return fmt.Errorf("sitemap: <sitemap> at byte %d: %w", dec.InputOffset(), err)
			}
			if loc := strings.TrimSpace(s.Loc); loc != "" {
				if len(sm.Sitemaps) >= MaxSitemapURLs {
					sm.Dropped++
					continue
				}
				sm.Sitemaps = append(sm.Sitemaps, loc)
			}
		}
	}
}

// w3cDatetime is the syntax of a W3C Datetime (https://www.w3.org/TR/NOTE-datetime,
// the format sitemap protocol 0.9 requires of <lastmod>): YYYY, YYYY-MM,
// YYYY-MM-DD, or a date with hh:mm, hh:mm:ss or hh:mm:ss.s (any number of
// fraction digits) and a zone designator Z or +hh:mm / -hh:mm.
var w3cDatetime = regexp.MustCompile(`^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?$`)

// ValidLastmod reports whether s is a W3C Datetime (see w3cDatetime) of at
// most MaxLastmodBytes whose fields are in range (month 01-12, a day of
// that month, hour < 24, minute and second < 60, offset hours < 24), as
// time.Parse checks them. A valid one is ASCII.
func ValidLastmod(s string) bool {
	if len(s) > MaxLastmodBytes || !w3cDatetime.MatchString(s) {
		return false
	}
	var layout string
	switch {
	case len(s) == 4:
		layout = "2006"
	case len(s) == 7:
		layout = "2006-01"
	case len(s) == 10:
		layout = "2006-01-02"
	case s[16] != ':': // hh:mm without seconds
		layout = "2006-01-02T15:04Z07:00"
	default: // time.Parse takes the fraction after the seconds itself
		layout = "2006-01-02T15:04:05Z07:00"
	}
	_, err := time.Parse(layout, s)
	return err == nil
}

// ValidChangefreq reports whether s is one of the <changefreq> values of
// sitemap protocol 0.9: always, hourly, daily, weekly, monthly, yearly,
// never (lower case, as the protocol writes them).
func ValidChangefreq(s string) bool {
	switch s {
	case "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
		return true
	}
	return false
}

// parseSitemapText reads a text sitemap: one URL per line, blank lines
// skipped (sitemaps.org, "Text file").
func parseSitemapText(r io.Reader, sm *Sitemap) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if len(sm.URLs) >= MaxSitemapURLs {
			sm.Dropped++
			continue
		}
		sm.URLs = append(sm.URLs, SitemapEntry{Loc: line})
	}
	if err := sc.Err(); err != nil && !errors.Is(err, errOverLimit) {
		return fmt.Errorf("sitemap: text: %w", err)
	}
	return nil
}

var errOverLimit = errors.New("over limit")

// limitedReader reads at most n bytes and remembers whether there were more.
type limitedReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		if k, _ := l.r.Read(one[:]); k > 0 {
			l.over = true
			return 0, errOverLimit
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
