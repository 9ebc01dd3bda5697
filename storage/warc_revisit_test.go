package storage

import (
	"bytes"
	"testing"
)

// A response captured on the wire (chunked framing, odd header case) is
// the record block byte for byte; HTTPPayload undoes the chunking and the
// payload digest covers the de-chunked body.
func TestWriterRawResponseIsTheBlock(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	header := "HTTP/1.1 200 OK\r\ncontent-TYPE: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
	raw := header + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
	ex := testExchange(1, []byte("hello world"))
	ex.RawResponse, ex.RawResponseHeader = []byte(raw), []byte(header)
	info, err := w.WriteExchange(ex)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcFiles(t, dir)
	recs := checkFile(t, files[0])
	resp := recs[2]
	if resp.Type() != TypeResponse || resp.Offset != info.Offset {
		t.Fatalf("record 2: %s at %d, want the response at %d", resp.Type(), resp.Offset, info.Offset)
	}
	if string(resp.Block) != raw {
		t.Errorf("block %q, want the raw response %q", resp.Block, raw)
	}
	if resp.Get("WARC-Block-Digest") != Digest([]byte(raw)) {
		t.Errorf("block digest %q", resp.Get("WARC-Block-Digest"))
	}
	p, err := resp.HTTPPayload()
	if err != nil || string(p) != "hello world" {
		t.Errorf("HTTPPayload = %q, %v", p, err)
	}
	if resp.Get("WARC-Payload-Digest") != Digest(p) {
		t.Errorf("payload digest %q does not cover the de-chunked payload", resp.Get("WARC-Payload-Digest"))
	}
	bad := testExchange(2, nil)
	bad.RawResponse = []byte("garbage\r\n\r\n")
	if _, err := NewWriterMust(t, dir).WriteExchange(bad); err == nil {
		t.Error("a raw response without status line was accepted")
	}
}

// NewWriterMust opens a writer in dir or fails the test.
func NewWriterMust(t *testing.T, dir string) *Writer {
	t.Helper()
	w, err := NewWriter(dir, "test2", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// The same URL with the same payload again becomes a revisit record that
// refers to the first response; a changed payload, a truncated one or
// another URL stays a response; RevisitURLs -1 turns it off.
func TestWriterRevisit(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("<p>same</p>")
	first, err := w.WriteExchange(testExchange(1, body))
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.WriteExchange(testExchange(1, body))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := w.WriteExchange(testExchange(2, body))            // another URL
	changed, _ := w.WriteExchange(testExchange(1, []byte("new"))) // new payload
	trunc := testExchange(1, []byte("new"))
	trunc.Truncated = true
	truncated, _ := w.WriteExchange(trunc)
	if first.Revisit || !second.Revisit || other.Revisit || changed.Revisit || truncated.Revisit {
		t.Fatalf("revisit flags %v %v %v %v %v, want only the second", first.Revisit, second.Revisit, other.Revisit, changed.Revisit, truncated.Revisit)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcFiles(t, dir)
	recs := checkFile(t, files[0])
	byOffset := map[int64]*Record{}
	for _, r := range recs {
		byOffset[r.Offset] = r
	}
	rv := byOffset[second.Offset]
	if rv == nil || rv.Type() != TypeRevisit {
		t.Fatalf("no revisit record at offset %d", second.Offset)
	}
	want := map[string]string{
		"WARC-Profile":              RevisitProfile,
		"WARC-Refers-To":            first.RecordID,
		"WARC-Refers-To-Target-URI": "http://example.com/page/1",
		"WARC-Refers-To-Date":       "2025-01-02T03:04:05.000006Z",
		"WARC-Payload-Digest":       Digest(body),
		"Content-Type":              "application/http;msgtype=response",
		"WARC-Record-ID":            second.RecordID,
	}
	for k, v := range want {
		if got := rv.Get(k); got != v {
			t.Errorf("revisit %s = %q, want %q", k, got, v)
		}
	}
	if !bytes.HasPrefix(rv.Block, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(rv.Block, []byte("\r\n\r\n")) ||
		rv.Get("WARC-Block-Digest") != Digest(rv.Block) {
		t.Errorf("revisit block %q (digest %q)", rv.Block, rv.Get("WARC-Block-Digest"))
	}
	// The request record of the revisit points at it.
	found := false
	for _, r := range recs {
		if r.Type() == TypeRequest && r.Get("WARC-Concurrent-To") == second.RecordID {
			found = true
		}
	}
	if !found {
		t.Error("no request record concurrent to the revisit")
	}

	off := testOptions()
	off.RevisitURLs = -1
	w2, err := NewWriter(t.TempDir(), "test", off)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.WriteExchange(testExchange(1, body))
	if again, _ := w2.WriteExchange(testExchange(1, body)); again.Revisit {
		t.Error("RevisitURLs -1 still wrote a revisit")
	}
	if _, err := NewWriter(t.TempDir(), "test", WriterOptions{RevisitURLs: -2}); err == nil {
		t.Error("RevisitURLs -2 accepted")
	}
}
