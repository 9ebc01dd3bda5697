package frontier

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// encodeKeysV1 is the seen chunk encoder before Elias-Fano (uvarint n,
// then the uvarint gaps between sorted keys, the first from 0), kept here
// to make chunks of that form: existing crawls hold them and decodeKeys
// must still read them.
func encodeKeysV1(keys []uint64) []byte {
	out := make([]byte, 0, 8*len(keys)+binary.MaxVarintLen64)
	out = binary.AppendUvarint(out, uint64(len(keys)))
	prev := uint64(0)
	for _, k := range keys {
		out = binary.AppendUvarint(out, k-prev)
		prev = k
	}
	return out
}

// uniformKeys returns n distinct uniform 64-bit keys, sorted: the
// fingerprints of a seen chunk.
func uniformKeys(seed uint64, n int) []uint64 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	keys := make([]uint64, 0, n)
	for len(keys) < n {
		for len(keys) < n {
			keys = append(keys, rng.Uint64())
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
	}
	return keys
}

// keyRun returns n consecutive keys from first.
func keyRun(first uint64, n int) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = first + uint64(i)
	}
	return keys
}

// seenChunkCases are sorted distinct key lists of every shape a chunk may
// take, by name.
func seenChunkCases() map[string][]uint64 {
	return map[string][]uint64{
		"empty":            {},
		"one":              uniformKeys(1, 1),
		"two":              uniformKeys(2, 2),
		"zero":             {0},
		"max":              {math.MaxUint64},
		"zero and max":     {0, math.MaxUint64},
		"100 uniform":      uniformKeys(3, 100),
		"full uniform":     uniformKeys(4, chunkKeys),
		"dense from 0":     keyRun(0, chunkKeys),
		"dense from 2^40":  keyRun(1<<40, 1000),
		"all high":         keyRun(math.MaxUint64-chunkKeys+1, chunkKeys),
		"two runs":         append(keyRun(7, 50), keyRun(1<<63, 50)...),
		"small and sparse": {1, 2, 1 << 20, 1<<20 + 1, 1 << 62},
	}
}

// Every shape round-trips in the Elias-Fano form; a full chunk of uniform
// keys takes 54 bits a key, and the worst full chunk (its largest key
// near 2^64) the 27,653 bytes chunkKeys' comment states.
func TestSeenChunkRoundTrip(t *testing.T) {
	for name, keys := range seenChunkCases() {
		data := encodeKeys(keys)
		if data[0] != 0 || data[1] != keysEliasFano {
			t.Fatalf("%s: chunk starts % x, want 00 %x", name, data[:2], keysEliasFano)
		}
		got, err := decodeKeys(data)
		if err != nil || !slices.Equal(got, keys) {
			t.Fatalf("%s: %d keys came back as %d (%v)", name, len(keys), len(got), err)
		}
	}
	if got := len(encodeKeys(uniformKeys(4, chunkKeys))); got != 5+chunkKeys*54/8 {
		t.Errorf("full chunk of uniform keys: %d bytes, want %d (54 bits a key and 5 of header)", got, 5+chunkKeys*54/8)
	}
	if got := len(encodeKeys(keyRun(math.MaxUint64-chunkKeys+1, chunkKeys))); got != 27653 {
		t.Errorf("full chunk of the highest keys: %d bytes, want 27,653", got)
	}
	if got := len(encodeKeys(keyRun(0, chunkKeys))); got != 5+2*chunkKeys/8 {
		t.Errorf("full chunk of keys 0 to %d: %d bytes, want 2 bits a key", chunkKeys-1, got)
	}
	// The bytes of one chunk, fixed: ZooKeeper keeps them across versions.
	if got, want := encodeKeys([]uint64{5, 6, 134}), []byte{0, 'E', 3, 5, 0xc5, 0x98, 0x21}; !slices.Equal(got, want) {
		t.Errorf("chunk of 5, 6, 134: % x, want % x", got, want)
	}
}

// Chunks of the earlier form (uvarint gaps), as existing crawls hold
// them, still decode: every shape, the empty chunk (the single byte 0),
// a gap of 10 bytes, and bytes written out by hand.
func TestSeenChunkEarlierForm(t *testing.T) {
	for name, keys := range seenChunkCases() {
		got, err := decodeKeys(encodeKeysV1(keys))
		if err != nil || !slices.Equal(got, keys) {
			t.Fatalf("%s: %d keys came back as %d (%v)", name, len(keys), len(got), err)
		}
	}
	wide := encodeKeysV1([]uint64{1, math.MaxUint64})
	if len(wide) != 1+1+10 {
		t.Fatalf("earlier form of 1, 2^64-1: %d bytes, want a 10-byte gap", len(wide))
	}
	if got, err := decodeKeys(wide); err != nil || !slices.Equal(got, []uint64{1, math.MaxUint64}) {
		t.Fatalf("10-byte gap: %v, %v", got, err)
	}
	if got, err := decodeKeys([]byte{0}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("earlier empty chunk: %v, %v", got, err)
	}
	if got, err := decodeKeys([]byte{3, 5, 1, 0x80, 0x01}); err != nil || !slices.Equal(got, []uint64{5, 6, 134}) {
		t.Fatalf("earlier chunk of 5, 6, 134: %v, %v", got, err)
	}
}

