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
