package frontier

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// CaptureEpoch is the origin of the capture times kept in records: a
// record holds Capture.Time as 4 bytes of seconds since it, so the times a
// record can hold run from 2020-01-01 to 2156-02-07 UTC.
var CaptureEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// captureEnd is the first time after CaptureEpoch a record cannot hold.
var captureEnd = CaptureEpoch.Add(math.MaxUint32 * time.Second)

// Flags of the prev field (the first byte of its value).
const (
	prevChanged  = 1 << 0 // Capture.Changed
	prevDigest   = 1 << 1 // the digest follows: 8 bytes, or DigestBytes with prevForm2
	prevLastMod  = 1 << 2 // 4 bytes of Last-Modified follow
	prevETag     = 1 << 3 // a uvarint length and the ETag follow
	prevInterval = 1 << 4 // one byte of interval exponent follows
	prevFold     = 1 << 5 // owner only: the key joins the seen chunks when the batch retires
	prevFetched  = 1 << 6 // a uvarint from the capture time to the last fetch follows: seconds, or encodeFetchDelta's with prevForm2
	prevForm2    = 1 << 7 // the digest is DigestBytes long and the last fetch is encodeFetchDelta's (set by every record written now)
	prevKnown    = prevChanged | prevDigest | prevLastMod | prevETag | prevInterval | prevFold | prevFetched | prevForm2
)

// The order of the prev field's values after the flags byte. Form 2
// puts the Last-Modified first (neighbouring entries of a static site
// repeat the capture time's high bytes, the flags and it, one match for
// flate) and the random digest last (the next record's header follows
// it); against form 1's order, on ScheduleBytes' shapes (flate of
// 800-record batches): 0.2 to 1.6 B less per URL for random
// Last-Modifieds, ETags and revisit entries, 0.07 B more for a static
// site's first captures.
var (
	prevOrder1 = []byte{prevInterval, prevDigest, prevLastMod, prevETag, prevFetched}
	prevOrder2 = []byte{prevLastMod, prevInterval, prevFetched, prevETag, prevDigest}
)

// prevOrder returns the value order of a prev field with flags.
func prevOrder(flags byte) []byte {
	if flags&prevForm2 != 0 {
		return prevOrder2
	}
	return prevOrder1
}

// intervalSteps is how many exponent steps one doubling of an interval
// takes in a record: IntervalS is kept as round(8 x log2(IntervalS)), one
// byte (1 s to about 2^31.9 s), within 4.4% of the value given.
const intervalSteps = 8

// MaxIntervalS is the longest Capture.IntervalS a record holds (about 117
// years); validate refuses longer ones.
const MaxIntervalS = 1 << 31

// encodeIntervalExp returns the exponent byte of s (>= 1).
func encodeIntervalExp(s int64) byte {
	e := math.Round(intervalSteps * math.Log2(float64(s)))
	return byte(min(max(e, 0), 255))
}

// decodeIntervalExp returns the interval in seconds of exponent e.
func decodeIntervalExp(e byte) int64 {
	return int64(math.Round(math.Exp2(float64(e) / intervalSteps)))
}

