package frontier

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// Fingerprint returns the 64-bit seen-set key of a normalized URL: the
// first 8 bytes of SHA-256(normURL), big-endian. With 10^9 URLs the chance
// that any two share a fingerprint is about n^2/2^65 = 2.7% for the whole
// crawl (0.03 URLs expected to be wrongly taken for seen), and keys are only
// compared within one shard group (docs/design.md, "Frontier layout 2").
func Fingerprint(normURL string) uint64 { return fingerprint([]byte(normURL)) }

// fingerprint is Fingerprint of bytes.
func fingerprint(b []byte) uint64 {
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// Record field tags of the optional fields after the via URL.
const (
	recHops       = 1 // uvarint length, the hop path
	recLastmod    = 2 // uvarint length, the sitemap lastmod
	recPriority   = 3 // 8 bytes, IEEE 754 little-endian: the sitemap priority
	recPrev       = 4 // the last capture (appendPrev in record_prev.go)
	recChangefreq = 5 // one byte, the sitemap changefreq's index in changefreqs (1-7)
)

// changefreqs are the <changefreq> values of sitemap protocol 0.9 by their
// code in a record (0: none).
var changefreqs = []string{"", "always", "hourly", "daily", "weekly", "monthly", "yearly", "never"}

// changefreqCode returns the code of changefreq value s; 0 when s is not
// one.
func changefreqCode(s string) byte {
	for i, v := range changefreqs[1:] {
		if v == s {
			return byte(i + 1)
		}
	}
	return 0
}

// Record returns the compact binary form of it kept in the frontier's
// inbox posts and backlog batches (coord compresses batches with flate):
// uvarint depth, uvarint attempts, then the URL and the via URL, each as a
// uvarint length and its bytes, then only the optional fields that are set,
// each as a tag byte and its value (hops, lastmod, priority, prev: the
// capture in 6 to 90 bytes, appendPrev; changefreq: one byte). NotBefore is not kept: a backlog
// item has never been attempted (retries stay in the ready window).
// Prev.Time and LastModified are kept to the second, Prev.IntervalS
// within 4.4% (one exponent byte) and Prev.ETag only when there is no
// LastModified. Errors wrap ErrBadItem, as Encode's.
func (it Item) Record() ([]byte, error) { return it.record(false) }

// record is Record with the prev field's prevFold flag set to fold.
func (it Item) record(fold bool) ([]byte, error) {
	if err := it.validate(); err != nil {
		return nil, fmt.Errorf("encode record %q: %w", it.URL, err)
	}
	out := make([]byte, 0, 4+len(it.URL)+len(it.Via)+2*binary.MaxVarintLen16)
	out = binary.AppendUvarint(out, uint64(it.Depth))
	out = binary.AppendUvarint(out, uint64(it.Attempts))
	out = binary.AppendUvarint(out, uint64(len(it.URL)))
	out = append(out, it.URL...)
	out = binary.AppendUvarint(out, uint64(len(it.Via)))
	out = append(out, it.Via...)
	for _, f := range []struct {
		tag byte
		s   string
	}{{recHops, it.Hops}, {recLastmod, it.Lastmod}} {
		if f.s != "" {
			out = append(out, f.tag)
			out = binary.AppendUvarint(out, uint64(len(f.s)))
			out = append(out, f.s...)
		}
	}
	if it.Priority != nil {
		out = append(out, recPriority)
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(*it.Priority))
	}
	if it.Prev != nil {
		out = append(out, recPrev)
		out = appendPrev(out, it.Prev, fold)
	}
	if it.Changefreq != "" {
		out = append(out, recChangefreq, changefreqCode(it.Changefreq))
	}
	return out, nil
}

// DecodeRecord parses Record's output strictly. Errors wrap ErrBadItem and
// name the reason.
func DecodeRecord(data []byte) (Item, error) {
	it, _, err := decodeRecordFold(data)
	return it, err
}

// decodeRecordFold is DecodeRecord that also reports the prev field's
// prevFold flag.
func decodeRecordFold(data []byte) (Item, bool, error) {
	var it Item
	var fold bool
	var err error
	num := func(what string) int {
		if err != nil {
			return 0
		}
		v, k := binary.Uvarint(data)
		if k <= 0 || v > 1<<31 {
			err = fmt.Errorf("decode record: %w: bad %s", ErrBadItem, what)
			return 0
		}
		data = data[k:]
		return int(v)
	}
	str := func(what string) string {
		n := num(what + " length")
		if err != nil {
			return ""
		}
		if n > len(data) || n > MaxRawURLLength {
			err = fmt.Errorf("decode record: %w: %s of %d bytes", ErrBadItem, what, n)
			return ""
		}
		s := string(data[:n])
		data = data[n:]
		return s
	}
	it.Depth, it.Attempts = num("depth"), num("attempts")
	it.URL, it.Via = str("url"), str("via")
	last := byte(0)
	for err == nil && len(data) > 0 {
		tag := data[0]
		data = data[1:]
		if tag <= last {
			return Item{}, false, fmt.Errorf("decode record: %w: field %d out of order", ErrBadItem, tag)
		}
		last = tag
		switch tag {
		case recHops:
			it.Hops = str("hops")
		case recLastmod:
			it.Lastmod = str("lastmod")
		case recPriority:
			if len(data) < 8 {
				return Item{}, false, fmt.Errorf("decode record: %w: truncated priority", ErrBadItem)
			}
			p := math.Float64frombits(binary.LittleEndian.Uint64(data))
			it.Priority, data = &p, data[8:]
		case recPrev:
			var perr error
			if it.Prev, fold, data, perr = decodePrev(data); perr != nil {
				return Item{}, false, perr
			}
		case recChangefreq:
			if len(data) < 1 || data[0] == 0 || int(data[0]) >= len(changefreqs) {
				return Item{}, false, fmt.Errorf("decode record: %w: bad changefreq", ErrBadItem)
			}
			it.Changefreq, data = changefreqs[data[0]], data[1:]
		default:
			return Item{}, false, fmt.Errorf("decode record: %w: unknown field %d", ErrBadItem, tag)
		}
	}
	if err != nil {
		return Item{}, false, err
	}
	if err := it.validate(); err != nil {
		return Item{}, false, fmt.Errorf("decode record %q: %w", it.URL, err)
	}
	return it, fold, nil
}

// RecordKey returns the fingerprint of a record's URL (the key function
// of NewBacklog),
// reading only the record's first fields (no decode, no allocation: it runs
// for every record when a group is loaded and for every accepted one); a
// record whose URL field cannot be read gets the fingerprint of its bytes,
// so it is still deduplicated consistently. For a valid record it equals
// Fingerprint(DecodeRecord(record).URL).
func RecordKey(record []byte) uint64 {
	u, ok := recordURL(record)
	if !ok {
		u = record
	}
	return fingerprint(u)
}

// RecordURL returns the URL of a record without decoding the rest (no
// validation beyond the URL field). Errors wrap ErrBadItem.
func RecordURL(record []byte) (string, error) {
	u, ok := recordURL(record)
	if !ok || len(u) == 0 {
		return "", fmt.Errorf("decode record: %w: no url field", ErrBadItem)
	}
	return string(u), nil
}

// recordURL returns the URL bytes of a record: after the depth and
// attempts uvarints, a uvarint length and the URL.
func recordURL(data []byte) ([]byte, bool) {
	for range 2 { // depth, attempts
		_, k := binary.Uvarint(data)
		if k <= 0 {
			return nil, false
		}
		data = data[k:]
	}
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) || n > MaxRawURLLength {
		return nil, false
	}
	return data[k : k+int(n)], true
}
