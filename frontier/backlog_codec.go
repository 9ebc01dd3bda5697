package frontier

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"
)

// Encodings of the frontier's compact znodes (docs/design.md, "Frontier
// layout 2"). Written by hand: they are a few uvarints and byte strings, and
// compress/flate from the standard library does the compression.

// maxRecordBytes bounds one record in a post or batch (a crawl item of a
// URL capped at a few KiB is far smaller).
const maxRecordBytes = 64 << 10

// maxDecodedBytes bounds the decompressed size of one post, batch or cursor
// (a hostile or corrupt znode cannot make a reader allocate more).
const maxDecodedBytes = 16 << 20

// errBadEncoding is wrapped by every decode error of this file.
var errBadEncoding = errors.New("frontier: bad frontier encoding")

// Record-list encodings: a first byte tells whether the rest is flate.
const (
	recordsRaw   = 'R' // uvarint n, n x (uvarint len, bytes)
	recordsFlate = 'F' // flate of the same
)

// encodeRecords returns records as a format byte and uvarint n, n x
// (uvarint len, bytes), flate-compressed when compress is set: the data of
// an inbox post (compressed) and of a backlog batch (encodeBatch: the
// group's open batch is compressed again at each step that appends to it,
// the full one once, at the best level).
func encodeRecords(records [][]byte, compress bool) []byte {
	level := 0
	if compress {
		level = flate.BestSpeed
	}
	return encodeRecordsLevel(records, level)
}

// encodeBatch returns a backlog batch's data: flate.BestSpeed while it is
// open (rewritten whole at every append, so its bytes are paid again at
// each step: raw, the open batches were half of what a wide crawl's owners
// wrote to ZooKeeper), and once full (compressed once, never rewritten but
// by a compaction) flate.BestCompression, about 6% smaller than BestSpeed
// for schedule entries (docs/design.md, "Recrawl").
func encodeBatch(records [][]byte, full bool) []byte {
	if !full {
		return encodeRecordsLevel(records, flate.BestSpeed)
	}
	return encodeRecordsLevel(records, flate.BestCompression)
}

// encodeRecordsLevel is encodeRecords at flate level (0: raw).
func encodeRecordsLevel(records [][]byte, level int) []byte {
	size := binary.MaxVarintLen64
	for _, r := range records {
		size += len(r) + binary.MaxVarintLen32
	}
	raw := make([]byte, 1, size+1)
	raw[0] = recordsRaw
	raw = binary.AppendUvarint(raw, uint64(len(records)))
	for _, r := range records {
		raw = binary.AppendUvarint(raw, uint64(len(r)))
		raw = append(raw, r...)
	}
	if level == 0 {
		return raw
	}
	return append([]byte{recordsFlate}, deflateLevel(raw[1:], level)...)
}

// decodeRecords parses encodeRecords' output. Errors wrap errBadEncoding.
func decodeRecords(data []byte) ([][]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty record list", errBadEncoding)
	}
	var raw []byte
	switch data[0] {
	case recordsRaw:
		raw = data[1:]
	case recordsFlate:
		var err error
		if raw, err = inflate(data[1:]); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: record list format %q", errBadEncoding, data[0])
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)) {
		return nil, fmt.Errorf("%w: record count", errBadEncoding)
	}
	raw = raw[k:]
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(raw)
		if k <= 0 || l > maxRecordBytes || l > uint64(len(raw)-k) {
			return nil, fmt.Errorf("%w: record %d of %d: bad length", errBadEncoding, i, n)
		}
		out = append(out, raw[k:k+int(l)])
		raw = raw[k+int(l):]
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after %d records", errBadEncoding, len(raw), n)
	}
	return out, nil
}

// keysEliasFano is the format byte of a seen chunk in Elias-Fano form,
// written after a 0x00 byte. A chunk of the earlier form (decodeKeysV1) has
// no format byte: it starts with uvarint n, so the only one that starts
// with 0x00 is the empty chunk, exactly the byte 0x00; the two forms never
// read as each other, and the earlier decoder refuses this one (an empty
// chunk followed by trailing bytes).
const keysEliasFano = 'E'

