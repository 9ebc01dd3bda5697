package storage

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// cdxjEntry is what the CDXJ line of one response or revisit record needs
// besides its place in the file, computed from the exchange outside the
// writer's lock. The line is the one `warcio cdx-index FILE` (warcio.js
// 2.4.11, CDXIndexer in src/lib/indexer.ts, default fields and cdxj
// format) writes for the record:
//
//	urlkey timestamp {"url":..,"mime":..,"status":..,"digest":..,"length":..,"offset":..,"filename":..}
//
// warcio.js indexes response, revisit, resource and metadata records
// (not warcinfo, not request: a request only lends its method to the
// response of the same URL that it precedes or follows). The writer
// writes warcinfo, request, response, revisit and resource records, so
// its index holds one line per exchange and one per resource
// (resourceCDXJ). warcio.js turns the URL of a non-GET
// exchange into a query with "__wb_method" and the request body; the
// fetcher sends GET only, and the index follows warcio.js for GET.
type cdxjEntry struct {
	key     string // surtKey(WARC-Target-URI)
	ts      string // WARC-Date, digits only, first 14 ("yyyyMMddHHmmss")
	url     string // WARC-Target-URI (latin1IfWide)
	mime    string // Content-Type before ';', trimmed; only when hasMime
	hasMime bool
	status  string // Number(second word of the status line), as a string
	// noStatus leaves "status" out: a record without an HTTP block (a
	// server-not-modified revisit), which warcio.js indexes without one.
	noStatus bool
	digest   string // WARC-Payload-Digest after "sha1:"; only when hasDigest
	// hasDigest: the record has a WARC-Payload-Digest holding a colon
	// (warcio.js leaves "digest" out otherwise, e.g. for a
	// server-not-modified revisit, which has none).
	hasDigest bool
}

// newCDXJEntry returns the entry of the exchange whose response record has
// WARC-Target-URI target, WARC-Date date (formatDate), HTTP status line and
// headers httpHeader and WARC-Payload-Digest payloadDigest.
func newCDXJEntry(target, date string, httpHeader []byte, payloadDigest string) cdxjEntry {
	// warcio.js reads WARC-Target-URI through Headers, which re-reads a
	// value holding a character above U+00FF as its UTF-8 bytes.
	target = latin1IfWide(target)
	e := cdxjEntry{key: surtKey(target), url: target}
	ts := strings.Map(func(r rune) rune {
		if r == '-' || r == ':' || r == 'T' {
			return -1
		}
		return r
	}, date)
	if len(ts) > 14 {
		ts = ts[:14]
	}
	e.ts = ts
	e.status, e.mime, e.hasMime = httpStatusAndMime(httpHeader)
	// JavaScript value.split(":", 2)[1]: between the first and second colon.
	if _, rest, ok := strings.Cut(payloadDigest, ":"); ok {
		e.digest, _, _ = strings.Cut(rest, ":")
		e.hasDigest = true
	}
	return e
}

// line returns the CDXJ line (without its newline) of the entry for a
// record of the given type (TypeResponse or TypeRevisit: mime is then
// "warc/revisit"), at offset with compressed length bytes in WARC file
// filename (its final base name), formatted as warcio.js's JSON.stringify.
func (e *cdxjEntry) line(recordType string, offset, length int64, filename string) string {
	var b strings.Builder
	b.Grow(len(e.key) + len(e.url) + len(filename) + 160)
	b.WriteString(e.key)
	b.WriteByte(' ')
	b.WriteString(e.ts)
	b.WriteString(` {"url":`)
	writeJSString(&b, e.url)
	switch {
	case recordType == TypeRevisit:
		b.WriteString(`,"mime":"warc/revisit"`)
	case e.hasMime:
		b.WriteString(`,"mime":`)
		writeJSString(&b, e.mime)
	}
	if !e.noStatus {
		b.WriteString(`,"status":`)
		writeJSString(&b, e.status)
	}
	if e.hasDigest {
		b.WriteString(`,"digest":`)
		writeJSString(&b, e.digest)
	}
	b.WriteString(`,"length":"` + strconv.FormatInt(length, 10))
	b.WriteString(`","offset":"` + strconv.FormatInt(offset, 10))
	b.WriteString(`","filename":`)
	writeJSString(&b, filename)
	b.WriteByte('}')
	return b.String()
}

