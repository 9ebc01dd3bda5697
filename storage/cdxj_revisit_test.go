package storage

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A file holding a response and revisits of it of both profiles, asked for
// with Exchange.RevisitOf: the server-not-modified revisit has no
// WARC-Payload-Digest, and its CDXJ line no "digest", as warcio.js indexes
// it; the .cdxj equals `warcio cdx-index` for the file.
func TestCDXJRevisitProfilesMatchWarcio(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("<p>same</p>")
	first := testExchange(1, body)
	if _, err := w.WriteExchange(first); err != nil {
		t.Fatal(err)
	}
	orig := first.Date.Truncate(time.Second)
	same := testExchange(1, body)
	same.Date = first.Date.Add(time.Hour)
	same.RevisitOf = &RevisitRef{Profile: RevisitProfile, TargetURI: first.TargetURI, Date: orig}
	notMod := testExchange(1, nil)
	notMod.Date = first.Date.Add(2 * time.Hour)
	notMod.RawResponseHeader = []byte("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n")
	notMod.RevisitOf = &RevisitRef{Profile: ProfileNotModified, TargetURI: first.TargetURI, Date: orig}
	var infos []ResponseInfo
	for _, ex := range []Exchange{same, notMod} {
		info, err := w.WriteExchange(ex)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if infos[0].Profile != RevisitProfile || infos[1].Profile != ProfileNotModified {
		t.Fatalf("profiles %q, %q", infos[0].Profile, infos[1].Profile)
	}
	files := warcFiles(t, dir)
	byOff := map[int64]*Record{}
	for _, r := range checkFile(t, files[0]) {
		byOff[r.Offset] = r
	}
	for i, want := range []string{RevisitProfile, ProfileNotModified} {
		r := byOff[infos[i].Offset]
		if r == nil || r.Type() != TypeRevisit || r.Get("WARC-Profile") != want ||
			r.Get("WARC-Refers-To-Date") != "2025-01-02T03:04:05.000000Z" || r.Get("WARC-Refers-To-Target-URI") != first.TargetURI {
			t.Fatalf("record %d: %+v", i, r)
		}
		if hasDigest := r.Get("WARC-Payload-Digest") != ""; hasDigest != (want == RevisitProfile) {
			t.Errorf("%s revisit: WARC-Payload-Digest %q", want, r.Get("WARC-Payload-Digest"))
		}
	}
	ours, err := os.ReadFile(filepath.Join(dir, indexName(filepath.Base(files[0]))))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(ours), "\n"), "\n")
	if len(got) != 3 || strings.Count(string(ours), `"digest"`) != 2 {
		t.Errorf("index %q: want 3 lines, the 304's without digest", got)
	}
	warcio := os.Getenv("ZKCRAWL_WARCIO")
	if warcio == "" {
		t.Skip("!!! ZKCRAWL_WARCIO is unset: the .cdxj was NOT compared with warcio.js; " +
			"export ZKCRAWL_WARCIO=<repo>/tools/warcio/node_modules/.bin/warcio (make deps) to run this check !!!")
	}
	cmd := exec.CommandContext(context.Background(), warcio, "cdx-index", files[0])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("warcio cdx-index: %v: %s", err, stderr.String())
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("our .cdxj differs from warcio cdx-index (sorted):\nours:\n%s\nwarcio:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
