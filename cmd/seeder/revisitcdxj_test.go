package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/dedup"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// --revisit-cdxj enters the status-200 responses of a CDXJ index as
// confirmed entries of the crawl's digest index, names each line that
// does not parse by file and line, imports the rest, and ends with a
// summary line; without dedup_index it writes nothing and names the key.
func TestSeederRevisitCDXJ(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	rd := testenv.RedisServer(t, testenv.RedisConfig{})
	dir := t.TempDir()
	d1, d2 := storage.Digest([]byte("page one")), storage.Digest([]byte("style"))
	bare2 := strings.TrimPrefix(d2, "sha1:")
	cdxj := filepath.Join(dir, "old.cdxj")
	lines := []string{
		`!meta 0 {"format":"cdxj"}`,
		`org,example)/ 20240102030405 {"url":"https://example.org/","mime":"text/html","status":"200","digest":"` + d1 + `","length":"900","offset":"0","filename":"a.warc.gz"}`,
		`org,example)/a.css 20240102030406 {"url":"https://example.org/a.css","mime":"text/css","status":"200","digest":"` + bare2 + `"}`,
		`org,example)/b.css 20240102030407 {"url":"https://example.org/b.css","mime":"warc/revisit","status":"200","digest":"` + bare2 + `"}`,
		`org,example)/gone 20240102030408 {"url":"https://example.org/gone","mime":"text/html","status":"404","digest":"` + bare2 + `"}`,
		`this line is not cdxj`,
		`org,example)/c 2024 {"url":"https://example.org/c","status":"200","digest":"` + bare2 + `"}`,
		`org,example)/d 20240102030409 {"url":"https://example.org/d","status":"200","digest":"sha256:abc"}`,
		`org,example)/e 20240102030409 {"url": broken`,
	}
	if err := os.WriteFile(cdxj, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ZKCRAWL_ZK": zk.Addr()}

	// No dedup_index: one line naming the key, nothing written.
	_, errOut, err := runSeeder(t, env, "", "--crawl", "nodedup", "--revisit-cdxj", cdxj)
	if err == nil || !strings.Contains(err.Error(), "dedup_index") {
		t.Fatalf("without dedup_index: %v\n%s", err, errOut)
	}
	conn, err := testenv.RawConn(t.Context(), zk.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ok, _, err := conn.Exists("/zkcrawl/nodedup"); err != nil || ok {
		t.Errorf("crawl nodedup exists: %v, %v; want nothing written when the import is refused", ok, err)
	}

	cfgFile := filepath.Join(dir, "cfg.json")
	if err := os.WriteFile(cfgFile, []byte(`{"dedup_index": "`+rd.URL(0)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runSeeder(t, env, "", "--crawl", "withdedup", "--config", cfgFile, "--revisit-cdxj", cdxj)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "8 lines, 2 entries added, 0 present already, 2 skipped (not a status-200 response), 4 bad") {
		t.Errorf("summary: %q", out)
	}
	for n, why := range map[string]string{":6:": "not \"SURT TIMESTAMP {JSON}\"", ":7:": "timestamp \"2024\"", ":8:": "sha256", ":9:": "JSON"} {
		if !strings.Contains(errOut, cdxj+n+" ") || !strings.Contains(errOut, why) {
			t.Errorf("stderr does not name %s%s (%s):\n%s", cdxj, n, why, errOut)
		}
	}
	ix, err := dedup.Open(rd.URL(0), dedup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	want := dedup.Entry{TargetURI: "https://example.org/a.css", Date: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC)}
	if res, err := ix.Reserve(t.Context(), d2, "https://x.test/", time.Now()); err != nil || res.Verdict != dedup.Revisit || res.Entry != want {
		t.Errorf("after import: %+v, %v; want revisit of %+v", res, err, want)
	}
	// Again: every entry is present already.
	out, _, err = runSeeder(t, env, "", "--crawl", "withdedup", "--revisit-cdxj", cdxj)
	if err != nil || !strings.Contains(out, "0 entries added, 2 present already") {
		t.Errorf("second import: %q, %v", out, err)
	}
}

// The CDXJ index warcio.js writes of a WARC file imports as is: its
// status-200 response becomes an entry naming the response's URI and
// WARC-Date (to the second, as CDXJ has it); its revisit and 404 lines are
// skipped.
func TestSeederRevisitCDXJFromWarcio(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	rd := testenv.RedisServer(t, testenv.RedisConfig{})
	dir := t.TempDir()
	w, err := storage.NewWriter(dir, "old", storage.WriterOptions{WorkerID: "w0", Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 891011000, time.UTC)
	body := strings.Repeat("payload ", 300)
	for i, ex := range []storage.Exchange{
		{TargetURI: "https://old.example/a.js", Date: at, Body: []byte(body),
			RawResponseHeader: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\n")},
		{TargetURI: "https://old.example/a.js", Date: at.Add(time.Hour), Body: []byte(body), // a same-URL revisit
			RawResponseHeader: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\n")},
		{TargetURI: "https://old.example/gone", Date: at, Body: []byte("gone"),
			RawResponseHeader: []byte("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n")},
	} {
		ex.RawRequest = []byte("GET / HTTP/1.1\r\nHost: old.example\r\n")
		if _, err := w.WriteExchange(ex); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	warcs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(warcs) != 1 {
		t.Fatalf("WARC files %v", warcs)
	}
	lines, err := testenv.WarcioCDXJLines(t.Context(), warcs[0])
	if err != nil {
		t.Fatal(err)
	}
	cdxj := filepath.Join(dir, "old.cdxj")
	if err := os.WriteFile(cdxj, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "cfg.json")
	if err := os.WriteFile(cfgFile, []byte(`{"dedup_index": "`+rd.URL(3)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runSeeder(t, map[string]string{"ZKCRAWL_ZK": zk.Addr()}, "", "--crawl", "fromwarcio", "--config", cfgFile, "--revisit-cdxj", cdxj)
	if err != nil || !strings.Contains(out, "3 lines, 1 entries added, 0 present already, 2 skipped") {
		t.Fatalf("import of warcio.js's CDXJ %q: %q, %v\n%s", lines, out, err, errOut)
	}
	ix, err := dedup.Open(rd.URL(3), dedup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	want := dedup.Entry{TargetURI: "https://old.example/a.js", Date: at.Truncate(time.Second)}
	res, err := ix.Reserve(t.Context(), storage.Digest([]byte(body)), "https://new.example/a.js", time.Now())
	if err != nil || res.Verdict != dedup.Revisit || res.Entry != want {
		t.Fatalf("after import: %+v, %v; want revisit of %+v", res, err, want)
	}
}
