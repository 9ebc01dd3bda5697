package storage

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A resource record follows its page's response in the same file: its
// type, target, media type, WARC-Concurrent-To and digests are as given,
// its block byte for byte; bad input is refused before anything is
// written.
func TestWriteResource(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	page, err := w.WriteExchange(testExchange(0, []byte("<p>page</p>")))
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	info, err := w.WriteResource(Resource{TargetURI: "urn:screenshot:http://example.com/0", ContentType: "image/png", ConcurrentTo: page.RecordID, Block: png})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Resource{{ContentType: "image/png"}, {TargetURI: "urn:x y", ContentType: "image/png"}, {TargetURI: "urn:x"}} {
		if _, err := w.WriteResource(bad); !errors.Is(err, ErrBadExchange) {
			t.Errorf("WriteResource(%+v): %v, want ErrBadExchange", bad, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcFiles(t, dir)
	if len(files) != 1 || info.File != page.File {
		t.Fatalf("files %v, resource in %s, page in %s", files, info.File, page.File)
	}
	recs := readAll(t, files[0])
	last := recs[len(recs)-1]
	if len(recs) != 4 || last.Offset != info.Offset {
		t.Fatalf("%d records (want warcinfo, request, response, resource); last at %d, info says %d", len(recs), last.Offset, info.Offset)
	}
	for k, v := range map[string]string{
		"WARC-Type": TypeResource, "WARC-Target-URI": "urn:screenshot:http://example.com/0", "Content-Type": "image/png",
		"WARC-Concurrent-To": page.RecordID, "WARC-Record-ID": info.RecordID, "WARC-Block-Digest": Digest(png), "WARC-Payload-Digest": Digest(png),
		"WARC-Warcinfo-ID": recs[0].Get("WARC-Record-ID"),
	} {
		if got := last.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	idx, err := os.ReadFile(strings.TrimSuffix(files[0], ".warc.gz") + ".cdxj")
	if err != nil {
		t.Fatal(err)
	}
	want := `urn:screenshot:http://example.com/0 ` + strings.TrimRight(strings.NewReplacer("-", "", ":", "", "T", "").Replace(last.Get("WARC-Date")), "Z")[:14] +
		` {"url":"urn:screenshot:http://example.com/0","mime":"image/png","digest":"` + strings.TrimPrefix(Digest(png), "sha1:") + `","length":"` +
		strconv.FormatInt(info.Length, 10) + `","offset":"` + strconv.FormatInt(info.Offset, 10) + `","filename":"` + info.File + `"}`
	if !strings.Contains(string(idx), want+"\n") {
		t.Errorf("CDXJ index lacks the resource's line (as warcio.js writes it)\n%s\nwant\n%s", idx, want)
	}
	if !bytes.Equal(last.Block, png) {
		t.Errorf("block %q, want %q", last.Block, png)
	}
}
