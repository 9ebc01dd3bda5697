package frontier

import (
	"encoding/base32"
	"encoding/hex"
	"strings"
	"time"
)

// MaxETagBytes is the longest entity tag a Capture keeps (RFC 9110 section
// 8.8.3, quotes and a W/ prefix included): a longer one is not kept, and the
// next fetch of the URL sends If-Modified-Since only.
const MaxETagBytes = 64

// Capture is what the frontier keeps of a URL's last capture for its next
// fetch (docs/design.md, "Recrawl"): enough for a conditional GET (RFC 9110
// section 13.1) and for a revisit record's WARC-Refers-To-Target-URI and
// WARC-Refers-To-Date (WARC 1.1 section 6.7; the target URI is the item's
// URL).
//
// In a ready item (Item.Prev) it is the capture the fetch compares against.
// In an item given to Frontier.Enqueue it is the capture just made, and the
// item is a recrawl schedule entry: the group's owner keeps it although the
// URL is in the seen-set, and makes the URL ready again when it is due.
//
// JSON keys: time (RFC 3339 UTC), and, omitted when empty, digest, etag,
// last_modified, interval_s, changed, fetched.
type Capture struct {
	// Time is the WARC-Date of the capture's response record, UTC, at
	// second precision (what WARC-Refers-To-Date needs).
	Time time.Time `json:"time"`
	// Digest is the first DigestBytes (6) bytes of the payload's SHA-1 as
	// 12 lower-case hex digits (DigestPrefix); "" when unknown. A capture
	// kept by an earlier release may hold 8 bytes (16 digits): compare with
	// SameDigest, which compares the length kept.
	Digest string `json:"digest,omitempty"`
	// ETag is the response's ETag field value as received (at most
	// MaxETagBytes); "" when absent or longer.
	ETag string `json:"etag,omitempty"`
	// LastModified is the response's Last-Modified (RFC 9110 section
	// 8.8.2), UTC, second precision; zero when absent, unparsable or later
	// than Time.
	LastModified time.Time `json:"last_modified,omitzero"`
	// IntervalS is the recrawl interval in seconds that made this capture
	// due (0: none yet, the URL's first capture).
	IntervalS int64 `json:"interval_s,omitempty"`
	// Changed reports that the capture's payload differs from the previous
	// one's (true for a URL's first capture); the owner shrinks the
	// interval when it is set and grows it otherwise.
	Changed bool `json:"changed,omitempty"`
	// Fetched is when the fetch that made this entry ran, UTC, when that
	// is later than Time (a revisit keeps the original response's Time);
	// zero means Time. The schedule counts from it (LastFetch): due =
	// LastFetch + interval. A record keeps it to the second under an hour
	// after Time, else as whole minutes after Time, rounded up (a due time
	// then moves later by under a minute, never earlier).
	Fetched time.Time `json:"fetched,omitzero"`
}

// LastFetch returns when the URL was last fetched: Fetched, or Time when
// Fetched is zero.
func (c *Capture) LastFetch() time.Time {
	if c.Fetched.After(c.Time) {
		return c.Fetched
	}
	return c.Time
}

// DigestBytes is how many leading bytes of a payload's SHA-1 a Capture
// keeps: 6 (48 bits). Two different payloads are taken for the same, and
// a changed page is stored as an identical-payload-digest revisit, with
// odds of 2^-48 (3.6e-15) per comparison: about 3.6e-6 expected false
// "unchanged" over 10^9 refetches.
const DigestBytes = 6

// DigestPrefix returns Capture.Digest's form of a WARC payload digest
// written as "sha1:" and 32 base32 characters (storage.Digest, WARC 1.1
// section 5.8): the first DigestBytes bytes of the SHA-1, 12 hex digits.
// It returns "" for any other form.
func DigestPrefix(warcDigest string) string {
	sum := sha1Of(warcDigest)
	if sum == nil {
		return ""
	}
	return hex.EncodeToString(sum[:DigestBytes])
}

// SameDigest reports whether the WARC payload digest warcDigest (the form
// DigestPrefix reads) starts with the bytes of Capture.Digest kept, whatever
// their number (12 hex digits, or 16 in a capture of an earlier release);
// false when either is empty or malformed.
func SameDigest(warcDigest, kept string) bool {
	sum := sha1Of(warcDigest)
	if sum == nil || kept == "" || len(kept) > 2*len(sum) {
		return false
	}
	return hex.EncodeToString(sum[:len(kept)/2]) == kept
}

// sha1Of decodes "sha1:" and 32 base32 characters into the 20 bytes of the
// SHA-1; nil for any other form.
func sha1Of(warcDigest string) []byte {
	b32, ok := strings.CutPrefix(warcDigest, "sha1:")
	if !ok || len(b32) != 32 {
		return nil
	}
	sum, err := base32.StdEncoding.DecodeString(b32)
	if err != nil || len(sum) != 20 {
		return nil
	}
	return sum
}
