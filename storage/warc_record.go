package storage

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Exchange is one HTTP request/response pair as captured by the fetcher, to
// be written as a WARC request record and a WARC response record.
type Exchange struct {
	// TargetURI is the requested URL (WARC-Target-URI, WARC 1.1 section
	// 5.11). Required; must not contain whitespace or control characters.
	TargetURI string
	// IP is the server's IP address (WARC-IP-Address, section 5.12);
	// optional, but must parse as an IPv4 or IPv6 address when set.
	IP string
	// Date is when the request started (WARC-Date, section 5.4); zero means
	// now.
	Date time.Time
	// RawRequest is the request as sent: request line, headers, blank line
	// and body if any. When it holds no CRLF CRLF, trailing CR/LF are
	// trimmed and CRLF CRLF appended. Required.
	RawRequest []byte
	// RawResponseHeader is the status line and headers as received, with or
	// without the final CRLF CRLF (normalized to end in exactly one). It must
	// start with "HTTP/" and hold no blank line before its end. It must
	// describe Body as stored: if the fetcher removed a chunked
	// Transfer-Encoding, it should drop that header too.
	RawResponseHeader []byte
	// RawResponse, when set, is the whole response exactly as it crossed
	// the wire (status line, header, body with its transfer coding, e.g.
	// chunked framing): it becomes the response record's block byte for
	// byte, and RawResponseHeader is then only used for a revisit record
	// (it must be RawResponse's header block). It must start with "HTTP/"
	// and hold the end of its header block.
	RawResponse []byte
	// Body is the entity body as transferred (Content-Encoding kept,
	// transfer coding removed), cut at the fetcher's size limit when
	// Truncated. Its digest is the WARC-Payload-Digest (WARC 1.1 section
	// 5.9: the payload is the entity body).
	Body []byte
	// Truncated reports that Body was cut at the size limit; the response
	// record then carries "WARC-Truncated: length" (section 5.13).
	Truncated bool
	// RevisitOf, when set, names the earlier capture this exchange
	// revisits: WriteExchange then writes a revisit record of its profile
	// (block = the HTTP response header only; empty for
	// ProfileNotModified) in place of the response.
	// The caller vouches for the profile's condition: a 304 answer to a
	// conditional request for ProfileNotModified, a payload whose digest
	// equals the earlier capture's for RevisitProfile. Ignored when
	// Truncated (a cut payload is not the earlier one).
	RevisitOf *RevisitRef
	// PayloadDigest, when set, is Digest(Body) computed by the caller (who
	// needed it first, e.g. to look the payload up): prepare uses it
	// instead of hashing Body again. "" means compute it.
	PayloadDigest string
	// Protocols, when set, are the protocols of the exchange, outermost
	// last, each written as a WARC-Protocol field of the request,
	// response and revisit records (warc_protocol.go): "h2" then
	// "tls/1.3" for HTTP/2 over TLS 1.3, whose RawRequest and
	// RawResponseHeader are then the HTTP/1.1 form of the exchange. At
	// most 8 tokens of 1..64 printable ASCII characters.
	Protocols []string
	// CipherSuite, when set, is the TLS cipher suite's IANA name, written
	// as WARC-Cipher-Suite beside the WARC-Protocol fields.
	CipherSuite string
}

// PayloadDigestOf returns ex.PayloadDigest, computing and storing it first
// when it is empty: one SHA-1 of the payload per exchange, whoever asks.
func (ex *Exchange) PayloadDigestOf() string {
	if ex.PayloadDigest == "" {
		ex.PayloadDigest = Digest(ex.Body)
	}
	return ex.PayloadDigest
}

// RevisitRef names the capture a revisit record refers to (WARC 1.1 section
// 6.7): WARC-Refers-To-Target-URI, WARC-Refers-To-Date and, when known,
// WARC-Refers-To.
type RevisitRef struct {
	// Profile is the revisit's WARC-Profile: RevisitProfile or
	// ProfileNotModified.
	Profile string
	// TargetURI is the earlier capture's WARC-Target-URI. Required.
	TargetURI string
	// Date is the earlier capture's WARC-Date. Required.
	Date time.Time
	// RecordID is the earlier response record's WARC-Record-ID
	// ("<urn:uuid:...>"); "" when unknown (the field is then left out).
	RecordID string
}

