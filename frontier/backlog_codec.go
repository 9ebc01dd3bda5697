package frontier

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
// an inbox post (compressed) and of a backlog batch (raw while it is the
// group's open batch and grows with every step, compressed once when it is
// full, so a step never re-compresses a growing batch).
func encodeRecords(records [][]byte, compress bool) []byte {
	level := 0
	if compress {
		level = flate.BestSpeed
	}
	return encodeRecordsLevel(records, level)
}

// encodeBatch returns a backlog batch's data: raw while it is open, and
// once full (compressed once, never rewritten but by a compaction)
// flate.BestCompression, about 6% smaller than BestSpeed for schedule
// entries (docs/design.md, "Recrawl").
func encodeBatch(records [][]byte, full bool) []byte {
	if !full {
		return encodeRecordsLevel(records, 0)
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

// encodeKeys returns sorted keys as uvarint n followed by the uvarint gaps
// between consecutive keys (the first gap from 0): a seen chunk. keys must
// be sorted and free of duplicates.
func encodeKeys(keys []uint64) []byte {
	out := make([]byte, 0, 8*len(keys)+binary.MaxVarintLen64)
	out = binary.AppendUvarint(out, uint64(len(keys)))
	prev := uint64(0)
	for _, k := range keys {
		out = binary.AppendUvarint(out, k-prev)
		prev = k
	}
	return out
}

// decodeKeys parses encodeKeys' output. Errors wrap errBadEncoding.
func decodeKeys(data []byte) ([]uint64, error) {
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