// Corrupt or hostile chunks of either form are refused with an error that
// wraps errBadEncoding and names what is wrong.
func TestSeenChunkCorrupt(t *testing.T) {
	full := encodeKeys(uniformKeys(4, chunkKeys))
	small := encodeKeys([]uint64{5, 6, 134})
	padded := slices.Clone(small)
	padded[len(padded)-1] |= 0x80
	overflow := append([]byte{0, 'E', 1, 63}, make([]byte, 8)...)
	overflow = append(overflow, 0x02) // high part 2 of a key with 63 low bits
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"nothing", "key count", nil},
		{"unknown format", "format 'X'", []byte{0, 'X', 0}},
		{"no count", "key count", []byte{0, 'E'}},
		{"bytes after no keys", "0 keys in 1 bytes", []byte{0, 'E', 0, 0}},
		{"keys and no bytes", "1 keys in 0 bytes", []byte{0, 'E', 1}},
		{"low bits over 63", "low bits 64", []byte{0, 'E', 1, 64, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"count past the bits", "9 keys, 0 low bits each, in 1 bytes", []byte{0, 'E', 9, 0, 0xff}},
		{"huge count", "keys, 0 low bits each", []byte{0, 'E', 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0xff}},
		{"truncated", "truncated at key", full[:len(full)-1]},
		{"trailing byte", "trailing bits", append(slices.Clone(full), 0)},
		{"padding bit set", "trailing bits", padded},
		{"duplicate", "key 1 of 2 not above", encodeKeys([]uint64{7, 7})},
		{"descending", "key 1 of 2 not above", []byte{0, 'E', 2, 1, 0x0d}},
		{"key over 64 bits", "key 0 of 1 over 64 bits", overflow},
		{"earlier form, count past the bytes", "key count", []byte{5, 1}},
		{"earlier form, truncated", "key 1 of 2", []byte{2, 5}},
		{"earlier form, duplicate", "key 1 of 2 not above", []byte{2, 5, 0}},
		{"earlier form, past 2^64", "key 1 of 2 not above", append(binary.AppendUvarint([]byte{2}, math.MaxUint64), 1)},
		{"earlier form, trailing byte", "1 trailing bytes", []byte{1, 5, 0}},
	} {
		got, err := decodeKeys(c.data)
		if !errors.Is(err, errBadEncoding) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, %v; want errBadEncoding naming %q", c.name, got, err, c.want)
		}
	}
}

// decodeKeys never panics, allocates no more keys than 8 a byte, and what
// it accepts is ascending and distinct and re-encodes to the same keys.
func FuzzDecodeKeys(f *testing.F) {
	for _, keys := range seenChunkCases() {
		if len(keys) <= 100 {
			f.Add(encodeKeys(keys))
			f.Add(encodeKeysV1(keys))
		}
	}
	f.Add([]byte{0, 'E', 2, 1, 0x0d})
	f.Add([]byte{0, 'E', 1, 63, 0, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := decodeKeys(data)
		if err != nil {
			if !errors.Is(err, errBadEncoding) {
				t.Fatalf("error %v does not wrap errBadEncoding", err)
			}
			return
		}
		if len(keys) > 8*len(data) {
			t.Fatalf("%d keys from %d bytes", len(keys), len(data))
		}
		for i := 1; i < len(keys); i++ {
			if keys[i] <= keys[i-1] {
				t.Fatalf("key %d (%d) not above key %d (%d)", i, keys[i], i-1, keys[i-1])
			}
		}
		if back, err := decodeKeys(encodeKeys(keys)); err != nil || !slices.Equal(back, keys) {
			t.Fatalf("re-encoded %d keys came back as %d (%v)", len(keys), len(back), err)
		}
	})
}

// seenChunkForms are the two seen chunk encoders, by name.
var seenChunkForms = []struct {
	name   string
	encode func([]uint64) []byte
}{{"uvarint", encodeKeysV1}, {"elias-fano", encodeKeys}}

// BenchmarkSeenChunkDecode decodes a full chunk of uniform keys in the
// earlier form and in Elias-Fano (what a group load does per chunk).
// Run: go test -run '^$' -bench SeenChunk ./frontier/
func BenchmarkSeenChunkDecode(b *testing.B) {
	keys := uniformKeys(4, chunkKeys)
	for _, f := range seenChunkForms {
		b.Run("form="+f.name, func(b *testing.B) {
			data := f.encode(keys)
			for b.Loop() {
				if _, err := decodeKeys(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
			b.ReportMetric(float64(len(data))/float64(len(keys)), "B/key")
		})
	}
}

// BenchmarkSeenChunkEncode encodes a full chunk of uniform keys in both
// forms (a step that folds keys writes its newest chunk again).
func BenchmarkSeenChunkEncode(b *testing.B) {
	keys := uniformKeys(4, chunkKeys)
	for _, f := range seenChunkForms {
		b.Run("form="+f.name, func(b *testing.B) {
			for b.Loop() {
				f.encode(keys)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
		})
	}
}

// TestBatchForms: an open batch (rewritten whole at every append) is
// written flate-compressed, a full one too, and both decode to the records,
// as does an open batch of the earlier raw form (crawls hold such batches).
func TestBatchForms(t *testing.T) {
	var records [][]byte
	for i := range 400 {
		rec, err := Item{URL: "https://www.example.org/docs/section-" + strings.Repeat("x", i%7) + "/page.html", Via: "https://www.example.org/docs/", Depth: 3}.Record()
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, rec)
	}
	raw := encodeRecordsLevel(records, 0)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"open", encodeBatch(records, false)}, {"full", encodeBatch(records, true)}, {"raw (earlier open form)", raw}} {
		got, err := decodeRecords(tc.data)
		if err != nil || !slices.EqualFunc(got, records, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Errorf("%s: decode = %d records, %v; want the %d records", tc.name, len(got), err, len(records))
		}
		if tc.name != "raw (earlier open form)" && (tc.data[0] != recordsFlate || len(tc.data) > len(raw)/3) {
			t.Errorf("%s: %d bytes, format %q; want flate, at most a third of the raw %d", tc.name, len(tc.data), tc.data[0], len(raw))
		}
	}
}