// field is one WARC named field.
type field struct{ name, value string }

// record is a WARC record ready to be serialized.
type record struct {
	fields []field
	block  [][]byte // concatenated to form the record block
}

func (r *record) add(name, value string) { r.fields = append(r.fields, field{name, value}) }

// set replaces the value of the first field called name.
func (r *record) set(name, value string) {
	for i := range r.fields {
		if r.fields[i].name == name {
			r.fields[i].value = value
			return
		}
	}
}

func (r *record) blockLen() int64 {
	var n int64
	for _, b := range r.block {
		n += int64(len(b))
	}
	return n
}

// writeTo serializes the record: version line, named fields,
// Content-Length, blank line, block, CRLF CRLF (WARC 1.1 section 4).
func (r *record) writeTo(w io.Writer) error {
	var h bytes.Buffer
	h.WriteString(WARCVersion + "\r\n")
	for _, f := range r.fields {
		h.WriteString(f.name)
		h.WriteString(": ")
		h.WriteString(f.value)
		h.WriteString("\r\n")
	}
	h.WriteString("Content-Length: " + strconv.FormatInt(r.blockLen(), 10) + "\r\n\r\n")
	if _, err := w.Write(h.Bytes()); err != nil {
		return err
	}
	for _, b := range r.block {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "\r\n\r\n")
	return err
}

// newRecordID returns a WARC-Record-ID (WARC 1.1 section 5.2): a random
// UUID URN in angle brackets.
func newRecordID() string { return "<urn:uuid:" + uuid.NewString() + ">" }

// blockDigest is the WARC-Block-Digest of a block given in parts.
func blockDigest(parts ...[]byte) string {
	h := sha1.New()
	for _, b := range parts {
		h.Write(b) // hash.Hash.Write never fails
	}
	return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil))
}

// prepared is an Exchange validated and normalized into its two records.
type prepared struct {
	req, resp     *record
	respID        string
	payloadDigest string
	// for a revisit record in place of resp
	target, date, ip, reqID string
	httpHeader              []byte
	truncated               bool
	proto                   []field   // WARC-Protocol and WARC-Cipher-Suite fields
	cdx                     cdxjEntry // the response's CDXJ index line, less its place
}

// RevisitProfile is the WARC-Profile of the revisit records the writer
// writes (WARC 1.1 section 6.7.2: the payload is identical to that of the
// record named by WARC-Refers-To).
const RevisitProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

// ProfileNotModified is the WARC-Profile of a revisit record for a 304 Not
// Modified answer to a conditional request (WARC 1.1 section 6.7.3): the
// server said the resource is unchanged since the capture referred to.
const ProfileNotModified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

// toRevisit replaces the response record by a revisit record (WARC 1.1
// section 6.7) that refers to the earlier response ref of the same URL and
// payload: its block is the HTTP response header only (status line and
// fields), its WARC-Payload-Digest that of the identical payload. The
// record keeps the response's record ID, so the request still points at it.
func (p *prepared) toRevisit(ref revisitRef) {
	p.toRevisitOf(RevisitRef{Profile: RevisitProfile, TargetURI: p.target, RecordID: ref.recordID}, ref.date)
}

