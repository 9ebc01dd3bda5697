package storage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func testExchange(i int, body []byte) Exchange {
	u := fmt.Sprintf("http://example.com/page/%d", i)
	return Exchange{
		TargetURI:         u,
		IP:                "127.0.0.1",
		Date:              time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC),
		RawRequest:        []byte(fmt.Sprintf("GET /page/%d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: zkcrawl-test\r\n\r\n", i)),
		RawResponseHeader: []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(body))),
		Body:              body,
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll reads every record of a WARC file.
func readAll(t *testing.T, path string) []*Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f)
	var recs []*Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, rec)
	}
}

// countingBR counts compressed bytes consumed by gzip.Reader.
type countingBR struct {
	r *bufio.Reader
	n int64
}

func (c *countingBR) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
func (c *countingBR) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// gzipMembers splits a file into its gzip members with
// gzip.Reader.Multistream(false), returning each member's offset and
// decompressed content.
func gzipMembers(t *testing.T, path string) (offsets []int64, members [][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &countingBR{r: bufio.NewReader(f)}
	var zr *gzip.Reader
	for {
		off := c.n
		if zr == nil {
			zr, err = gzip.NewReader(c)
		} else {
			err = zr.Reset(c)
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: gzip member at %d: %v", path, off, err)
		}
		zr.Multistream(false)
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: gzip member at %d: %v", path, off, err)
		}
		offsets = append(offsets, off)
		members = append(members, b)
	}
}

// warcFiles returns the WARC files in dir (".open" ones included; not the
// CDXJ indexes beside them).
func warcFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.warc.gz*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

var nameRE = regexp.MustCompile(`^test-\d{17}-(\d{5})-w_1\.warc\.gz$`)