// httpStatusAndMime reads an HTTP response header block (status line,
// fields, blank line) as warcio.js's StatusAndHeadersParser and Headers do:
// the status is Number() of the second space-separated word of the status
// line (a missing word gives ""); the mime is the Content-Type value (all
// Content-Type fields joined by ", ", as Headers.get) cut at the first ';'
// and trimmed, absent (ok false) when no Content-Type field has a
// non-empty value. Field lines are split at LF and trimmed as JavaScript
// trim(); a line starting with space or tab continues the previous value;
// a field whose name holds a character outside the HTTP token set, or whose
// value holds NUL, CR or LF, is dropped (Headers.append throws); a value
// with a character above U+00FF is re-read as its UTF-8 bytes, one
// character each (warcio.js's latin-1 re-encoding).
func httpStatusAndMime(hdr []byte) (status, mime string, ok bool) {
	first, rest, _ := bytes.Cut(hdr, []byte("\n"))
	statusLine := jsTrimEnd(string(first))
	words := strings.Split(statusLine, " ")
	if len(words) > 1 {
		status = jsNumber(words[1])
	}
	var values []string
	var name, value string
	flush := func() {
		if value != "" && strings.EqualFold(name, "content-type") && headerValueOK(value) {
			values = append(values, latin1IfWide(value))
		}
	}
	for _, l := range strings.Split(string(rest), "\n") {
		if value != "" && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			value += jsTrimEnd(l)
			continue
		}
		flush()
		value = ""
		if n, v, found := strings.Cut(l, ":"); found {
			name, value = jsTrimStart(n), jsTrim(v)
		}
	}
	flush()
	if len(values) == 0 {
		return status, "", false
	}
	ct := strings.Join(values, ", ")
	ct, _, _ = strings.Cut(ct, ";")
	return status, jsTrim(ct), true
}

// headerValueOK reports whether the Fetch standard's Headers accepts v as
// a header value (no NUL, CR or LF; surrounding whitespace is already
// trimmed).
func headerValueOK(v string) bool { return !strings.ContainsAny(v, "\x00\r\n") }

// latin1IfWide returns v (decodeUTF8) unchanged when every character is
// at most U+00FF, else its UTF-8 bytes as characters U+0000..U+00FF
// (warcio.js's UTFToLatin1, applied when Headers.append rejects the value).
func latin1IfWide(v string) string {
	v = decodeUTF8(v)
	wide := false
	for _, r := range v {
		if r > 0xFF {
			wide = true
			break
		}
	}
	if !wide {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		b.WriteRune(rune(v[i]))
	}
	return b.String()
}

// jsNumber returns String(Number(s)) for the decimal integers a status line
// holds: "" and blanks give "0", digits give the integer without leading
// zeros; anything else gives "NaN" (JavaScript also reads hex, exponents
// and fractions there; no HTTP status is written so).
func jsNumber(s string) string {
	s = jsTrim(s)
	if s == "" {
		return "0"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "NaN"
		}
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0"
	}
	return s
}

// isJSSpace reports whether r is JavaScript WhiteSpace or LineTerminator
// (ECMA-262 sections 12.2 and 12.3), what String.prototype.trim removes.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func jsTrim(s string) string      { return strings.TrimFunc(s, isJSSpace) }
func jsTrimStart(s string) string { return strings.TrimLeftFunc(s, isJSSpace) }
func jsTrimEnd(s string) string   { return strings.TrimRightFunc(s, isJSSpace) }

// writeJSString writes s as a JSON string exactly as JavaScript's
// JSON.stringify does (ECMA-262 QuoteJSONString): '"' and '\' escaped,
// \b \f \n \r \t, other characters below U+0020 as \u00xx (lowercase hex),
// everything else as it is (no HTML escaping, unlike encoding/json).
// Invalid UTF-8 is written as U+FFFD, as TextDecoder reads it.
func writeJSString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
	}
	if plain {
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xF])
			} else if r == utf8.RuneError {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// decodeUTF8 returns s with each invalid UTF-8 byte replaced by U+FFFD, as
// TextDecoder("utf-8") reads warcio.js's header bytes (TextDecoder replaces
// a truncated multi-byte sequence by one U+FFFD where this writes one per
// byte; the fetcher's URLs are ASCII).
func decodeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // an invalid byte ranges as utf8.RuneError
	}
	return b.String()
}