// toRevisitOf replaces the response record by a revisit record of
// ref.Profile referring to ref (WARC 1.1 section 6.7), whose WARC-Date is
// date (WARC-Date form). A server-not-modified revisit has an empty block
// and no WARC-Payload-Digest (a 304 has no payload): replay engines (pywb,
// wabac.js) serve a revisit with its own HTTP headers when it has some,
// which for a 304 would serve the 304; without, the original's.
func (p *prepared) toRevisitOf(ref RevisitRef, date string) {
	block := p.httpHeader
	if ref.Profile == ProfileNotModified {
		block = nil
	}
	r := &record{block: [][]byte{block}}
	r.add("WARC-Type", TypeRevisit)
	r.add("WARC-Record-ID", p.respID)
	r.add("WARC-Date", p.date)
	r.add("WARC-Target-URI", p.target)
	if p.ip != "" {
		r.add("WARC-IP-Address", p.ip)
	}
	r.fields = append(r.fields, p.proto...)
	r.add("WARC-Concurrent-To", p.reqID)
	r.add("WARC-Warcinfo-ID", "")
	r.add("WARC-Profile", ref.Profile)
	if ref.RecordID != "" {
		r.add("WARC-Refers-To", ref.RecordID)
	}
	r.add("WARC-Refers-To-Target-URI", ref.TargetURI)
	r.add("WARC-Refers-To-Date", date)
	if block != nil {
		r.add("Content-Type", "application/http;msgtype=response")
	}
	r.add("WARC-Block-Digest", blockDigest(block))
	if ref.Profile != ProfileNotModified {
		r.add("WARC-Payload-Digest", p.payloadDigest)
	} else {
		p.cdx.digest, p.cdx.hasDigest = "", false // indexed without one, as warcio.js does
		p.cdx.noStatus = true                     // nor a status: the block holds no HTTP header
	}
	p.resp = r
}

var crlf2 = []byte("\r\n\r\n")

// prepare validates ex and builds its request and response records, linked
// by WARC-Concurrent-To (WARC 1.1 section 5.7). Their WARC-Warcinfo-ID is
// left empty for setWarcinfo.
func prepare(ex Exchange) (*prepared, error) {
	if ex.TargetURI == "" {
		return nil, fmt.Errorf("%w: empty target URI", ErrBadExchange)
	}
	if strings.IndexFunc(ex.TargetURI, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return nil, fmt.Errorf("%w: target URI %q holds whitespace or control characters", ErrBadExchange, ex.TargetURI)
	}
	if ex.IP != "" && net.ParseIP(ex.IP) == nil {
		return nil, fmt.Errorf("%w: %s: IP address %q does not parse", ErrBadExchange, ex.TargetURI, ex.IP)
	}
	if len(ex.RawRequest) == 0 {
		return nil, fmt.Errorf("%w: %s: empty raw request", ErrBadExchange, ex.TargetURI)
	}
	if ref := ex.RevisitOf; ref != nil {
		switch {
		case ref.Profile != RevisitProfile && ref.Profile != ProfileNotModified:
			return nil, fmt.Errorf("%w: %s: revisit profile %q: want %q or %q", ErrBadExchange, ex.TargetURI, ref.Profile, RevisitProfile, ProfileNotModified)
		case ref.TargetURI == "" || ref.Date.IsZero():
			return nil, fmt.Errorf("%w: %s: revisit of an earlier capture without its target URI and date", ErrBadExchange, ex.TargetURI)
		}
	}
	proto, err := protocolFields(&ex)
	if err != nil {
		return nil, err
	}
	reqBlock := ex.RawRequest
	if !bytes.Contains(reqBlock, crlf2) {
		reqBlock = append(bytes.TrimRight(reqBlock, "\r\n"), crlf2...)
	}
	hdr := bytes.TrimRight(ex.RawResponseHeader, "\r\n")
	if !bytes.HasPrefix(hdr, []byte("HTTP/")) {
		return nil, fmt.Errorf("%w: %s: raw response header does not start with a status line (\"HTTP/\")", ErrBadExchange, ex.TargetURI)
	}
	if bytes.Contains(hdr, crlf2) || bytes.Contains(hdr, []byte("\n\n")) {
		return nil, fmt.Errorf("%w: %s: raw response header holds a blank line (pass the body in Body)", ErrBadExchange, ex.TargetURI)
	}
	hdr = append(hdr[:len(hdr):len(hdr)], crlf2...)
	respBlock := [][]byte{hdr, ex.Body}
	if len(ex.RawResponse) > 0 {
		if !bytes.HasPrefix(ex.RawResponse, []byte("HTTP/")) {
			return nil, fmt.Errorf("%w: %s: raw response does not start with a status line (\"HTTP/\")", ErrBadExchange, ex.TargetURI)
		}
		if !bytes.Contains(ex.RawResponse, crlf2) && !bytes.Contains(ex.RawResponse, []byte("\n\n")) {
			return nil, fmt.Errorf("%w: %s: raw response holds no end of header (CRLF CRLF)", ErrBadExchange, ex.TargetURI)
		}
		respBlock = [][]byte{ex.RawResponse}
	}

	date := ex.Date
	if date.IsZero() {
		date = time.Now()
	}
	reqID, respID := newRecordID(), newRecordID()
	p := &prepared{respID: respID, payloadDigest: ex.PayloadDigestOf(), target: ex.TargetURI,
		date: formatDate(date), ip: ex.IP, reqID: reqID, httpHeader: hdr, truncated: ex.Truncated, proto: proto}

	p.cdx = newCDXJEntry(ex.TargetURI, p.date, hdr, p.payloadDigest)

	p.req = &record{block: [][]byte{reqBlock}}
	p.req.add("WARC-Type", TypeRequest)
	p.req.add("WARC-Record-ID", reqID)
	p.req.add("WARC-Date", formatDate(date))
	p.req.add("WARC-Target-URI", ex.TargetURI)
	if ex.IP != "" {
		p.req.add("WARC-IP-Address", ex.IP)
	}
	p.req.fields = append(p.req.fields, proto...)
	p.req.add("WARC-Concurrent-To", respID)
	p.req.add("WARC-Warcinfo-ID", "")
	p.req.add("Content-Type", "application/http;msgtype=request")
	p.req.add("WARC-Block-Digest", blockDigest(reqBlock))

	p.resp = &record{block: respBlock}
	p.resp.add("WARC-Type", TypeResponse)
	p.resp.add("WARC-Record-ID", respID)
	p.resp.add("WARC-Date", formatDate(date))
	p.resp.add("WARC-Target-URI", ex.TargetURI)
	if ex.IP != "" {
		p.resp.add("WARC-IP-Address", ex.IP)
	}
	p.resp.fields = append(p.resp.fields, proto...)
	p.resp.add("WARC-Concurrent-To", reqID)
	p.resp.add("WARC-Warcinfo-ID", "")
	p.resp.add("Content-Type", "application/http;msgtype=response")
	p.resp.add("WARC-Block-Digest", blockDigest(respBlock...))
	p.resp.add("WARC-Payload-Digest", p.payloadDigest)
	if ex.Truncated {
		p.resp.add("WARC-Truncated", "length")
	}
	return p, nil
}