// checkFile verifies the invariants every WARC file must hold and returns
// its records.
func checkFile(t *testing.T, path string) []*Record {
	t.Helper()
	base := filepath.Base(path)
	if !nameRE.MatchString(base) {
		t.Errorf("file name %q does not follow prefix-timestamp-serial-worker.warc.gz", base)
	}
	recs := readAll(t, path)
	if len(recs) == 0 || recs[0].Type() != TypeWarcinfo {
		t.Fatalf("%s: first record is not warcinfo", base)
	}
	info := recs[0]
	if got := info.Get("WARC-Filename"); got != base {
		t.Errorf("%s: WARC-Filename %q", base, got)
	}
	for _, want := range []string{"software: zkcrawl/1.2.3\r\n", "format: WARC File Format 1.1\r\n", "conformsTo: " + ConformsTo, "operator: ops@example.com\r\n", "hostname: "} {
		if !bytes.Contains(info.Block, []byte(want)) {
			t.Errorf("%s: warcinfo lacks %q:\n%s", base, want, info.Block)
		}
	}
	if info.Get("Content-Type") != "application/warc-fields" {
		t.Errorf("warcinfo Content-Type %q", info.Get("Content-Type"))
	}
	offsets, members := gzipMembers(t, path)
	if len(members) != len(recs) {
		t.Fatalf("%s: %d gzip members for %d records", base, len(members), len(recs))
	}
	for i, m := range members {
		one := readAllBytes(t, m)
		if len(one) != 1 {
			t.Fatalf("%s: gzip member %d holds %d records", base, i, len(one))
		}
		if recs[i].Offset != offsets[i] {
			t.Errorf("%s: record %d offset %d, member offset %d", base, i, recs[i].Offset, offsets[i])
		}
	}
	for i, rec := range recs {
		if rec.Version != "WARC/1.1" {
			t.Errorf("record %d version %q", i, rec.Version)
		}
		if cl, _ := strconv.Atoi(rec.Get("Content-Length")); cl != len(rec.Block) {
			t.Errorf("record %d Content-Length %d, block %d bytes", i, cl, len(rec.Block))
		}
		if got := rec.Get("WARC-Block-Digest"); got != Digest(rec.Block) {
			t.Errorf("record %d block digest %q, computed %q", i, got, Digest(rec.Block))
		}
		if !regexp.MustCompile(`^<urn:uuid:[0-9a-f-]{36}>$`).MatchString(rec.Get("WARC-Record-ID")) {
			t.Errorf("record %d id %q", i, rec.Get("WARC-Record-ID"))
		}
		if _, err := time.Parse(time.RFC3339Nano, rec.Get("WARC-Date")); err != nil || !strings.HasSuffix(rec.Get("WARC-Date"), "Z") {
			t.Errorf("record %d WARC-Date %q: %v", i, rec.Get("WARC-Date"), err)
		}
		if i > 0 && rec.Get("WARC-Warcinfo-ID") != info.Get("WARC-Record-ID") {
			t.Errorf("record %d WARC-Warcinfo-ID %q, want %q", i, rec.Get("WARC-Warcinfo-ID"), info.Get("WARC-Record-ID"))
		}
	}
	// Records after warcinfo come in request/response (or revisit) pairs.
	if (len(recs)-1)%2 != 0 {
		t.Fatalf("%s: %d records after warcinfo, want pairs", base, len(recs)-1)
	}
	for i := 1; i < len(recs); i += 2 {
		req, resp := recs[i], recs[i+1]
		if req.Type() != TypeRequest || (resp.Type() != TypeResponse && resp.Type() != TypeRevisit) {
			t.Fatalf("%s: records %d,%d are %s,%s", base, i, i+1, req.Type(), resp.Type())
		}
		if req.Get("WARC-Concurrent-To") != resp.Get("WARC-Record-ID") || resp.Get("WARC-Concurrent-To") != req.Get("WARC-Record-ID") {
			t.Errorf("%s: pair %d not linked by WARC-Concurrent-To", base, i)
		}
		if req.Get("WARC-Target-URI") != resp.Get("WARC-Target-URI") {
			t.Errorf("%s: pair %d target URIs differ", base, i)
		}
		if resp.Get("WARC-Profile") == ProfileNotModified {
			// No block: the replay engines take the original's headers.
			if len(resp.Block) != 0 || resp.Get("Content-Type") != "" {
				t.Errorf("%s: pair %d: server-not-modified revisit with a %d-byte block of type %q", base, i, len(resp.Block), resp.Get("Content-Type"))
			}
			continue
		}
		if req.Get("Content-Type") != "application/http;msgtype=request" || resp.Get("Content-Type") != "application/http;msgtype=response" {
			t.Errorf("%s: pair %d content types %q %q", base, i, req.Get("Content-Type"), resp.Get("Content-Type"))
		}
		payload, err := resp.HTTPPayload()
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Get("WARC-Payload-Digest"); resp.Type() == TypeResponse && got != Digest(payload) {
			t.Errorf("%s: payload digest %q, computed %q", base, got, Digest(payload))
		}
	}
	return recs
}