// encodeKeys returns keys as a seen chunk: 0x00, keysEliasFano, uvarint n
// and, when n > 0, a byte L and the Elias-Fano bits of the keys, least
// significant bit first in each byte, zero-padded to a whole byte: the low
// L bits of every key (n x L bits), then the high parts key>>L in unary
// (for each key, the rise from the previous key's high part, 0 before the
// first, as that many 0 bits and then a 1: n + max>>L bits). L is
// floor(log2(max/n)) (0 when max < n), so the n keys take n x (L + 1) +
// max>>L bits, under L + 3 a key: 54 bits (6.75 bytes) a key for 4,096
// uniform 64-bit fingerprints (L = 51), where uvarint gaps took 7.9 bytes,
// and a chunk of chunkKeys keys is at most 27,653 bytes, 5 of them header. keys must be sorted ascending
// and free of duplicates (the callers' guarantee, not checked: decodeKeys
// refuses such a chunk). Written by hand: the standard library has no
// Elias-Fano coder, and the stored format must stay fixed and ours.
func encodeKeys(keys []uint64) []byte {
	n := uint64(len(keys))
	out := binary.AppendUvarint([]byte{0, keysEliasFano}, n)
	if n == 0 {
		return out
	}
	maxKey := keys[n-1]
	l := uint64(0)
	if maxKey/n > 0 {
		l = uint64(bits.Len64(maxKey/n) - 1)
	}
	lowBits := n * l
	words := make([]uint64, (lowBits+n+maxKey>>l)/64+2) // one spare: a low part may straddle the last
	for i, k := range keys {
		p, low := uint64(i)*l, k&(1<<l-1)
		words[p/64] |= low << (p % 64)
		if p%64+l > 64 {
			words[p/64+1] |= low >> (64 - p%64)
		}
		h := lowBits + k>>l + uint64(i)
		words[h/64] |= 1 << (h % 64)
	}
	size := len(out) + 1 + int((lowBits+n+maxKey>>l+7)/8)
	out = append(slices.Grow(out, 1+8*len(words)), byte(l))
	for _, w := range words {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out[:size]
}

// decodeKeys parses a seen chunk of either form, encodeKeys' or
// decodeKeysV1's, into its keys (ascending, distinct, at most 8 per byte
// of data). Errors wrap errBadEncoding: an unknown format, a key count the
// data cannot hold, L over 63, a truncated chunk, a key over 64 bits, a
// key not above the one before (out of order or duplicate), trailing
// bytes or set padding bits.
func decodeKeys(data []byte) ([]uint64, error) {
	if len(data) < 2 || data[0] != 0 {
		return decodeKeysV1(data)
	}
	if data[1] != keysEliasFano {
		return nil, fmt.Errorf("%w: seen chunk format %q", errBadEncoding, data[1])
	}
	n, k := binary.Uvarint(data[2:])
	if k <= 0 {
		return nil, fmt.Errorf("%w: seen chunk key count", errBadEncoding)
	}
	data = data[2+k:]
	if n == 0 && len(data) == 0 {
		return []uint64{}, nil
	}
	if n == 0 || len(data) == 0 {
		return nil, fmt.Errorf("%w: seen chunk of %d keys in %d bytes", errBadEncoding, n, len(data))
	}
	l, src := uint64(data[0]), data[1:]
	if l > 63 {
		return nil, fmt.Errorf("%w: seen chunk low bits %d, over 63", errBadEncoding, l)
	}
	size := 8 * uint64(len(src))
	if n > size/(l+1) { // each key takes l bits and a 1
		return nil, fmt.Errorf("%w: seen chunk of %d keys, %d low bits each, in %d bytes", errBadEncoding, n, l, len(src))
	}
	words := make([]uint64, len(src)/8+2) // zero-padded: a low part may straddle into the next word
	for i := 0; i+8 <= len(src); i += 8 {
		words[i/8] = binary.LittleEndian.Uint64(src[i:])
	}
	var tail [8]byte
	copy(tail[:], src[len(src)/8*8:])
	words[len(src)/8] = binary.LittleEndian.Uint64(tail[:])
	out := make([]uint64, 0, n)
	hi0 := n * l                                       // where the high parts start
	wi, w := hi0/64, words[hi0/64]>>(hi0%64)<<(hi0%64) // the word of the next 1 bit, its bits not yet read
	hi := uint64(0)                                    // one past the last 1 bit read
	for i := range n {
		for w == 0 {
			if wi++; wi*64 >= size {
				return nil, fmt.Errorf("%w: seen chunk truncated at key %d of %d", errBadEncoding, i, n)
			}
			w = words[wi]
		}
		hi = wi*64 + uint64(bits.TrailingZeros64(w)) + 1
		w &= w - 1
		high := hi - 1 - hi0 - i // the 0 bits before this key's 1
		if l > 0 && high>>(64-l) != 0 {
			return nil, fmt.Errorf("%w: seen chunk key %d of %d over 64 bits", errBadEncoding, i, n)
		}
		p := i * l
		low := words[p/64] >> (p % 64)
		if p%64+l > 64 {
			low |= words[p/64+1] << (64 - p%64)
		}
		key := high<<l | low&(1<<l-1)
		if i > 0 && key <= out[i-1] {
			return nil, fmt.Errorf("%w: seen chunk key %d of %d not above the one before", errBadEncoding, i, n)
		}
		out = append(out, key)
	}
	if (hi+7)/8 != uint64(len(src)) || w != 0 { // more bytes, or set bits padding the last
		return nil, fmt.Errorf("%w: trailing bits in seen chunk", errBadEncoding)
	}
	return out, nil
}

// decodeKeysV1 parses a seen chunk of the form written before Elias-Fano:
// uvarint n, then n uvarint gaps between consecutive keys (the first from
// 0), 1 to 10 bytes a key (7.9 for a full chunk of uniform fingerprints).
// Existing crawls hold such chunks; nothing writes them. Keys come back
// ascending and distinct, at most one per byte of data. Errors wrap
// errBadEncoding: a bad count, a truncated gap, a zero gap after the first
// key (a duplicate), a key past 2^64, trailing bytes.
func decodeKeysV1(data []byte) ([]uint64, error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)) {
		return nil, fmt.Errorf("%w: seen chunk key count", errBadEncoding)
	}
	data = data[k:]
	out := make([]uint64, 0, n)
	prev := uint64(0)
	for i := uint64(0); i < n; i++ {
		d, k := binary.Uvarint(data)
		if k <= 0 {
			return nil, fmt.Errorf("%w: seen chunk key %d of %d", errBadEncoding, i, n)
		}
		if i > 0 && (d == 0 || prev+d < prev) {
			return nil, fmt.Errorf("%w: seen chunk key %d of %d not above the one before", errBadEncoding, i, n)
		}
		prev += d
		out = append(out, prev)
		data = data[k:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes in seen chunk", errBadEncoding, len(data))
	}
	return out, nil
}

