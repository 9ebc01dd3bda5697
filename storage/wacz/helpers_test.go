package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/zkcrawl/zkcrawl/storage"
)

// fetchSpec is one fetch of a test crawl: what the worker wrote for it.
type fetchSpec struct {
	url, via, mime, title string
	depth, status         int
	body                  string
	failed                bool // no response: nothing in the WARC file
}

// workerDir writes what a worker leaves in its --out folder for fetches:
// WARC files (storage.Writer, rotating at maxBytes; each closed with its
// .cdxj) and crawl.log, as the worker does.
func workerDir(t *testing.T, dir, id string, maxBytes int64, fetches []fetchSpec) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := storage.NewWriter(dir, "zkcrawl-"+id, storage.WriterOptions{WorkerID: id, MaxFileBytes: maxBytes, Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	clog, err := storage.OpenCrawlLog(filepath.Join(dir, "crawl.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i, f := range fetches {
		ts = ts.Add(time.Second)
		e := storage.LogEntry{TS: ts, URL: f.url, Status: f.status, MIME: f.mime, Depth: f.depth, Via: f.via, Worker: id, Attempt: 1, Title: f.title}
		if f.failed {
			e.Status, e.Error = -2, "connection refused"
		} else {
			hdr := fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", f.status, f.mime, len(f.body))
			info, err := w.WriteExchange(storage.Exchange{
				TargetURI: f.url, Date: ts.Add(-time.Duration(i+1) * time.Millisecond),
				RawRequest:        []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
				RawResponseHeader: []byte(hdr), Body: []byte(f.body),
			})
			if err != nil {
				t.Fatal(err)
			}
			e.WARCFile, e.WARCOffset, e.Digest, e.Bytes = info.File, info.Offset, info.PayloadDigest, int64(len(f.body))
		}
		if err := clog.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clog.Close(); err != nil {
		t.Fatal(err)
	}
}

// zipEntries returns every entry of the package at path, by name, with
// its bytes and method.
func zipEntries(t *testing.T, path string) (map[string][]byte, map[string]uint16, []string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	data, methods := map[string][]byte{}, map[string]uint16{}
	var order []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		data[f.Name], methods[f.Name] = b, f.Method
		order = append(order, f.Name)
	}
	return data, methods, order
}

// gunzipAll returns the concatenated content of every gzip member of b.
func gunzipAll(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// cdxjLines returns the lines of every .cdxj file under dirs, sorted (what
// the package's index must hold).
func cdxjLines(t *testing.T, dirs ...string) []string {
	t.Helper()
	var all []string
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.cdxj"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
		}
	}
	slices.Sort(all)
	return all
}

// syntheticDirs writes files WARC files of records fake records each,
// spread over dirs folders, with their sorted .cdxj and a crawl.log per
// folder (one 200 text/html line per record): each record is one small
// gzip member, each index line points at one; keys interleave across
// files so the merge has work to do. It returns the folders. For tests
// with many index blocks and for the packaging benchmark.
func syntheticDirs(t testing.TB, root string, dirs, files, records int) []string {
	t.Helper()
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	zw.Write([]byte("WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 0\r\n\r\n\r\n\r\n"))
	zw.Close()
	m := member.Bytes()
	var out []string
	var logs []*bufio.Writer
	for d := 0; d < dirs; d++ {
		p := filepath.Join(root, fmt.Sprintf("w%d", d))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
		lf, err := os.Create(filepath.Join(p, crawlLogName))
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		logs = append(logs, bufio.NewWriterSize(lf, 1<<20))
	}
	for f := 0; f < files; f++ {
		dir := out[f%dirs]
		name := fmt.Sprintf("zkcrawl-w%d-20261126120000000-%05d-w%d.warc.gz", f%dirs, f, f%dirs)
		wf, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		xf, err := os.Create(filepath.Join(dir, indexName(name)))
		if err != nil {
			t.Fatal(err)
		}
		wb, xb := bufio.NewWriterSize(wf, 1<<20), bufio.NewWriterSize(xf, 1<<20)
		for r := 0; r < records; r++ {
			n := r*files + f
			fmt.Fprintf(xb, `com,example,www)/section/page-%09d 20261126120000 {"url":"https://www.example.com/section/page-%09d","mime":"text/html","status":"200","digest":"WJM2KPM4GF3QK2BISVUH2ASX64NOUY7L","length":"%d","offset":"%d","filename":"%s"}`+"\n",
				n, n, len(m), r*len(m), name)
			wb.Write(m)
			fmt.Fprintf(logs[f%dirs], `{"ts":"2026-11-26T12:00:00.000Z","url":"https://www.example.com/section/page-%09d","status":200,"bytes":5120,"mime":"text/html","depth":1,"via":"https://www.example.com/","hops":"L","worker":"w%d","duration_ms":12,"digest":"sha1:WJM2KPM4GF3QK2BISVUH2ASX64NOUY7L","attempt":1,"config_version":0,"warc_file":"%s","warc_offset":%d,"title":"Page %d of the section"}`+"\n",
				n, f%dirs, name, r*len(m), n)
		}
		for _, c := range []struct {
			b *bufio.Writer
			f *os.File
		}{{wb, wf}, {xb, xf}} {
			if err := c.b.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := c.f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, l := range logs {
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