func readAllBytes(t *testing.T, b []byte) []*Record {
	t.Helper()
	r := NewReader(bytes.NewReader(b))
	var recs []*Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

func testOptions() WriterOptions {
	return WriterOptions{WorkerID: "w/1", Version: "1.2.3", Operator: "ops@example.com", IsPartOf: "test-crawl", Logger: slog.New(slog.DiscardHandler)}
}

func TestWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var infos []ResponseInfo
	var bodies [][]byte
	for i := 0; i < 5; i++ {
		body := []byte(strings.Repeat(fmt.Sprintf("<p>page %d</p>\n", i), i*50))
		info, err := w.WriteExchange(testExchange(i, body))
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
		bodies = append(bodies, body)
	}
	// While open, the file carries the .open suffix and is already readable.
	files := warcFiles(t, dir)
	if len(files) != 1 || !strings.HasSuffix(files[0], ".warc.gz"+OpenSuffix) {
		t.Fatalf("files while open: %v", files)
	}
	if n := len(readAll(t, files[0])); n != 11 {
		t.Fatalf("open file holds %d records, want 11 (flushed per record)", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	files = warcFiles(t, dir)
	if len(files) != 1 || filepath.Base(files[0]) != infos[0].File {
		t.Fatalf("files after close: %v (info names %q)", files, infos[0].File)
	}
	recs := checkFile(t, files[0])
	if len(recs) != 11 {
		t.Fatalf("%d records, want 11", len(recs))
	}
	if !bytes.Contains(recs[0].Block, []byte("isPartOf: test-crawl\r\n")) {
		t.Errorf("warcinfo lacks isPartOf:\n%s", recs[0].Block)
	}
	byOffset := map[int64]*Record{}
	for _, r := range recs {
		byOffset[r.Offset] = r
	}
	for i, info := range infos {
		resp := byOffset[info.Offset]
		if resp == nil || resp.Type() != TypeResponse || resp.Get("WARC-Record-ID") != info.RecordID {
			t.Fatalf("exchange %d: no response record at offset %d", i, info.Offset)
		}
		if resp.Get("WARC-Target-URI") != fmt.Sprintf("http://example.com/page/%d", i) || resp.Get("WARC-IP-Address") != "127.0.0.1" {
			t.Errorf("exchange %d: headers %v", i, resp.Header)
		}
		if resp.Get("WARC-Date") != "2025-01-02T03:04:05.000006Z" {
			t.Errorf("exchange %d: WARC-Date %q", i, resp.Get("WARC-Date"))
		}
		if info.PayloadDigest != Digest(bodies[i]) || resp.Get("WARC-Payload-Digest") != info.PayloadDigest {
			t.Errorf("exchange %d: payload digest %q", i, info.PayloadDigest)
		}
		if p, _ := resp.HTTPPayload(); !bytes.Equal(p, bodies[i]) {
			t.Errorf("exchange %d: payload differs", i)
		}
		if resp.Get("WARC-Truncated") != "" {
			t.Errorf("exchange %d: unexpected WARC-Truncated", i)
		}
		// The member located by Offset/Length decompresses to this record.
		raw, _ := os.ReadFile(files[0])
		one := readAllBytes(t, raw[info.Offset:info.Offset+info.Length])
		if len(one) != 1 || one[0].Get("WARC-Record-ID") != info.RecordID {
			t.Errorf("exchange %d: Offset/Length do not delimit the response member", i)
		}
	}
	if _, err := w.WriteExchange(testExchange(9, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v, want ErrClosed", err)
	}
}

func TestWriterRotation(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.MaxFileBytes = 7 << 10
	w, err := NewWriter(dir, "test", opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		// 3 KiB of random (incompressible) bytes: a file holds two pairs.
		info, err := w.WriteExchange(testExchange(i, randomBytes(t, 3<<10)))
		if err != nil {
			t.Fatal(err)
		}
		seen[info.File] = true
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcFiles(t, dir)
	if len(files) != n/2 || len(seen) != n/2 {
		t.Fatalf("%d files (%d named in infos), want %d: %v", len(files), len(seen), n/2, files)
	}
	total := 0
	for i, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("file %s not named by any ResponseInfo", f)
		}
		m := nameRE.FindStringSubmatch(filepath.Base(f))
		if m == nil || m[1] != fmt.Sprintf("%05d", i) {
			t.Errorf("file %d named %s, want serial %05d", i, filepath.Base(f), i)
		}
		recs := checkFile(t, f)
		total += (len(recs) - 1) / 2
	}
	if total != n {
		t.Fatalf("%d exchanges in files, want %d", total, n)
	}
}

func TestWriterTruncatedAndNormalization(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ex := testExchange(1, []byte("0123456789"))
	ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n") // no final blank line
	ex.RawRequest = []byte("GET /page/1 HTTP/1.1\r\nHost: example.com")         // no blank line at all
	ex.Truncated = true
	ex.IP = ""
	if _, err := w.WriteExchange(ex); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := checkFile(t, warcFiles(t, dir)[0])
	req, resp := recs[1], recs[2]
	if want := "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"; string(resp.Block) != want {
		t.Errorf("response block %q, want %q", resp.Block, want)
	}
	if want := "GET /page/1 HTTP/1.1\r\nHost: example.com\r\n\r\n"; string(req.Block) != want {
		t.Errorf("request block %q, want %q", req.Block, want)
	}
	if resp.Get("WARC-Truncated") != "length" {
		t.Errorf("WARC-Truncated %q, want length", resp.Get("WARC-Truncated"))
	}
	if resp.Get("WARC-IP-Address") != "" {
		t.Errorf("WARC-IP-Address written though empty")
	}
}

func TestWriterBadInput(t *testing.T) {
	if _, err := NewWriter(t.TempDir(), "bad/prefix", WriterOptions{}); err == nil || !strings.Contains(err.Error(), `"bad/prefix"`) {
		t.Errorf("NewWriter with bad prefix: %v", err)
	}
	dir := t.TempDir()
	w, err := NewWriter(dir, "test", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	good := testExchange(1, []byte("x"))
	cases := []struct {
		mod  func(*Exchange)
		want string
	}{
		{func(e *Exchange) { e.TargetURI = "" }, "empty target URI"},
		{func(e *Exchange) { e.TargetURI = "http://x/a b" }, "whitespace"},
		{func(e *Exchange) { e.IP = "not-an-ip" }, `"not-an-ip"`},
		{func(e *Exchange) { e.RawRequest = nil }, "empty raw request"},
		{func(e *Exchange) { e.RawResponseHeader = []byte("200 OK\r\n") }, "status line"},
		{func(e *Exchange) { e.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\n\r\nbody\r\n") }, "blank line"},
	}
	for _, c := range cases {
		ex := good
		c.mod(&ex)
		_, err := w.WriteExchange(ex)
		if !errors.Is(err, ErrBadExchange) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteExchange: error %v, want ErrBadExchange mentioning %q", err, c.want)
		}
	}
	if files := warcFiles(t, dir); len(files) != 0 {
		t.Errorf("invalid exchanges created files: %v", files)
	}
}

func TestWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.MaxFileBytes = 16 << 10
	w, err := NewWriter(dir, "test", opts)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	stopSync := make(chan struct{})
	synced := make(chan struct{})
	go func() { // fsyncs run outside the lock, concurrently with writes and rotations
		defer close(synced)
		for {
			select {
			case <-stopSync:
				return
			default:
			}
			if err := w.Sync(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := make([]byte, 1<<10)
				rand.Read(body)
				if _, err := w.WriteExchange(testExchange(g*1000+i, body)); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(stopSync)
	<-synced
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	uris := map[string]int{}
	files := warcFiles(t, dir)
	if len(files) < 2 {
		t.Fatalf("expected rotation, got %d files", len(files))
	}
	for _, f := range files {
		for _, rec := range checkFile(t, f) { // checks pairs are adjacent and linked
			if rec.Type() == TypeResponse {
				uris[rec.Get("WARC-Target-URI")]++
			}
		}
	}
	if len(uris) != workers*each {
		t.Fatalf("%d distinct responses, want %d", len(uris), workers*each)
	}
	for u, n := range uris {
		if n != 1 {
			t.Errorf("%s written %d times", u, n)
		}
	}
}

func TestReaderPlainAndErrors(t *testing.T) {
	var buf bytes.Buffer
	r1 := &record{block: [][]byte{[]byte("hello")}}
	r1.add("WARC-Type", "resource")
	r1.add("WARC-Record-ID", newRecordID())
	r2 := &record{block: [][]byte{[]byte("")}}
	r2.add("WARC-Type", "metadata")
	if err := r1.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	off2 := int64(buf.Len())
	if err := r2.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	recs := readAllBytes(t, buf.Bytes())
	if len(recs) != 2 || string(recs[0].Block) != "hello" || recs[1].Type() != "metadata" || recs[1].Offset != off2 || recs[0].Offset != 0 {
		t.Fatalf("plain read: %+v", recs)
	}
	if recs[0].Get("warc-type") != "resource" {
		t.Errorf("Get is not case-insensitive")
	}
	for _, bad := range []string{
		"HTTP/1.1 200 OK\r\n\r\n",
		"WARC/1.1\r\nContent-Length: 10\r\n\r\nshort",
		"WARC/1.1\r\nContent-Length: x\r\n\r\n",
		"WARC/1.1\r\nContent-Length: 2\r\n\r\nabXXXX",
	} {
		_, err := NewReader(strings.NewReader(bad)).Next()
		if err == nil || err == io.EOF {
			t.Errorf("reading %q: err %v, want an error", bad, err)
		}
	}
	if _, err := NewReader(strings.NewReader("")).Next(); err != io.EOF {
		t.Errorf("empty input: %v, want io.EOF", err)
	}
}
