package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultMaxDecodedBytes is the cap DecodedBody applies when called with a
// limit <= 0: 32 MiB of decoded content.
const DefaultMaxDecodedBytes int64 = 32 << 20

// Sentinel errors of Result.DecodedBody.
var (
	// ErrDecodedTooLarge: the decoded body is longer than the limit (a gzip
	// bomb, or just a big page); the first limit bytes are returned with it.
	ErrDecodedTooLarge = errors.New("decoded body exceeds limit")
	// ErrUnsupportedEncoding: the Content-Encoding is not gzip, x-gzip,
	// deflate or identity.
	ErrUnsupportedEncoding = errors.New("unsupported Content-Encoding")
)

// Result is one HTTP response as fetched by Fetcher.Fetch: what a WARC 1.1
// request and response record pair and a crawl log line need.
type Result struct {
	// URL is the URL fetched, exactly as passed to Fetch.
	URL string
	// Status is the HTTP status code (200, 301, 404, ...).
	Status int
	// Header is the response header as parsed by net/http (canonical keys;
	// Transfer-Encoding removed). For the bytes as received see RawResponse.
	Header http.Header
	// RawRequest is the HTTP/1.1 request exactly as written to the
	// connection (request line, header fields, empty line; a GET has no
	// body), copied off the connection (wire.go); over HTTP/2 its
	// HTTP/1.1 form (Protocol, h2.go).
	RawRequest []byte
	// RawResponse is the response exactly as read from the connection:
	// status line, header fields in their order and case, empty line, and
	// the body with its transfer coding (chunked framing, trailers) and
	// content coding as sent; interim 1xx responses are dropped. It is what
	// a WARC response record's block holds. A body without transfer coding
	// ends with the last stored Body byte (so a Truncated body gives a
	// truncated RawResponse, and bytes past Content-Length are dropped); a
	// chunked one ends where reading stopped. nil when the copy
	// was not complete (it holds at most MaxBodyBytes + 1.25 MiB), and
	// over HTTP/2 (no HTTP/1.1 bytes cross the connection); then
	// RawResponseHeader is rebuilt and RawResponseHeader + Body stand in.
	RawResponse []byte
	// RawResponseHeader is the status line and header fields ending with
	// the empty line: the head of RawResponse when there is one. Otherwise
	// it is rebuilt from the parsed response (fields sorted by name in
	// canonical case, no Transfer-Encoding, since Body holds de-chunked
	// bytes; over HTTP/2 "HTTP/1.1" and lower-case names, h2ResponseHeader),
	// so that RawResponseHeader + Body is a self-consistent HTTP/1.1
	// response.
	RawResponseHeader []byte
	// Body is the entity body as transferred, with the transfer coding
	// (chunked) removed: still gzip-compressed if the response has
	// Content-Encoding: gzip. It is the WARC payload (WARC 1.1 section
	// 5.9). At most Options.MaxBodyBytes long, or the cap of the
	// Options.Content.BodyCaps rule matching its media type.
	Body []byte
	// ContentType is the Content-Type response header as received ("" if
	// absent).
	ContentType string
	// MIME is the lower-case media type of ContentType ("text/html"), or,
	// when the header is absent, the type sniffed from the first 512 decoded
	// bytes (WHATWG MIME Sniffing, http.DetectContentType).
	MIME string
	// RemoteIP is the IP address of the server actually connected, e.g.
	// "127.0.0.1" or "2001:db8::1".
	RemoteIP string
	// Started is when the request began (before dialling or taking a pooled
	// connection).
	Started time.Time
	// Reached is when the request is taken to have reached the server: on
	// a reused keep-alive connection, when its header block was written
	// (net/http/httptrace WroteHeaders; the server is reading that
	// connection); on a new connection, when the response's first byte
	// came (GotFirstResponseByte: a busy server may accept a connection
	// well after the client wrote to it, so only its answer bounds when it
	// read the request); the zero time if not known. Strict politeness
	// counts a host's interval from it (Politeness.Reached).
	Reached time.Time
	// Answered is when the response's first byte came
	// (GotFirstResponseByte): by then the server has read the request,
	// whatever its own scheduling; the zero time if not known.
	Answered time.Time
	// Duration is the time from Started to the last body byte read.
	Duration time.Duration
	// Truncated is set when the body was longer than its cap
	// (Options.MaxBodyBytes or a matching Options.Content.BodyCaps rule)
	// and reading stopped there: store it (WARC-Truncated: length) but do
	// not treat it as the complete page.
	Truncated bool
	// Redirect is, for a 3xx other than 304 with a Location header, that
	// location resolved to an absolute URL against URL (RFC 9110 section
	// 10.2.2); otherwise "". It is never followed by Fetch.
	Redirect string
	// Conditional reports that the request carried If-None-Match or
	// If-Modified-Since (FetchIf, Conditions): only then is a 304 Not
	// Modified an answer that the resource is unchanged.
	Conditional bool
	// Protocol is the HTTP version the response came in: ProtoHTTP2 ("h2",
	// negotiated by ALPN over TLS; RawRequest and RawResponseHeader are
	// then the HTTP/1.1 form of the exchange and RawResponse is nil, see
	// h2.go), ProtoHTTP11 or ProtoHTTP10. It is a WARC-Protocol value.
	Protocol string
	// TLS is the TLS version of the connection as a WARC-Protocol value
	// ("tls/1.2", "tls/1.3"), "" for plain http.
	TLS string
	// CipherSuite is the TLS cipher suite's IANA name
	// ("TLS_AES_128_GCM_SHA256"), the WARC-Cipher-Suite value; "" for
	// plain http.
	CipherSuite string
}

