package wacz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A package of three workers' folders (one with rotated WARC files and an
// unfinished .open file) verifies; its index is the merge of the .cdxj
// files; pages.jsonl lists the seeds and the HTML pages with their titles;
// datapackage.json's hashes and sizes are those of the entries.
func TestWritePackage(t *testing.T) {
	root := t.TempDir()
	d1, d2, d3 := filepath.Join(root, "w1"), filepath.Join(root, "w2"), filepath.Join(root, "w3")
	workerDir(t, d1, "w1", 0, []fetchSpec{
		{url: "https://example.com/", depth: 0, status: 200, mime: "text/html", title: "Home & <Co>", body: "<title>Home &amp; &lt;Co&gt;</title>"},
		{url: "https://example.com/logo.png", depth: 0, via: "https://example.com/", status: 200, mime: "image/png", body: "PNG"},
		{url: "https://example.com/a", depth: 1, via: "https://example.com/", status: 200, mime: "text/html", title: "A", body: "<title>A</title>"},
	})
	workerDir(t, d2, "w2", 1, []fetchSpec{ // a new WARC file per exchange
		{url: "https://example.org/", depth: 0, status: 301, mime: "text/html", body: "moved"},
		{url: "https://example.org/b", depth: 1, via: "https://example.com/", status: 200, mime: "text/html", body: "<p>untitled</p>"},
		{url: "https://example.org/gone", depth: 1, via: "https://example.com/", status: 404, mime: "text/html", body: "gone"},
		{url: "https://example.org/down", depth: 1, via: "https://example.com/", failed: true},
	})
	workerDir(t, d3, "w3", 0, []fetchSpec{
		{url: "https://example.net/", depth: 0, failed: true},
		{url: "https://example.net/c", depth: 2, via: "https://example.org/b", status: 200, mime: "text/html", title: "Ç", body: "<title>Ç</title>"},
	})
	if err := os.WriteFile(filepath.Join(d3, "zkcrawl-w3-20261126130000000-00009-w3.warc.gz.open"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "crawl.wacz")
	created := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	sum, err := Write(context.Background(), Options{Out: out, Dirs: []string{d1, d2, d3}, Title: "zkcrawl crawl t", Software: "zkcrawl test", Now: func() time.Time { return created }})
	if err != nil {
		t.Fatal(err)
	}
	warcs, _ := filepath.Glob(filepath.Join(root, "w*", "*.warc.gz"))
	if sum.WARCs != len(warcs) || sum.WARCs != 5 || sum.IndexLines != 7 || sum.Pages != 5 {
		t.Errorf("summary %+v, want 5 WARC files, 7 index lines, 5 pages", sum)
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "*.work-*")); len(left) > 0 {
		t.Errorf("work folder left: %v", left)
	}
	rep, err := Verify(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IndexLines != 7 || rep.Pages != 5 || rep.Resources != 2+len(warcs) {
		t.Errorf("verify report %+v", rep)
	}

	data, methods, order := zipEntries(t, out)
	wantOrder := []string{plainIndexPath, pagesPath}
	slices.Sort(warcs)
	names := make([]string, len(warcs))
	for i, w := range warcs {
		names[i] = filepath.Base(w)
	}
	slices.Sort(names)
	for _, n := range names {
		wantOrder = append(wantOrder, archiveDir+n)
	}
	wantOrder = append(wantOrder, packagePath, digestPath)
	if !slices.Equal(order, wantOrder) {
		t.Errorf("entries %q, want %q", order, wantOrder)
	}
	for _, w := range warcs {
		b, _ := os.ReadFile(w)
		name := archiveDir + filepath.Base(w)
		if string(data[name]) != string(b) || methods[name] != 0 {
			t.Errorf("%s: not the WARC file stored as it is (method %d)", name, methods[name])
		}
	}
	if methods[plainIndexPath] != 0 {
		t.Errorf("%s is compressed in the ZIP", plainIndexPath)
	}

	// The index: less than a block, so plain; the merge of the .cdxj files.
	want := cdxjLines(t, d1, d2, d3)
	if got := strings.Split(strings.TrimSuffix(string(data[plainIndexPath]), "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("index.cdx:\n%s\nwant the merged .cdxj lines:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// pages.jsonl: header, the seeds with a response, the 200 HTML pages.
	lines := strings.Split(strings.TrimSuffix(string(data[pagesPath]), "\n"), "\n")
	if lines[0] != pagesHeader {
		t.Errorf("pages header %q", lines[0])
	}
	got := map[string]string{}
	for _, l := range lines[1:] {
		var p Page
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if _, err := time.Parse(time.RFC3339, p.TS); err != nil || len(p.ID) != 32 {
			t.Errorf("page %q: ts %q id %q", p.URL, p.TS, p.ID)
		}
		got[p.URL] = p.Title
	}
	wantPages := map[string]string{
		"https://example.com/": "Home & <Co>", "https://example.com/a": "A", "https://example.org/": "",
		"https://example.org/b": "", "https://example.net/c": "Ç",
	}
	if len(got) != len(wantPages) || len(lines) != 6 {
		t.Errorf("pages %v, want %v", got, wantPages)
	}
	for u, title := range wantPages {
		if g, ok := got[u]; !ok || g != title {
			t.Errorf("page %s: title %q (listed %v), want %q", u, g, ok, title)
		}
	}

	// datapackage.json: every other entry, hashes and sizes recomputed.
	var dp DataPackage
	if err := json.Unmarshal(data[packagePath], &dp); err != nil {
		t.Fatal(err)
	}
	if dp.Profile != "data-package" || dp.WACZVersion != "1.1.1" || dp.Title != "zkcrawl crawl t" || dp.Software != "zkcrawl test" || dp.Created != "2026-11-26T20:00:00Z" {
		t.Errorf("datapackage.json: %+v", dp)
	}
	if len(dp.Resources) != len(order)-2 {
		t.Errorf("%d resources for %d entries", len(dp.Resources), len(order))
	}
	for _, r := range dp.Resources {
		sum := sha256.Sum256(data[r.Path])
		if r.Hash != "sha256:"+hex.EncodeToString(sum[:]) || r.Bytes != int64(len(data[r.Path])) || r.Name != filepath.Base(r.Path) {
			t.Errorf("resource %+v: entry has %d bytes, sha256 %x", r, len(data[r.Path]), sum)
		}
	}
	var dg Digest
	json.Unmarshal(data[digestPath], &dg)
	dsum := sha256.Sum256(data[packagePath])
	if dg.Path != packagePath || dg.Hash != "sha256:"+hex.EncodeToString(dsum[:]) {
		t.Errorf("datapackage-digest.json: %s", data[digestPath])
	}
}

// An index of many blocks (the merge of more WARC files than one merge
// pass reads) verifies; its blocks follow each other and hold every line
// in order.
func TestWritePackageManyBlocks(t *testing.T) {
	root := t.TempDir()
	dirs := syntheticDirs(t, root, 2, mergeFanIn+6, 100)
	out := filepath.Join(root, "big.wacz")
	sum, err := Write(context.Background(), Options{Out: out, Dirs: dirs, Title: "big"})
	if err != nil {
		t.Fatal(err)
	}
	lines := int64((mergeFanIn + 6) * 100)
	if sum.IndexLines != lines || sum.Pages != lines {
		t.Errorf("summary %+v, want %d index lines and pages", sum, lines)
	}
	rep, err := Verify(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IndexLines != lines {
		t.Errorf("verified %d index lines, want %d", rep.IndexLines, lines)
	}
	data, methods, _ := zipEntries(t, out)
	if methods[indexPath] != 0 {
		t.Errorf("%s is compressed in the ZIP", indexPath)
	}
	want := cdxjLines(t, dirs...)
	idx := strings.Split(strings.TrimSuffix(string(data[idxPath]), "\n"), "\n")
	if len(idx) != 1+int(lines+blockLines-1)/blockLines || idx[0] != idxMeta {
		t.Errorf("index.idx has %d lines, want the !meta line and one per %d records", len(idx), blockLines)
	}
	for i, l := range idx[1:] {
		if key := strings.Join(strings.Fields(want[i*blockLines])[:2], " "); !strings.HasPrefix(l, key+" {") {
			t.Errorf("index.idx line %d: %q, want the key %q", i+2, l, key)
		}
	}
	if got := strings.Split(strings.TrimSuffix(gunzipAll(t, data[indexPath]), "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("index.cdx.gz is not the merge of the .cdxj files (%d lines, want %d)", len(got), len(want))
	}
}

// A damaged package fails Verify with an error naming what is wrong.
func TestVerifyDamaged(t *testing.T) {
	root := t.TempDir()
	dirs := syntheticDirs(t, root, 1, 2, 10)
	out := filepath.Join(root, "p.wacz")
	if _, err := Write(context.Background(), Options{Out: out, Dirs: dirs, Title: "p"}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	damage := func(name string, f func([]byte) []byte) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, f(slices.Clone(good)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	warc := "zkcrawl-w0-20261126120000000-00000-w0.warc.gz"
	for _, c := range []struct {
		name string
		f    func([]byte) []byte
		want []string
	}{
		{"truncated.wacz", func(b []byte) []byte { return b[:len(b)/2] }, []string{"not a readable ZIP"}},
		{"flipped.wacz", func(b []byte) []byte {
			j := strings.Index(string(b), archiveDir+warc)
			b[j+len(archiveDir+warc)+40] ^= 0xff
			return b
		}, []string{archiveDir + warc}},
		{"digest.wacz", func(b []byte) []byte {
			i := strings.LastIndex(string(b), `"hash": "sha256:`)
			b[i+20] ^= 1
			return b
		}, []string{digestPath}},
	} {
		_, err := Verify(context.Background(), damage(c.name, c.f))
		checkVerifyError(t, c.name, err, c.want)
	}

	// An index line whose offset is not a record's start.
	idx, _ := filepath.Glob(filepath.Join(dirs[0], "*.cdxj"))
	b, _ := os.ReadFile(idx[0])
	os.WriteFile(idx[0], []byte(strings.Replace(string(b), `"offset":"0"`, `"offset":"1"`, 1)), 0o644)
	if _, err := Write(context.Background(), Options{Out: out, Dirs: dirs, Title: "p"}); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(context.Background(), out)
	checkVerifyError(t, "bad offset", err, []string{plainIndexPath + " line 1", "offset 1 of " + warc, "not the start of a gzip member"})
}

// checkVerifyError fails unless err is one line naming every want.
func checkVerifyError(t *testing.T, name string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: verified", name)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error does not name %q: %v", name, w, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: error spans lines: %v", name, err)
	}
}

// A folder that does not exist, holds no finished WARC file, or holds a
// WARC file without its index fails with one line naming it, and leaves
// no package.
func TestWriteBadInput(t *testing.T) {
	root := t.TempDir()
	good := syntheticDirs(t, filepath.Join(root, "good"), 1, 1, 3)[0]
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "x.warc.gz.open"), []byte("x"), 0o644)
	logOnly := filepath.Join(root, "logonly")
	os.MkdirAll(logOnly, 0o755)
	os.WriteFile(filepath.Join(logOnly, "crawl.log"), nil, 0o644)
	noIndex := syntheticDirs(t, filepath.Join(root, "noindex"), 1, 2, 3)[0]
	idx, _ := filepath.Glob(filepath.Join(noIndex, "*.cdxj"))
	os.Remove(idx[0])
	noIndexWARC := strings.TrimSuffix(idx[0], ".cdxj") + ".warc.gz"
	unsorted := syntheticDirs(t, filepath.Join(root, "unsorted"), 1, 1, 3)[0]
	idx, _ = filepath.Glob(filepath.Join(unsorted, "*.cdxj"))
	b, _ := os.ReadFile(idx[0])
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Reverse(ls)
	os.WriteFile(idx[0], []byte(strings.Join(ls, "\n")+"\n"), 0o644)
	missing := filepath.Join(root, "nope")
	for _, c := range []struct {
		dirs []string
		out  string
		want []string
	}{
		{[]string{good, missing}, "a.wacz", []string{missing, "does not exist"}},
		{[]string{good, empty}, "a.wacz", []string{empty, "no finished WARC"}},
		{[]string{logOnly}, "a.wacz", []string{logOnly, "nothing to package"}},
		{[]string{noIndex}, "a.wacz", []string{noIndexWARC, "warcio cdx-index"}},
		{[]string{good, good}, "a.wacz", []string{"two folders"}},
		{[]string{unsorted}, "a.wacz", []string{idx[0], "not sorted"}},
		{[]string{good}, "a.zip", []string{"a.zip", ".wacz"}},
		{[]string{good}, "nodir/a.wacz", []string{"nodir"}},
	} {
		out := filepath.Join(root, c.out)
		_, err := Write(context.Background(), Options{Out: out, Dirs: c.dirs})
		if err == nil {
			t.Errorf("%v -> %s: no error", c.dirs, c.out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error does not name %q: %v", c.dirs, w, err)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error spans lines: %v", err)
		}
		for _, p := range []string{out, out + ".tmp"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%v: %s left behind", c.dirs, p)
			}
		}
	}
}
