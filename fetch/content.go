package fetch

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/zkcrawl/zkcrawl/config"
)

// OctetStream is the media type a response without a Content-Type counts
// as for ContentRules: nothing of its body is read before the rules judge
// it, so it cannot be sniffed (RFC 9110 section 8.3: a recipient may
// assume application/octet-stream).
const OctetStream = "application/octet-stream"

// ContentRules are the per-media-type rules of a crawl (config keys
// accept_mime, reject_mime, max_body_bytes_rules; docs/design.md "Content
// rules"), judged on the response header before any body byte is read.
// The zero value has no rules.
type ContentRules struct {
	// Accept, when non-empty, lets through only responses whose media type
	// matches one of its patterns (FetchContent).
	Accept []config.MIMEPattern
	// Reject stops responses whose media type matches any of its patterns;
	// it wins over Accept (FetchContent).
	Reject []config.MIMEPattern
	// BodyCaps: the first cap whose MIME matches a response's media type
	// replaces Options.MaxBodyBytes for it (every fetch but robots.txt's).
	BodyCaps []BodyCap
}

// BodyCap is one rule of ContentRules.BodyCaps: MaxBytes (> 0) bytes of
// body, as transferred, for media types matching MIME.
type BodyCap struct {
	MIME     config.MIMEPattern
	MaxBytes int64
}

// NewContentRules parses a crawl config's accept_mime, reject_mime and
// max_body_bytes_rules (config.ParseMIMEPattern). The error names the key
// and the entry; config.Validate has checked them already.
func NewContentRules(accept, reject []string, caps []config.BodyRule) (ContentRules, error) {
	var r ContentRules
	var err error
	if r.Accept, err = config.MIMEPatterns(accept); err != nil {
		return ContentRules{}, fmt.Errorf("accept_mime: %w", err)
	}
	if r.Reject, err = config.MIMEPatterns(reject); err != nil {
		return ContentRules{}, fmt.Errorf("reject_mime: %w", err)
	}
	for i, c := range caps {
		p, err := config.ParseMIMEPattern(c.MIME)
		if err != nil {
			return ContentRules{}, fmt.Errorf("max_body_bytes_rules: rule %d: %w", i, err)
		}
		if c.MaxBytes <= 0 {
			return ContentRules{}, fmt.Errorf("max_body_bytes_rules: rule %d: max_bytes %d is not positive", i, c.MaxBytes)
		}
		r.BodyCaps = append(r.BodyCaps, BodyCap{MIME: p, MaxBytes: c.MaxBytes})
	}
	return r, nil
}

// Rejects reports whether a response of media type mediaType is stopped
// by r, and the reason ("reject_mime video/*", "not in accept_mime").
func (r ContentRules) Rejects(mediaType string) (bool, string) {
	for _, p := range r.Reject {
		if p.Match(mediaType) {
			return true, "matches reject_mime " + p.String()
		}
	}
	if len(r.Accept) == 0 {
		return false, ""
	}
	for _, p := range r.Accept {
		if p.Match(mediaType) {
			return false, ""
		}
	}
	return true, "matches no accept_mime pattern"
}

// MaxBody returns the body cap for mediaType: the first matching BodyCap's,
// else def.
func (r ContentRules) MaxBody(mediaType string, def int64) int64 {
	for _, c := range r.BodyCaps {
		if c.MIME.Match(mediaType) {
			return c.MaxBytes
		}
	}
	return def
}

// maxCap returns the largest body cap r can give, def included: what the
// byte-exact copy of a response must have room for before its media type
// is known.
func (r ContentRules) maxCap(def int64) int64 {
	for _, c := range r.BodyCaps {
		def = max(def, c.MaxBytes)
	}
	return def
}

// ErrMIMERejected is wrapped by the *RejectedError of a fetch stopped by
// ContentRules (CodeMIMERejected).
var ErrMIMERejected = errors.New("media type rejected by the content rules")

// RejectedError is the cause inside the *Error of a FetchContent stopped
// after the response header (CodeMIMERejected): the body was not read and
// the connection was closed.
type RejectedError struct {
	// Status is the HTTP status of the response (2xx).
	Status int
	// MIME is the media type judged: the Content-Type's, lower case, or
	// OctetStream without one.
	MIME string
	// Why names the rule: "matches reject_mime video/*" or "matches no
	// accept_mime pattern".
	Why string
}

// Error gives "HTTP 200 video/mp4 matches reject_mime video/*: body not
// read".
func (e *RejectedError) Error() string {
	return fmt.Sprintf("HTTP %d %s %s: body not read", e.Status, e.MIME, e.Why)
}

// Unwrap returns ErrMIMERejected.
func (e *RejectedError) Unwrap() error { return ErrMIMERejected }

// responseMIME is the media type ContentRules judge resp by: its
// Content-Type's, or OctetStream without a usable one.
func responseMIME(resp *http.Response) string {
	if mt := mediaType(resp.Header.Get("Content-Type")); mt != "" {
		return mt
	}
	return OctetStream
}
