package frontier

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestItemRoundTrip(t *testing.T) {
	nb := time.Date(2025, 3, 1, 12, 30, 0, 123000000, time.FixedZone("CET", 3600))
	for _, it := range []Item{
		{URL: "http://example.com/", Depth: 0},
		{URL: "http://example.com/a", Depth: 3, Via: "http://example.com/", Attempts: 2, NotBefore: nb},
	} {
		b, err := it.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", it, err)
		}
		got, err := DecodeItem(b)
		if err != nil {
			t.Fatalf("DecodeItem(%s): %v", b, err)
		}
		if got.URL != it.URL || got.Depth != it.Depth || got.Via != it.Via || got.Attempts != it.Attempts || !got.NotBefore.Equal(it.NotBefore) {
			t.Fatalf("round trip: %+v -> %s -> %+v", it, b, got)
		}
		if it.NotBefore.IsZero() && strings.Contains(string(b), "not_before") {
			t.Errorf("zero not_before encoded: %s", b)
		}
	}
	b, _ := Item{URL: "http://x/", NotBefore: nb}.Encode()
	if want := `{"url":"http://x/","depth":0,"via":"","attempts":0,"not_before":"2025-03-01T11:30:00.123Z"}`; string(b) != want {
		t.Errorf("Encode = %s, want %s", b, want)
	}
}

func TestDecodeItemErrors(t *testing.T) {
	cases := []struct{ data, want string }{
		{``, "unexpected end"},
		{`null`, "not a JSON object"},
		{`[]`, "cannot unmarshal"},
		{`{"depth":1}`, "missing url"},
		{`{"url":""}`, "missing url"},
		{`{"url":"http://x/","depth":-1}`, "negative depth"},
		{`{"url":"http://x/","attempts":-3}`, "negative attempts"},
		{`{"url":"http://x/","extra":1}`, `unknown field "extra"`},
		{`{"URL":"http://x/"}`, `unknown field "URL"`},
		{`{"url":"http://x/","depth":"1"}`, "cannot unmarshal"},
		{`{"url":"http://x/","depth":1.5}`, "cannot unmarshal"},
		{`{"url":"http://x/","not_before":"yesterday"}`, "cannot parse"},
		{`{"url":"http://x/"} {}`, "invalid character"},
		{`{"url":"http://x/","via":"` + strings.Repeat("a", MaxItemBytes) + `"}`, "limit"},
	}
	for _, c := range cases {
		_, err := DecodeItem([]byte(c.data))
		if err == nil || !errors.Is(err, ErrBadItem) || !strings.Contains(err.Error(), c.want) {
			short := c.data
			if len(short) > 60 {
				short = short[:60]
			}
			t.Errorf("DecodeItem(%s) error = %v, want ErrBadItem mentioning %q", short, err, c.want)
		}
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	for _, it := range []Item{{}, {URL: "http://x/", Depth: -1}, {URL: "http://x/", Attempts: -1}} {
		if _, err := it.Encode(); !errors.Is(err, ErrBadItem) {
			t.Errorf("Encode(%+v) error = %v, want ErrBadItem", it, err)
		}
	}
}

func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{
		`{"url":"http://example.com/","depth":0,"via":"","attempts":0}`,
		`{"url":"http://x/","depth":2,"via":"http://y/","attempts":1,"not_before":"2025-03-01T11:30:00.123Z"}`,
		`{"url":"http://x/","not_before":"0001-01-01T00:00:00+01:00"}`,
		`{"url":"http://x/","not_before":"9999-12-31T23:59:59-01:00"}`,
		`{"url":"a","url":"b"}`, `{}`, `null`, `{"url":1}`, `{"url":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := DecodeItem(data)
		if err != nil {
			if !errors.Is(err, ErrBadItem) {
				t.Fatalf("DecodeItem(%q): error %v does not wrap ErrBadItem", data, err)
			}
			return
		}
		b, err := it.Encode()
		if err != nil {
			t.Fatalf("DecodeItem(%q) = %+v, but Encode fails: %v", data, it, err)
		}
		it2, err := DecodeItem(b)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		if it2.URL != it.URL || it2.Depth != it.Depth || it2.Via != it.Via || it2.Attempts != it.Attempts || !it2.NotBefore.Equal(it.NotBefore) {
			t.Fatalf("round trip changed the item: %+v -> %s -> %+v", it, b, it2)
		}
	})
}

// FuzzRecordToItem: whatever a record holds (site-controlled URLs, via
// URLs and sitemap lastmods among it), a record that DecodeRecord accepts
// encodes as a ready item (Encode) that DecodeItem reads back unchanged, so
// no input can turn into an undecodable ready item.
func FuzzRecordToItem(f *testing.F) {
	p := 0.5
	for _, it := range []Item{
		{URL: "http://example.com/", Depth: 1, Via: "http://example.com/sitemap.xml", Hops: "ML",
			Lastmod: "2026-11-01T10:00:00+01:00", Priority: &p},
		// The longest lastmod, of multi-byte runes.
		{URL: "http://x/", Lastmod: "x" + strings.Repeat("\u20ac", 21)},
		{URL: "http://x/?" + strings.Repeat("&", 2000), Via: "http://x/?" + strings.Repeat("&", 2000)},
		{URL: "http://x/\u2028\"\\"},
	} {
		rec, err := it.Record()
		if err != nil {
			f.Fatalf("seed %+v: %v", it, err)
		}
		f.Add(rec)
	}
	f.Add([]byte{0, 0, 9, 'h', 't', 't', 'p', ':', '/', '/', 'x', '/', 0, 2, 3, 'a', 0xe2, 0x82})
	f.Fuzz(func(t *testing.T, rec []byte) {
		it, err := DecodeRecord(rec)
		if err != nil {
			if !errors.Is(err, ErrBadItem) {
				t.Fatalf("DecodeRecord(%q): error %v does not wrap ErrBadItem", rec, err)
			}
			return
		}
		b, err := it.Encode()
		if err != nil {
			t.Fatalf("DecodeRecord(%q) = %+v, but Encode fails: %v", rec, it, err)
		}
		back, err := DecodeItem(b)
		if err != nil {
			t.Fatalf("ready item %s of record %q does not decode: %v", b, rec, err)
		}
		if back.URL != it.URL || back.Via != it.Via || back.Depth != it.Depth || back.Attempts != it.Attempts ||
			back.Hops != it.Hops || back.Lastmod != it.Lastmod || (back.Priority == nil) != (it.Priority == nil) ||
			(back.Priority != nil && *back.Priority != *it.Priority) {
			t.Fatalf("record -> item -> JSON -> item changed it: %+v -> %s -> %+v", it, b, back)
		}
	})
}

// A lastmod that is not valid UTF-8 (a byte cut inside a rune) is refused
// when the record is made, not turned into U+FFFD by JSON later.
func TestItemRefusesInvalidUTF8(t *testing.T) {
	cut := ("xx" + strings.Repeat("\u20ac", 22))[:64] // inside the 21st rune
	for _, it := range []Item{{URL: "http://x/", Lastmod: cut}, {URL: "http://x/\xff"}, {URL: "http://x/", Via: "http://y/\xc3"}} {
		if _, err := it.Record(); !errors.Is(err, ErrBadItem) {
			t.Errorf("Record(%+v): %v, want ErrBadItem", it, err)
		}
		if _, err := it.Encode(); !errors.Is(err, ErrBadItem) {
			t.Errorf("Encode(%+v): %v, want ErrBadItem", it, err)
		}
	}
}
