package config

import (
	"errors"
	"strings"
	"testing"
)

func TestMIMEPatternMatch(t *testing.T) {
	for pattern, cases := range map[string]map[string]bool{
		"text/html":  {"text/html": true, "TEXT/Html": true, "text/plain": false, "application/xhtml+xml": false},
		" Image/* ":  {"image/png": true, "image/svg+xml": true, "video/mp4": false, "image": false},
		"*/*":        {"video/mp4": true, "application/octet-stream": true},
		"video/mp4":  {"video/mp4": true, "video/webm": false},
		"text/x-foo": {"text/x-foo": true},
	} {
		p, err := ParseMIMEPattern(pattern)
		if err != nil {
			t.Fatalf("%q: %v", pattern, err)
		}
		for mt, want := range cases {
			if got := p.Match(mt); got != want {
				t.Errorf("%q.Match(%q) = %v, want %v", pattern, mt, got, want)
			}
		}
	}
	if (MIMEPattern{}).Match("text/html") {
		t.Error("the zero MIMEPattern matched")
	}
	for _, bad := range []string{"text", "a/b/c", "", "/html", "text/", "*/html", "text/html; charset=utf-8", "te xt/html"} {
		if _, err := ParseMIMEPattern(bad); err == nil {
			t.Errorf("ParseMIMEPattern(%q) accepted", bad)
		}
	}
}

func TestContentKeys(t *testing.T) {
	c := Default()
	if len(c.AcceptMIME)+len(c.RejectMIME)+len(c.MaxBodyBytesRules) != 0 || c.ExtractJSLinks || c.ExtractPDFLinks {
		t.Fatalf("defaults: %+v", c)
	}
	doc := `{"accept_mime":["text/html","image/*"],"reject_mime":["video/*"],"max_body_bytes_rules":[{"mime":"image/*","max_bytes":2048}],"extract_js_links":true,"extract_pdf_links":true}`
	c, err := Parse([]byte(doc))
	if err != nil || len(c.AcceptMIME) != 2 || c.RejectMIME[0] != "video/*" || c.MaxBodyBytesRules[0].MaxBytes != 2048 || !c.ExtractJSLinks || !c.ExtractPDFLinks {
		t.Fatalf("parse: %+v, %v", c, err)
	}
	if back, err := Parse(c.Encode()); err != nil || back.MaxBodyBytesRules[0] != c.MaxBodyBytesRules[0] {
		t.Fatalf("encode round trip: %v", err)
	}
	enc := string(Default().Encode())
	for _, key := range []string{"accept_mime", "reject_mime", "max_body_bytes_rules"} {
		if !strings.Contains(enc, `"`+key+`": []`) {
			t.Errorf("empty %s must encode as []", key)
		}
	}
	for doc, want := range map[string]string{
		`{"accept_mime":["text"]}`:                                              `key "accept_mime": entry 0: MIME pattern "text": want type/subtype`,
		`{"reject_mime":["text/html","a/b/c"]}`:                                 `key "reject_mime": entry 1: MIME pattern "a/b/c": more than one "/"`,
		`{"reject_mime":["*/html"]}`:                                            `key "reject_mime": entry 0`,
		`{"max_body_bytes_rules":[{"mime":"video","max_bytes":2048}]}`:          `key "max_body_bytes_rules": rule 0: MIME pattern "video"`,
		`{"max_body_bytes_rules":[{"mime":"video/*","max_bytes":0}]}`:           `key "max_body_bytes_rules": rule 0 ("video/*"): max_bytes 0 is outside 1024..1073741824`,
		`{"max_body_bytes_rules":[{"mime":"video/*","max_bytes":-5}]}`:          `max_bytes -5 is outside`,
		`{"max_body_bytes_rules":[{"mime":"video/*","max_bytes":10000000000}]}`: `max_bytes 10000000000 is outside`,
		`{"max_body_bytes_rules":[{"mime":"video/*","max_bytes":2048,"x":1}]}`:  `unknown key`,
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", doc, err, want)
		}
	}
}
