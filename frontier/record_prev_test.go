package frontier

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRecordPrevRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	cases := []Capture{
		{Time: at},
		{Time: at, Digest: "0123456789abcdef", Changed: true},
		{Time: at, Digest: "fedcba9876543210", ETag: `W/"abc"`, LastModified: at.Add(-90 * 24 * time.Hour), IntervalS: 86400},
		{Time: at, LastModified: time.Date(1995, 1, 1, 0, 0, 0, 0, time.UTC), IntervalS: 1},
		{Time: at, ETag: `"5f3a-1c"`, IntervalS: 2592000},
	}
	for _, c := range cases {
		it := Item{URL: "http://example.com/a", Depth: 2, Prev: &c}
		rec, err := it.Record()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		got := *back.Prev
		wantETag := c.ETag
		if !c.LastModified.IsZero() {
			wantETag = "" // not kept beside a Last-Modified
		}
		if !got.Time.Equal(c.Time) || got.Digest != c.Digest || got.ETag != wantETag || !got.LastModified.Equal(c.LastModified) || got.Changed != c.Changed {
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
		if d := float64(got.IntervalS - c.IntervalS); d < -0.045*float64(c.IntervalS) || d > 0.045*float64(c.IntervalS) {
			t.Fatalf("interval %d came back as %d", c.IntervalS, got.IntervalS)
		}
		if RecordFolds(rec) {
			t.Fatal("an entry with prev must not fold unless marked")
		}
		marked, err := SetRecordFold(rec, true)
		if err != nil || !RecordFolds(marked) {
			t.Fatalf("SetRecordFold: %v", err)
		}
		if b2, err := DecodeRecord(marked); err != nil || !b2.Prev.Time.Equal(c.Time) {
			t.Fatalf("marked record: %v", err)
		}
		// JSON carries it too.
		js, err := back.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeItem(js); err != nil {
			t.Fatalf("DecodeItem(%s): %v", js, err)
		}
	}
	plain, _ := Item{URL: "http://example.com/"}.Record()
	if !RecordFolds(plain) {
		t.Fatal("a new URL's record must fold")
	}
}

func TestRecordPrevRejects(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for name, c := range map[string]Capture{
		"time before epoch":  {Time: time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)},
		"time zero":          {},
		"digest short":       {Time: at, Digest: "abc"},
		"digest upper":       {Time: at, Digest: "0123456789ABCDEF"},
		"etag long":          {Time: at, ETag: strings.Repeat("x", MaxETagBytes+1)},
		"etag control":       {Time: at, ETag: "a\nb"},
		"lastmod after time": {Time: at, LastModified: at.Add(time.Hour)},
		"interval negative":  {Time: at, IntervalS: -1},
	} {
		it := Item{URL: "http://example.com/", Prev: &c}
		if _, err := it.Record(); !errors.Is(err, ErrBadItem) {
			t.Errorf("%s: Record err %v", name, err)
		}
		if _, err := it.Encode(); !errors.Is(err, ErrBadItem) {
			t.Errorf("%s: Encode err %v", name, err)
		}
	}
	good, _ := Item{URL: "http://example.com/", Prev: &Capture{Time: at, ETag: `"x"`}}.Record()
	for i := len(good) - 1; i > len(good)-9; i-- {
		if _, err := DecodeRecord(good[:i]); !errors.Is(err, ErrBadItem) {
			t.Errorf("truncated at %d: err %v", i, err)
		}
	}
	bad := append([]byte{}, good...)
	bad[len(good)-5] = 0x80 // unknown flag
	if _, err := DecodeRecord(bad); !errors.Is(err, ErrBadItem) {
		t.Errorf("unknown flag: err %v", err)
	}
	if _, err := DecodeItem([]byte(`{"url":"http://example.com/","depth":0,"via":"","attempts":0,"prev":{"time":"2026-01-01T00:00:00Z","digest":"xyz"}}`)); !errors.Is(err, ErrBadItem) {
		t.Errorf("DecodeItem bad digest: err %v", err)
	}
}