// appendPrev appends the value of the prev field: the capture time as 4
// bytes big-endian of seconds since CaptureEpoch (right after the tag, so
// that the tag and the high bytes of neighbouring captures repeat, which
// flate takes), a flags byte (prevForm2 set unless the digest has 8
// bytes), then, in prevOrder's order,
// each only when its flag is set: the interval exponent byte, the digest
// bytes (DigestBytes of them; 8 for a 16-digit Digest of an earlier
// release, without prevForm2), the Last-Modified as 4 bytes big-endian of
// Unix seconds (absolute, not relative to the capture: the pages of a
// static site share one, and flate takes the repeats; a uvarint of the
// seconds before the capture measured 0.4 B per URL more for random ones)
// and, only when there is no Last-Modified, the
// ETag as a uvarint length and its bytes (an ETag beside a Last-Modified
// would cost 10 to 15 bytes per scheduled URL; the next fetch then sends
// If-Modified-Since alone), and, when the last fetch was later than the
// capture (a revisit), a uvarint of the time between them
// (encodeFetchDelta; plain seconds without prevForm2). fold sets prevFold.
func appendPrev(out []byte, c *Capture, fold bool) []byte {
	var flags byte
	if c.Changed {
		flags |= prevChanged
	}
	digest, _ := hex.DecodeString(c.Digest)
	switch len(digest) {
	case DigestBytes:
		flags |= prevDigest | prevForm2
	case 8: // an earlier release's capture: its fetch delta stays in seconds
		flags |= prevDigest
	default:
		flags |= prevForm2
	}
	if !c.LastModified.IsZero() {
		flags |= prevLastMod
	}
	if c.ETag != "" && c.LastModified.IsZero() {
		flags |= prevETag // with a Last-Modified the ETag is not kept
	}
	if c.IntervalS > 0 {
		flags |= prevInterval
	}
	if fold {
		flags |= prevFold
	}
	fetched := c.LastFetch().Unix() - c.Time.Unix()
	if fetched > 0 {
		flags |= prevFetched
	}
	out = binary.BigEndian.AppendUint32(out, uint32(c.Time.Unix()-CaptureEpoch.Unix()))
	out = append(out, flags)
	if flags&prevFetched != 0 && flags&prevForm2 != 0 {
		fetched = encodeFetchDelta(fetched)
	}
	for _, f := range prevOrder(flags) {
		if flags&f == 0 {
			continue
		}
		switch f {
		case prevInterval:
			out = append(out, encodeIntervalExp(c.IntervalS))
		case prevDigest:
			out = append(out, digest...)
		case prevLastMod:
			out = binary.BigEndian.AppendUint32(out, uint32(c.LastModified.Unix()))
		case prevETag:
			out = binary.AppendUvarint(out, uint64(len(c.ETag)))
			out = append(out, c.ETag...)
		case prevFetched:
			out = binary.AppendUvarint(out, uint64(fetched))
		}
	}
	return out
}

// decodePrev parses appendPrev's output at the start of data and returns
// the capture, whether prevFold was set, and the rest of data. Errors wrap
// ErrBadItem.
func decodePrev(data []byte) (c *Capture, fold bool, rest []byte, err error) {
	bad := func(what string) (*Capture, bool, []byte, error) {
		return nil, false, nil, fmt.Errorf("decode record: %w: prev: %s", ErrBadItem, what)
	}
	if len(data) < 5 {
		return bad("truncated")
	}
	flags := data[4]
	if flags&^prevKnown != 0 {
		return bad(fmt.Sprintf("unknown flags %#x", flags&^prevKnown))
	}
	c = &Capture{Changed: flags&prevChanged != 0,
		Time: CaptureEpoch.Add(time.Duration(binary.BigEndian.Uint32(data[:4])) * time.Second)}
	data = data[5:]
	for _, f := range prevOrder(flags) {
		if flags&f == 0 {
			continue
		}
		switch f {
		case prevInterval:
			if len(data) < 1 {
				return bad("truncated interval")
			}
			c.IntervalS, data = decodeIntervalExp(data[0]), data[1:]
		case prevDigest:
			n := 8
			if flags&prevForm2 != 0 {
				n = DigestBytes
			}
			if len(data) < n {
				return bad("truncated digest")
			}
			c.Digest, data = hex.EncodeToString(data[:n]), data[n:]
		case prevLastMod:
			if len(data) < 4 {
				return bad("truncated last-modified")
			}
			c.LastModified, data = time.Unix(int64(binary.BigEndian.Uint32(data)), 0).UTC(), data[4:]
			if c.LastModified.After(c.Time) {
				return bad("last-modified after the capture")
			}
		case prevETag:
			n, k := binary.Uvarint(data)
			if k <= 0 || n == 0 || n > MaxETagBytes || n > uint64(len(data)-k) {
				return bad("bad etag length")
			}
			c.ETag, data = string(data[k:k+int(n)]), data[k+int(n):]
		case prevFetched:
			n, k := binary.Uvarint(data)
			secs := int64(n)
			if flags&prevForm2 != 0 {
				secs = decodeFetchDelta(n)
			}
			if k <= 0 || secs <= 0 || n > math.MaxUint32 || secs > math.MaxUint32 {
				return bad("bad fetch time")
			}
			c.Fetched, data = c.Time.Add(time.Duration(secs)*time.Second), data[k:]
		}
	}
	return c, flags&prevFold != 0, data, nil
}

// encodeFetchDelta returns the prevForm2 value of a last fetch secs (> 0)
// seconds after the capture: secs x 2 under an hour (exact, for short
// recrawl intervals), else the minutes, rounded up, x 2 + 1 (a due time
// then moves at most a minute later, under 1.7% of such an interval): 2
// bytes for anything under an hour or within 45 days.
func encodeFetchDelta(secs int64) int64 {
	if secs < 3600 {
		return secs * 2
	}
	return (secs+59)/60*2 + 1
}

