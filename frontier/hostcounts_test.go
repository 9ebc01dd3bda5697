package frontier

import (
	"errors"
	"testing"
)

// HostCounts round-trips, writes nothing when empty, decodes empty data as
// zero counts (a cursor of a crawl without budgets), refuses bad data, and
// Trim forgets the smallest counts first.
func TestHostCounts(t *testing.T) {
	if b := (HostCounts{Pages: map[uint64]int64{1: 0}}).Encode(); b != nil {
		t.Fatalf("empty counts encode as %x, want nil", b)
	}
	zero, err := DecodeHostCounts(nil)
	if err != nil || len(zero.Pages) != 0 || zero.Held != 0 {
		t.Fatalf("no annex: %+v, %v", zero, err)
	}
	a, b := HostID("a.example:80"), HostID("b.example:80")
	if a == b {
		t.Fatal("two hosts share a HostID")
	}
	h := HostCounts{Pages: map[uint64]int64{a: 10, b: 3, 5: 1}, Held: 40, AtBudget: 1}
	data := h.Encode()
	got, err := DecodeHostCounts(data)
	if err != nil || got.Held != 40 || got.AtBudget != 1 || len(got.Pages) != 3 || got.Pages[a] != 10 || got.Pages[b] != 3 || got.Pages[5] != 1 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if held, at, err := DecodeHostTotals(data); err != nil || held != 40 || at != 1 {
		t.Fatalf("totals alone: %d, %d, %v; want 40, 1", held, at, err)
	}
	if _, _, err := DecodeHostTotals([]byte{9, 0, 0}); !errors.Is(err, errHostCounts) {
		t.Errorf("totals of an unknown format: %v, want errHostCounts", err)
	}
	if _, _, err := DecodeHostTotals([]byte{1, 0x80}); !errors.Is(err, errHostCounts) {
		t.Errorf("truncated totals: %v, want errHostCounts", err)
	}
	for name, bad := range map[string][]byte{
		"format":   {9, 0, 0, 0},
		"truncate": data[:len(data)-1],
		"trailing": append(append([]byte{}, data...), 0),
		"too many": {1, 0, 0, 200, 1},
		"repeat":   {1, 0, 0, 2, 5, 1, 0, 1},
	} {
		if _, err := DecodeHostCounts(bad); !errors.Is(err, errHostCounts) {
			t.Errorf("%s: %v, want errHostCounts", name, err)
		}
	}
	if n := got.Trim(2); n != 1 || len(got.Pages) != 2 || got.Pages[5] != 0 || got.Pages[a] != 10 {
		t.Fatalf("Trim(2) forgot %d: %v", n, got.Pages)
	}
	big := HostCounts{Pages: map[uint64]int64{}}
	for i := range MaxHostCounts {
		big.Pages[HostID(string(rune(i)))] = 1_000_000
	}
	if n := len(big.Encode()); n > 100<<10 {
		t.Fatalf("%d hosts encode to %d bytes, more than 100 KiB", MaxHostCounts, n)
	}
}
