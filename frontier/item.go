package frontier

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxItemBytes is the largest encoded queue item DecodeItem accepts (16 KiB;
// a valid item is far smaller since URLs are capped at MaxURLLength).
const MaxItemBytes = 16 << 10

// ErrBadItem is wrapped by every DecodeItem and Encode error.
var ErrBadItem = errors.New("bad queue item")

// Item is a frontier queue item, stored as the JSON data of a
// persistent-sequential znode R/queue/<shard>/u-NNNNNNNNNN (see
// docs/design.md, "Znode layout").
//
// JSON keys: url, depth, via, attempts, not_before (RFC 3339 UTC, omitted
// when zero), and, omitted when empty, hops, lastmod, priority, prev.
type Item struct {
	// URL is the normalized URL to fetch.
	URL string `json:"url"`
	// Depth is the hop count from the seed (seeds are 0).
	Depth int `json:"depth"`
	// Via is the normalized URL of the page the link was found on; "" for
	// seeds.
	Via string `json:"via"`
	// Attempts counts the fetch attempts that failed with a retryable
	// error so far.
	Attempts int `json:"attempts"`
	// NotBefore is the earliest time the item may be claimed again (retry
	// back-off); zero means now.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Hops is the path from the seed, one Hop* letter per hop (hops.go):
	// "" for seeds, "LLE" for an image of a page two links away. At most
	// MaxHops characters.
	Hops string `json:"hops,omitempty"`
	// Lastmod is the <lastmod> of the sitemap entry that listed the URL, as
	// written (W3C Datetime, sitemap protocol 0.9, checked by
	// fetch.ParseSitemap), at most MaxLastmodBytes of valid UTF-8; ""
	// otherwise. Kept for later use (recrawl scheduling).
	Lastmod string `json:"lastmod,omitempty"`
	// Priority is the <priority> of the sitemap entry that listed the URL,
	// 0.0 to 1.0; nil otherwise.
	Priority *float64 `json:"priority,omitempty"`
	// Changefreq is the <changefreq> of the sitemap entry that listed the
	// URL, one of sitemap protocol 0.9's values (always, hourly, daily,
	// weekly, monthly, yearly, never; checked by fetch.ParseSitemap); ""
	// otherwise. It seeds the URL's first recrawl interval
	// (ChangefreqSeconds) when its content's age is unknown.
	Changefreq string `json:"changefreq,omitempty"`
	// Prev is the URL's last capture (capture.go): in a ready item, what a
	// conditional fetch compares against; in an item given to Enqueue, the
	// capture just made, which makes the item a recrawl schedule entry.
	// nil: none known.
	Prev *Capture `json:"prev,omitempty"`
}

// MaxLastmodBytes is the longest Item.Lastmod, in bytes.
const MaxLastmodBytes = 64

// itemJSONOverhead bounds the bytes of an encoded Item other than the
// contents of its string fields: the keys, quotes, commas and braces (about
// 90 bytes), two integers (20 bytes each), not_before (37), priority (24)
// and prev without its etag's contents (keys and punctuation about 80, time
// and last_modified 22 each, digest 16, interval_s 20, changed 4: under
// 200), changefreq (at most 22).
const itemJSONOverhead = 512

// itemKeys are the exact JSON keys of Item. encoding/json matches keys
// case-insensitively, so DecodeItem checks them itself.
var itemKeys = map[string]bool{"url": true, "depth": true, "via": true, "attempts": true, "not_before": true,
	"hops": true, "lastmod": true, "priority": true, "changefreq": true, "prev": true}

// Encode returns the JSON encoding of it, with NotBefore in UTC and without
// HTML escaping ("&" stays one byte). It returns an error wrapping
// ErrBadItem when it would not pass DecodeItem; an item that passes
// DecodeRecord always encodes.
func (it Item) Encode() ([]byte, error) {
	if err := it.validate(); err != nil {
		return nil, fmt.Errorf("encode item %q: %w", it.URL, err)
	}
	if !it.NotBefore.IsZero() {
		it.NotBefore = it.NotBefore.UTC()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(it); err != nil {
		return nil, fmt.Errorf("encode item %q: %w: %v", it.URL, ErrBadItem, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > MaxItemBytes {
		return nil, fmt.Errorf("encode item %q: %w: %d bytes, limit %d", it.URL, ErrBadItem, len(b), MaxItemBytes)
	}
	return b, nil
}

// DecodeItem parses the data of a queue znode strictly: it must be one JSON
// object of at most MaxItemBytes with only the keys of Item (exact case), a
// non-empty url, and non-negative depth and attempts. Errors wrap ErrBadItem
// and name the reason. DecodeItem does not re-normalize the URL.
func DecodeItem(data []byte) (Item, error) {
	var it Item
	if len(data) > MaxItemBytes {
		return it, fmt.Errorf("decode item: %w: %d bytes, limit %d", ErrBadItem, len(data), MaxItemBytes)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return it, fmt.Errorf("decode item: %w: %v", ErrBadItem, err)
	}
	if raw == nil {
		return it, fmt.Errorf("decode item: %w: not a JSON object", ErrBadItem)
	}
	for k := range raw {
		if !itemKeys[k] {
			return it, fmt.Errorf("decode item: %w: unknown field %q", ErrBadItem, k)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&it); err != nil {
		return Item{}, fmt.Errorf("decode item: %w: %v", ErrBadItem, err)
	}
	if err := it.validate(); err != nil {
		return Item{}, fmt.Errorf("decode item %q: %w", it.URL, err)
	}
	return it, nil
}

func (it Item) validate() error {
	switch {
	case it.URL == "":
		return fmt.Errorf("%w: missing url", ErrBadItem)
	case len(it.URL) > MaxRawURLLength:
		return fmt.Errorf("%w: url of %d bytes, limit %d", ErrBadItem, len(it.URL), MaxRawURLLength)
	case it.Depth < 0:
		return fmt.Errorf("%w: negative depth %d", ErrBadItem, it.Depth)
	case it.Attempts < 0:
		return fmt.Errorf("%w: negative attempts %d", ErrBadItem, it.Attempts)
	case len(it.Lastmod) > MaxLastmodBytes:
		return fmt.Errorf("%w: lastmod of %d bytes, limit %d", ErrBadItem, len(it.Lastmod), MaxLastmodBytes)
	case !utf8.ValidString(it.URL):
		return fmt.Errorf("%w: url is not valid UTF-8", ErrBadItem)
	case !utf8.ValidString(it.Via):
		return fmt.Errorf("%w: via is not valid UTF-8", ErrBadItem)
	case !utf8.ValidString(it.Lastmod):
		return fmt.Errorf("%w: lastmod is not valid UTF-8", ErrBadItem)
	case it.Priority != nil && !(*it.Priority >= 0 && *it.Priority <= 1):
		return fmt.Errorf("%w: priority %v outside 0.0..1.0", ErrBadItem, *it.Priority)
	case it.Changefreq != "" && changefreqCode(it.Changefreq) == 0:
		return fmt.Errorf("%w: changefreq %q is not one of %s", ErrBadItem, it.Changefreq, strings.Join(changefreqs[1:], ", "))
	}
	if err := validateHops(it.Hops); err != nil {
		return err
	}
	etag := 0
	if it.Prev != nil {
		if err := validateCapture(it.Prev); err != nil {
			return err
		}
		etag = jsonStringLen(it.Prev.ETag)
	}
	if !it.NotBefore.IsZero() {
		if y := it.NotBefore.UTC().Year(); y < 1 || y > 9999 {
			return fmt.Errorf("%w: not_before %s outside years 1..9999 UTC", ErrBadItem, it.NotBefore)
		}
	}
	// Valid UTF-8 and this bound make every valid item encodable: JSON
	// would replace invalid bytes by U+FFFD (changing the item) and escapes
	// can make a long URL too large for MaxItemBytes.
	if n := itemJSONOverhead + jsonStringLen(it.URL) + jsonStringLen(it.Via) +
		jsonStringLen(it.Hops) + jsonStringLen(it.Lastmod) + etag; n > MaxItemBytes {
		return fmt.Errorf("%w: encodes to up to %d bytes, limit %d", ErrBadItem, n, MaxItemBytes)
	}
	return nil
}

// jsonStringLen bounds the bytes of s's JSON string contents as Encode
// writes them: 2 for a quote or a backslash, 6 for a control byte and for U+2028 and
// U+2029 (written \u2028), 1 for any other byte of valid UTF-8.
func jsonStringLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n++
		case c < 0x20:
			n += 5
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9):
			n += 3
		}
	}
	return n
}
