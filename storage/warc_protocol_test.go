package storage

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// Protocols and CipherSuite become WARC-Protocol fields (one per value,
// in order) and WARC-Cipher-Suite on the request, response and revisit
// records; an exchange without them gets none.
func TestWriterProtocolFields(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	h2 := testExchange(1, []byte("<p>h2</p>"))
	h2.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n")
	h2.Protocols, h2.CipherSuite = []string{"h2", "tls/1.3"}, "TLS_AES_128_GCM_SHA256"
	if _, err := w.WriteExchange(h2); err != nil {
		t.Fatal(err)
	}
	rev := h2
	rev.TargetURI = "https://example.com/again"
	rev.RevisitOf = &RevisitRef{Profile: ProfileNotModified, TargetURI: h2.TargetURI, Date: time.Now()}
	if _, err := w.WriteExchange(rev); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteExchange(testExchange(2, []byte("plain"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcFiles(t, dir)
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	const want = "WARC-Protocol: h2\r\nWARC-Protocol: tls/1.3\r\nWARC-Cipher-Suite: TLS_AES_128_GCM_SHA256\r\n"
	if n := strings.Count(string(raw), want); n != 4 {
		t.Errorf("%d records carry the protocol fields, want 4 (request and response, request and revisit)", n)
	}
	if n := bytes.Count(raw, []byte("WARC-Protocol:")); n != 8 {
		t.Errorf("%d WARC-Protocol fields, want 8 (none on the plain exchange or warcinfo)", n)
	}
	for _, r := range checkFile(t, files[0]) {
		if r.Type() == TypeRevisit && r.Get("WARC-Protocol") != "h2" {
			t.Errorf("revisit record fields %v", r.Header)
		}
	}
}

func TestWriterProtocolFieldsBadInput(t *testing.T) {
	w, err := NewWriter(t.TempDir(), "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range []struct {
		protos []string
		suite  string
	}{{[]string{"h 2"}, ""}, {[]string{""}, ""}, {[]string{"h2\r\nX: y"}, ""}, {nil, "TLS AES"}, {make([]string, 9), ""}} {
		ex := testExchange(1, []byte("x"))
		ex.Protocols, ex.CipherSuite = c.protos, c.suite
		if _, err := w.WriteExchange(ex); !errors.Is(err, ErrBadExchange) {
			t.Errorf("protocols %q suite %q: err %v, want ErrBadExchange", c.protos, c.suite, err)
		}
	}
}
