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
		{Time: at, Digest: "0123456789ab", LastModified: at.Add(-time.Hour), IntervalS: 3600, Fetched: at.Add(25 * time.Hour)},
		{Time: at, Digest: "ba9876543210", Fetched: at.Add(time.Minute)},
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
		if !got.Time.Equal(c.Time) || got.Digest != c.Digest || got.ETag != wantETag || !got.LastModified.Equal(c.LastModified) || got.Changed != c.Changed ||
			!got.LastFetch().Equal(c.LastFetch()) {
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

// A record keeps the last fetch to the second when it is under an hour
// after the capture, else in whole minutes, rounded up: never earlier than
// the fetch, under a minute later. A record
// of the earlier form (an 8-byte digest, the last fetch in seconds) still
// decodes to what it held.
func TestRecordPrevFetchedAndEarlierForm(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, d := range []time.Duration{time.Second, 59 * time.Second, 61 * time.Second, time.Hour - time.Second, time.Hour,
		36*time.Hour + 7*time.Second} {
		for _, digest := range []string{"", "0123456789ab"} {
			c := Capture{Time: at, Digest: digest, Fetched: at.Add(d)}
			rec, err := Item{URL: "http://example.com/", Prev: &c}.Record()
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			got := back.Prev.Fetched
			exact := d < time.Hour
			if got.Before(c.Fetched) || got.Sub(c.Fetched) >= time.Minute || exact && !got.Equal(c.Fetched) ||
				!exact && got.Sub(at)%time.Minute != 0 {
				t.Errorf("fetched %v after the capture came back %v after", d, got.Sub(at))
			}
		}
	}
	// The earlier form: the same encoder with an 8-byte digest writes it
	// (prevForm2 clear): the digest stays 16 digits, the fetch in seconds.
	c := Capture{Time: at, Digest: "0123456789abcdef", Fetched: at.Add(90061 * time.Second), IntervalS: 86400}
	rec, err := Item{URL: "http://example.com/", Prev: &c}.Record()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRecord(rec)
	if err != nil || back.Prev.Digest != c.Digest || !back.Prev.Fetched.Equal(c.Fetched) {
		t.Fatalf("earlier form: %+v, %v", back.Prev, err)
	}
	sum := "sha1:AEBAGBAFAYDQQCIKBMGA2DQPCAIREEYU" // bytes 01 02 03 ... 14
	if p := DigestPrefix(sum); p != "0102030405060708090a0b0c0d0e0f1011121314"[:2*DigestBytes] {
		t.Fatalf("DigestPrefix = %q", p)
	}
	for kept, want := range map[string]bool{"010203040506": true, "0102030405060708": true, "010203040507": false,
		"": false, "01": true, "0102030405060708090a0b0c0d0e0f101112131415": false} {
		if got := SameDigest(sum, kept); got != want {
			t.Errorf("SameDigest(%q) = %v, want %v", kept, got, want)
		}
	}
	if SameDigest("md5:abc", "010203040506") {
		t.Error("SameDigest of another form")
	}
}

// A sitemap changefreq travels in records and JSON; anything but the
// protocol's values is refused.
func TestRecordChangefreq(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, cf := range changefreqs[1:] {
		for _, prev := range []*Capture{nil, {Time: at, Digest: "0123456789ab"}} {
			it := Item{URL: "http://example.com/", Changefreq: cf, Prev: prev}
			rec, err := it.Record()
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeRecord(rec)
			if err != nil || back.Changefreq != cf || (back.Prev == nil) != (prev == nil) {
				t.Fatalf("%s: %+v, %v", cf, back, err)
			}
			if prev != nil && (!recordHasPrev(rec) || RecordFolds(rec)) {
				t.Fatalf("%s: the prev field is not found before the changefreq", cf)
			}
			js, err := back.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if b2, err := DecodeItem(js); err != nil || b2.Changefreq != cf {
				t.Fatalf("%s: JSON %s: %+v, %v", cf, js, b2, err)
			}
		}
	}
	for _, cf := range []string{"Daily", "fortnightly", " daily"} {
		if _, err := (Item{URL: "http://example.com/", Changefreq: cf}).Record(); !errors.Is(err, ErrBadItem) {
			t.Errorf("changefreq %q: err %v", cf, err)
		}
	}
	rec, _ := Item{URL: "http://example.com/", Changefreq: "daily"}.Record()
	rec[len(rec)-1] = 9
	if _, err := DecodeRecord(rec); !errors.Is(err, ErrBadItem) {
		t.Errorf("bad changefreq code: err %v", err)
	}
}

func TestRecordPrevRejects(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for name, c := range map[string]Capture{
		"time before epoch":  {Time: time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)},
		"time zero":          {},
		"digest short":       {Time: at, Digest: "abc"},
		"digest upper":       {Time: at, Digest: "0123456789ABCDEF"},
		"digest 14 digits":   {Time: at, Digest: "0123456789abcd"},
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
	bad[len(good)-5] = prevForm2 | prevDigest | prevETag | prevLastMod // 4 bytes left: not a digest and the rest
	if _, err := DecodeRecord(bad); !errors.Is(err, ErrBadItem) {
		t.Errorf("flags past the data: err %v", err)
	}
	if _, err := DecodeItem([]byte(`{"url":"http://example.com/","depth":0,"via":"","attempts":0,"prev":{"time":"2026-01-01T00:00:00Z","digest":"xyz"}}`)); !errors.Is(err, ErrBadItem) {
		t.Errorf("DecodeItem bad digest: err %v", err)
	}
}