// DecodedBody returns Body with its Content-Encoding removed (gzip, x-gzip,
// deflate in zlib or raw form, identity; several encodings are undone in
// reverse order, RFC 9110 section 8.4). At most limit decoded bytes are
// produced (limit <= 0 means DefaultMaxDecodedBytes); decoding streams, so a
// gzip bomb costs at most limit bytes of memory. If there would be more, the
// first limit bytes are returned with an error wrapping ErrDecodedTooLarge.
// An unknown encoding gives ErrUnsupportedEncoding; a corrupt or truncated
// stream (see Truncated) gives the bytes decoded so far and the decoder's
// error. With no encoding the result shares Body's memory.
func (r *Result) DecodedBody(limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxDecodedBytes
	}
	var encodings []string
	for _, v := range r.Header.Values("Content-Encoding") {
		for _, e := range strings.Split(v, ",") {
			e = strings.ToLower(strings.TrimSpace(e))
			if e != "" && e != "identity" {
				encodings = append(encodings, e)
			}
		}
	}
	if len(encodings) == 0 {
		if int64(len(r.Body)) > limit {
			return r.Body[:limit], fmt.Errorf("body of %s: %w (%d bytes)", r.URL, ErrDecodedTooLarge, limit)
		}
		return r.Body, nil
	}
	var rd io.Reader = bytes.NewReader(r.Body)
	for i := len(encodings) - 1; i >= 0; i-- {
		var err error
		rd, err = decoder(encodings[i], rd)
		if err != nil {
			return nil, fmt.Errorf("body of %s: Content-Encoding %q: %w", r.URL, encodings[i], err)
		}
	}
	var out bytes.Buffer
	_, err := out.ReadFrom(io.LimitReader(rd, limit+1))
	data := out.Bytes()
	if int64(len(data)) > limit {
		return data[:limit], fmt.Errorf("body of %s: %w (%d bytes)", r.URL, ErrDecodedTooLarge, limit)
	}
	if err != nil {
		return data, fmt.Errorf("body of %s: decoding %v: %w", r.URL, encodings, err)
	}
	return data, nil
}

// decoder wraps rd in a reader that undoes one content coding.
func decoder(encoding string, rd io.Reader) (io.Reader, error) {
	switch encoding {
	case "gzip", "x-gzip":
		return gzip.NewReader(rd)
	case "deflate":
		// RFC 9110 section 8.4.1.2 says zlib (RFC 1950), but some servers
		// send raw deflate (RFC 1951); browsers accept both, so do we.
		br := bufio.NewReader(rd)
		if head, err := br.Peek(2); err == nil && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 && head[0]&0x0f == 8 {
			return zlib.NewReader(br)
		}
		return flate.NewReader(br), nil
	}
	return nil, ErrUnsupportedEncoding
}