// cursor is the decoded data of R/backlog/<g>: the owner's record of the
// group's live batches (with which records were moved to the ready window)
// and seen chunks.
type cursorState struct {
	nonce     uint64 // random, new with every write: tells an ambiguous commit
	nextBatch uint64 // number of the next b-NNNNNNNNNN
	nextChunk uint64 // number of the next s-NNNNNNNNNN
	batches   []batchState
	chunks    []chunkState
	annex     []byte // the owner's opaque bytes (Step.Annex); never modified in place
}

// batchState is one live batch in the cursor.
type batchState struct {
	seq   uint64
	count int
	moved []byte // bitmap of count bits, record i moved when bit i is set
}

// chunkState is one seen chunk in the cursor.
type chunkState struct {
	seq   uint64
	count int
}

func (b *batchState) isMoved(i int) bool { return b.moved[i/8]&(1<<(i%8)) != 0 }
func (b *batchState) setMoved(i int)     { b.moved[i/8] |= 1 << (i % 8) }

// allMoved reports whether every record of b was moved.
func (b *batchState) allMoved() bool {
	for i := 0; i < b.count; i++ {
		if !b.isMoved(i) {
			return false
		}
	}
	return true
}

// grow extends b to n records (new records unmoved).
func (b *batchState) grow(n int) {
	for len(b.moved)*8 < n {
		b.moved = append(b.moved, 0)
	}
	b.count = n
}

// clone returns a deep copy of s.
func (s cursorState) clone() cursorState {
	out := s
	out.batches = make([]batchState, len(s.batches))
	for i, b := range s.batches {
		b.moved = slices.Clone(b.moved)
		out.batches[i] = b
	}
	out.chunks = slices.Clone(s.chunks)
	return out
}

// Cursor formats: 3 is 2 followed by the annex (uvarint length, bytes); a
// cursor without an annex is written as format 2, as before annexes.
const (
	cursorFormat      = 2
	cursorFormatAnnex = 3
)