// setWarcinfo points both records at the warcinfo record of their file
// (WARC-Warcinfo-ID, WARC 1.1 section 5.10).
func (p *prepared) setWarcinfo(id string) {
	p.req.set("WARC-Warcinfo-ID", id)
	p.resp.set("WARC-Warcinfo-ID", id)
}

// warcinfoRecord builds the warcinfo record opening a file (WARC 1.1
// section 6.2), its block in application/warc-fields format (annex B).
func warcinfoRecord(id, filename string, date time.Time, o *WriterOptions) *record {
	var b bytes.Buffer
	put := func(k, v string) {
		if v == "" {
			return
		}
		v = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, v)
		b.WriteString(k + ": " + v + "\r\n")
	}
	put("software", "zkcrawl/"+o.Version)
	put("format", FormatName)
	put("conformsTo", ConformsTo)
	put("hostname", o.Hostname)
	put("operator", o.Operator)
	put("isPartOf", o.IsPartOf)
	put("description", o.Description)
	put("robots", o.Robots)
	put("http-header-user-agent", o.UserAgent)
	r := &record{block: [][]byte{b.Bytes()}}
	r.add("WARC-Type", TypeWarcinfo)
	r.add("WARC-Record-ID", id)
	r.add("WARC-Date", formatDate(date))
	r.add("WARC-Filename", filename)
	r.add("Content-Type", "application/warc-fields")
	r.add("WARC-Block-Digest", blockDigest(b.Bytes()))
	return r
}
