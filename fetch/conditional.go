package fetch

import (
	"net/http"
	"strings"
	"time"
)

// Conditions are the validators of an earlier response that make a GET
// conditional (RFC 9110 section 13.1): the server answers 304 Not Modified,
// without a body, when the resource has not changed since. The zero value
// sends none: an unconditional GET.
type Conditions struct {
	// ETag is the earlier response's ETag field value, sent as
	// If-None-Match (RFC 9110 section 13.1.2) as stored, as browsers send
	// it back, when it is a non-empty field value of visible ASCII
	// characters and spaces (no control characters, which would make the
	// request invalid: ValidETag); otherwise it is not sent.
	ETag string
	// ModifiedSince is the earlier response's Last-Modified, sent as
	// If-Modified-Since (RFC 9110 section 13.1.3) in IMF-fixdate form
	// ("Sun, 06 Nov 1994 08:49:37 GMT", second precision) when it is not
	// zero and not later than the time the request is made (a date in the
	// future is not a date the server sent for the current
	// representation); otherwise it is not sent.
	ModifiedSince time.Time
}

// ValidETag reports whether v may be kept as an entity tag and sent back in
// If-None-Match: non-empty after trimming spaces and made only of visible
// ASCII characters and spaces (0x20 to 0x7E). RFC 9110 section 8.8.3 wants
// a quoted opaque-tag; unquoted tags are accepted too, since the server
// that sent one compares against its own string.
func ValidETag(v string) bool {
	if strings.TrimSpace(v) == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// apply sets the request fields of c that apply at now on h and reports
// whether any was set.
func (c Conditions) apply(h http.Header, now time.Time) bool {
	sent := false
	if ValidETag(c.ETag) {
		h.Set("If-None-Match", strings.TrimSpace(c.ETag))
		sent = true
	}
	if !c.ModifiedSince.IsZero() && !c.ModifiedSince.After(now) {
		h.Set("If-Modified-Since", c.ModifiedSince.UTC().Format(http.TimeFormat))
		sent = true
	}
	return sent
}