// encodeCursor returns flate(format byte, nonce, nextBatch, nextChunk,
// batches (seq, count, bitmap), chunks (seq, count)[, annex]), integers as
// uvarints.
func encodeCursor(s cursorState) []byte {
	out := []byte{cursorFormat}
	if len(s.annex) > 0 {
		out[0] = cursorFormatAnnex
	}
	out = binary.AppendUvarint(out, s.nonce)
	out = binary.AppendUvarint(out, s.nextBatch)
	out = binary.AppendUvarint(out, s.nextChunk)
	out = binary.AppendUvarint(out, uint64(len(s.batches)))
	for _, b := range s.batches {
		out = binary.AppendUvarint(out, b.seq)
		out = binary.AppendUvarint(out, uint64(b.count))
		out = append(out, b.moved[:(b.count+7)/8]...)
	}
	out = binary.AppendUvarint(out, uint64(len(s.chunks)))
	for _, c := range s.chunks {
		out = binary.AppendUvarint(out, c.seq)
		out = binary.AppendUvarint(out, uint64(c.count))
	}
	if len(s.annex) > 0 {
		out = binary.AppendUvarint(out, uint64(len(s.annex)))
		out = append(out, s.annex...)
	}
	return deflate(out)
}

// decodeCursor parses encodeCursor's output; empty data is a new group.
func decodeCursor(data []byte) (cursorState, error) {
	var s cursorState
	if len(data) == 0 {
		return s, nil
	}
	raw, err := inflate(data)
	if err != nil {
		return s, err
	}
	if len(raw) == 0 || (raw[0] != cursorFormat && raw[0] != cursorFormatAnnex) {
		return s, fmt.Errorf("%w: cursor format %v, want %d or %d", errBadEncoding, raw[:min(1, len(raw))], cursorFormat, cursorFormatAnnex)
	}
	r := raw[1:]
	next := func() uint64 {
		if err != nil {
			return 0
		}
		v, k := binary.Uvarint(r)
		if k <= 0 {
			err = fmt.Errorf("%w: truncated cursor", errBadEncoding)
			return 0
		}
		r = r[k:]
		return v
	}
	s.nonce, s.nextBatch, s.nextChunk = next(), next(), next()
	nb := next()
	for i := uint64(0); i < nb && err == nil; i++ {
		b := batchState{seq: next(), count: int(next())}
		n := (b.count + 7) / 8
		if err != nil || b.count < 0 || n > len(r) {
			return s, fmt.Errorf("%w: cursor batch %d bitmap", errBadEncoding, i)
		}
		b.moved, r = slices.Clone(r[:n]), r[n:]
		s.batches = append(s.batches, b)
	}
	nc := next()
	for i := uint64(0); i < nc && err == nil; i++ {
		s.chunks = append(s.chunks, chunkState{seq: next(), count: int(next())})
	}
	if raw[0] == cursorFormatAnnex && err == nil {
		s.annex, r, err = decodeAnnex(r)
	}
	if err == nil && len(r) != 0 {
		err = fmt.Errorf("%w: %d trailing bytes in cursor", errBadEncoding, len(r))
	}
	return s, err
}

// flateWriters pools flate writers: a new one allocates several hundred
// KiB of tables, too much for every group step.
var flateWriters = sync.Pool{New: func() any {
	zw, _ := flate.NewWriter(nil, flate.BestSpeed) // error only for a bad level
	return zw
}}

// bestWriters pools the flate writers of full batches (encodeBatch).
var bestWriters = sync.Pool{New: func() any {
	zw, _ := flate.NewWriter(nil, flate.BestCompression) // error only for a bad level
	return zw
}}

var flateReaders = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

func deflate(raw []byte) []byte { return deflateLevel(raw, flate.BestSpeed) }

// deflateLevel compresses raw at flate.BestSpeed or flate.BestCompression.
func deflateLevel(raw []byte, level int) []byte {
	pool := &flateWriters
	if level == flate.BestCompression {
		pool = &bestWriters
	}
	var buf bytes.Buffer
	zw := pool.Get().(*flate.Writer)
	zw.Reset(&buf)
	zw.Write(raw)
	zw.Close()
	pool.Put(zw)
	return buf.Bytes()
}

func inflate(data []byte) ([]byte, error) {
	zr := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(zr)
	if err := zr.(flate.Resetter).Reset(bytes.NewReader(data), nil); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadEncoding, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecodedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadEncoding, err)
	}
	if len(raw) > maxDecodedBytes {
		return nil, fmt.Errorf("%w: more than %d bytes decompressed", errBadEncoding, maxDecodedBytes)
	}
	return raw, nil
}