// decodeFetchDelta is encodeFetchDelta's inverse, in seconds.
func decodeFetchDelta(v uint64) int64 {
	if v&1 == 0 {
		return int64(v / 2)
	}
	return int64(v/2) * 60
}

// minCaptureUnix and maxLastModUnix bound the Last-Modified a Capture may
// carry: 1970-01-01 to 2106-02-07 (4 bytes of Unix seconds).
const (
	minCaptureUnix = 0
	maxLastModUnix = math.MaxUint32
)

// validateCapture checks a Capture against what a record can hold:
// Time within [CaptureEpoch, 2156-02-07), Digest 12 (or, from an earlier
// release, 16) lower-case hex digits or "", ETag at most MaxETagBytes of valid UTF-8 without control bytes,
// LastModified zero or within [1970, Time], IntervalS within
// [0, MaxIntervalS]. Errors wrap ErrBadItem.
func validateCapture(c *Capture) error {
	switch {
	case c.Time.Before(CaptureEpoch) || !c.Time.Before(captureEnd):
		return fmt.Errorf("%w: prev time %s outside %s..%s", ErrBadItem, c.Time.UTC().Format(time.RFC3339), CaptureEpoch.Format(time.RFC3339), captureEnd.Format(time.RFC3339))
	case c.Digest != "" && !isLowerHex(c.Digest, 2*DigestBytes) && !isLowerHex(c.Digest, 16):
		return fmt.Errorf("%w: prev digest %q is not %d (or 16) lower-case hex digits", ErrBadItem, c.Digest, 2*DigestBytes)
	case len(c.ETag) > MaxETagBytes:
		return fmt.Errorf("%w: prev etag of %d bytes, limit %d", ErrBadItem, len(c.ETag), MaxETagBytes)
	case !utf8.ValidString(c.ETag) || hasControl(c.ETag):
		return fmt.Errorf("%w: prev etag is not printable UTF-8", ErrBadItem)
	case !c.LastModified.IsZero() && (c.LastModified.Unix() < minCaptureUnix || c.LastModified.Unix() > maxLastModUnix || c.LastModified.After(c.Time)):
		return fmt.Errorf("%w: prev last_modified %s outside 1970..the capture time %s", ErrBadItem,
			c.LastModified.UTC().Format(time.RFC3339), c.Time.UTC().Format(time.RFC3339))
	case c.IntervalS < 0 || c.IntervalS > MaxIntervalS:
		return fmt.Errorf("%w: prev interval_s %d outside 0..%d", ErrBadItem, c.IntervalS, int64(MaxIntervalS))
	case !c.Fetched.IsZero() && (c.Fetched.Before(c.Time) || !c.Fetched.Before(captureEnd)):
		return fmt.Errorf("%w: prev fetched %s outside the capture time %s..%s", ErrBadItem,
			c.Fetched.UTC().Format(time.RFC3339), c.Time.UTC().Format(time.RFC3339), captureEnd.Format(time.RFC3339))
	}
	return nil
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// RecordFolds reports whether a backlog record's key joins the group's
// seen chunks when its batch retires: true for a new URL's record (no
// prev) and for a schedule entry the owner accepted for a URL its group
// had not seen; false for the other schedule entries, whose key is in the
// seen-set already, so that no key is folded twice. A record that does not
// decode folds.
func RecordFolds(record []byte) bool {
	_, fold, has := recordPrevFlags(record)
	return !has || fold
}

// recordPrevFlags finds the prev field of a record: whether it has one and
// whether its prevFold flag is set.
func recordPrevFlags(record []byte) (c *Capture, fold, has bool) {
	it, fold, err := decodeRecordFold(record)
	if err != nil || it.Prev == nil {
		return nil, false, false
	}
	return it.Prev, fold, true
}

// SetRecordFold returns a copy of a record with a prev field with its
// prevFold flag set to fold (the owner's mark, RecordFolds); a record
// without one comes back unchanged. Errors wrap ErrBadItem.
func SetRecordFold(record []byte, fold bool) ([]byte, error) {
	it, _, err := decodeRecordFold(record)
	if err != nil {
		return nil, err
	}
	if it.Prev == nil {
		return record, nil
	}
	return it.record(fold)
}
