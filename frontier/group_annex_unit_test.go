package frontier

import (
	"bytes"
	"errors"
	"testing"

	"github.com/zkcrawl/zkcrawl/coord"
)

// A cursor without an annex is written in format 2, byte for byte as
// before annexes, so older workers and every existing layout 2 crawl read
// it; a format 3 cursor round-trips its annex, and a truncated annex is
// refused.
func TestCursorAnnexFormats(t *testing.T) {
	base := cursorState{nonce: 7, nextBatch: 3, nextChunk: 1,
		batches: []batchState{{seq: 2, count: 9, moved: []byte{0x0f, 0x01}}},
		chunks:  []chunkState{{seq: 0, count: 40}}}
	old := encodeCursor(base)
	raw, err := inflate(old)
	if err != nil || raw[0] != cursorFormat {
		t.Fatalf("cursor without annex: format %v (%v), want %d", raw[:1], err, cursorFormat)
	}
	got, err := decodeCursor(old)
	if err != nil || got.annex != nil || got.nonce != 7 || len(got.batches) != 1 || got.batches[0].count != 9 {
		t.Fatalf("format 2 cursor decoded as %+v, %v", got, err)
	}
	with := base
	with.annex = []byte("host counts")
	got, err = decodeCursor(encodeCursor(with))
	if err != nil || !bytes.Equal(got.annex, with.annex) || len(got.chunks) != 1 || got.chunks[0].count != 40 {
		t.Fatalf("format 3 cursor decoded as %+v, %v", got, err)
	}
	raw, _ = inflate(encodeCursor(with))
	if _, err := decodeCursor(deflate(raw[:len(raw)-2])); !errors.Is(err, errBadEncoding) {
		t.Fatalf("truncated annex: %v, want errBadEncoding", err)
	}
}

// applyDropAnnex marks dropped records moved, refuses a record that is not
// pending and an oversized annex, and an empty non-nil annex removes it.
func TestApplyDropAnnex(t *testing.T) {
	next := cursorState{batches: []batchState{{seq: 1, count: 3, moved: []byte{0x01}}}, annex: []byte("a")}
	if err := next.applyDropAnnex(Step{Drop: []Ref{{Batch: 1, Index: 1}}}); err != nil {
		t.Fatal(err)
	}
	if !next.batches[0].isMoved(1) || next.batches[0].isMoved(2) || string(next.annex) != "a" {
		t.Fatalf("after the drop: %+v", next)
	}
	for _, r := range []Ref{{Batch: 1, Index: 0}, {Batch: 1, Index: 1}, {Batch: 1, Index: 3}, {Batch: 2}} {
		if err := next.applyDropAnnex(Step{Drop: []Ref{r}}); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Errorf("drop of %v: %v, want ErrInvalidArgument", r, err)
		}
	}
	if err := next.applyDropAnnex(Step{Annex: make([]byte, maxAnnexBytes+1)}); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Errorf("oversized annex: %v, want ErrInvalidArgument", err)
	}
	if err := next.applyDropAnnex(Step{Annex: []byte{}}); err != nil || next.annex != nil {
		t.Fatalf("empty annex: %v, annex %q", err, next.annex)
	}
}
