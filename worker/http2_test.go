package worker

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// h2Site is a small site on a loopback TLS server that speaks HTTP/2 only
// (ALPN "h2"; an HTTP/1.1 connection is closed unanswered, as by servers
// that refuse HTTP/1.1): pages linking each other, an image requisite and
// a robots.txt. bodies maps each path to what it serves.
func h2Site(t *testing.T) (srv *httptest.Server, bodies map[string]string) {
	t.Helper()
	bodies = map[string]string{
		"/robots.txt": "User-agent: *\nDisallow: /private/\n",
		"/":           `<html><head><title>h2 home</title></head><body><a href="/a.html">a</a> <a href="/b.html">b</a> <a href="/private/x.html">x</a></body></html>`,
		"/a.html":     `<html><body><img src="/img/dot.gif"><a href="/c.html">c</a></body></html>`,
		"/b.html":     `<html><body><a href="/">home</a></body></html>`,
		"/c.html":     `<html><body>leaf</body></html>`,
		"/img/dot.gif": "GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00," +
			"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;",
	}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("%s came in %s", r.URL.Path, r.Proto)
		}
		body, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ".gif"):
			w.Header().Set("Content-Type", "image/gif")
		case r.URL.Path == "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		w.Header()["X-Multi"] = []string{"one", "two"}
		io.WriteString(w, body)
	}))
	srv.EnableHTTP2 = true
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP2(true)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, bodies
}

// trusting returns a worker option that trusts srv's certificate.
func trusting(srv *httptest.Server) func(*Options) {
	return func(o *Options) {
		o.rootCAs = x509.NewCertPool()
		o.rootCAs.AddCert(srv.Certificate())
	}
}

// A crawl of a site that speaks only HTTP/2 fetches its pages, requisite
// and links over h2 (crawl log "protocol": "h2"); its WARC records carry
// WARC-Protocol h2 and the TLS version, hold the HTTP/1.1 form of each
// exchange with the payload the server sent, and warcio.js reads them
// with the status and digest of the crawl log.
func TestCrawlHTTP2OnlySite(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	srv, bodies := h2Site(t)
	cfg := testConfig()
	cfg.Sitemaps = false
	c := newCrawl(t, zk.Addr(), "h2", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", trusting(srv)); err != nil {
		t.Fatal(err)
	}

	want := []string{"/", "/a.html", "/b.html", "/c.html", "/img/dot.gif"}
	var got []string
	stored := map[string]storage.LogEntry{}
	for _, e := range c.logs() {
		p := strings.TrimPrefix(e.URL, srv.URL)
		if p == "/private/x.html" && e.Status == fetch.CodeRobotsPrecluded {
			continue // robots.txt, fetched over h2, disallows it
		}
		if e.Status != 200 || e.Protocol != fetch.ProtoHTTP2 || e.WARCFile == "" {
			t.Errorf("%s: status %d protocol %q file %q error %q", p, e.Status, e.Protocol, e.WARCFile, e.Error)
			continue
		}
		got = append(got, p)
		stored[e.URL] = e
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("fetched %v, want %v", got, want)
	}

	records, files := warcRecords(t, c.out)
	var robots bool
	for _, byOff := range records {
		for _, rec := range byOff {
			if rec.Type() == storage.TypeResponse && rec.Get("WARC-Target-URI") == srv.URL+"/robots.txt" {
				robots = true
			}
		}
	}
	if !robots {
		t.Error("no response record of robots.txt")
	}
	for u, e := range stored {
		rec := records[e.WARCFile][e.WARCOffset]
		if rec == nil || rec.Type() != storage.TypeResponse {
			t.Fatalf("%s: no response record at %s:%d", u, e.WARCFile, e.WARCOffset)
		}
		if rec.Get("WARC-Protocol") != "h2" || rec.Get("WARC-Cipher-Suite") == "" {
			t.Errorf("%s: record fields %v", u, rec.Header)
		}
		// What a replay tool parses: an HTTP/1.1 response.
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rec.Block)), nil)
		if err != nil {
			t.Fatalf("%s: block does not parse as HTTP/1.1: %v\n%s", u, err, rec.Block)
		}
		if resp.StatusCode != 200 || resp.ProtoMajor != 1 || len(resp.Header["X-Multi"]) != 2 {
			t.Errorf("%s: parsed %s %d, header %v", u, resp.Proto, resp.StatusCode, resp.Header)
		}
		payload, err := rec.HTTPPayload()
		if err != nil {
			t.Fatal(err)
		}
		if p := strings.TrimPrefix(u, srv.URL); string(payload) != bodies[p] || storage.Digest(payload) != e.Digest {
			t.Errorf("%s: stored payload %q (digest %s), served %q (crawl log digest %s)", u, payload, storage.Digest(payload), bodies[p], e.Digest)
		}
	}

	// Every request and response record (robots.txt's too) carries both
	// WARC-Protocol fields; the reader keeps only a name's first value, so
	// count them in the raw files.
	var pairs, http1 int
	for _, f := range files {
		raw := gunzipFile(t, f)
		pairs += bytes.Count(raw, []byte("WARC-Protocol: h2\r\nWARC-Protocol: tls/1.3\r\nWARC-Cipher-Suite: "))
		http1 += bytes.Count(raw, []byte("HTTP/2"))
	}
	if want := 2 * (len(stored) + 1); pairs != want {
		t.Errorf("%d records carry WARC-Protocol h2 and tls/1.3, want %d (request and response of each page and robots.txt)", pairs, want)
	}
	if http1 != 0 {
		t.Errorf("%d blocks name HTTP/2 in their request or status line", http1)
	}

	// The independent reader, and the .cdxj beside each file is its index.
	if _, err := testenv.WarcioPath(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]testenv.CDXLine{}
	for _, f := range files {
		lines, err := testenv.WarcioCDX(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			seen[l.URL+" "+l.Offset] = l
		}
		wantIdx, err := testenv.WarcioCDXJLines(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(strings.TrimSuffix(f, ".warc.gz") + ".cdxj")
		if err != nil {
			t.Fatal(err)
		}
		if gotIdx := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); !slices.Equal(gotIdx, wantIdx) {
			t.Errorf("%s: .cdxj differs from warcio cdx-index:\nours:\n%s\nwarcio:\n%s", filepath.Base(f), strings.Join(gotIdx, "\n"), strings.Join(wantIdx, "\n"))
		}
	}
	for u, e := range stored {
		l, ok := seen[u+" "+itoa64(e.WARCOffset)]
		if !ok || l.Status != "200" || "sha1:"+l.Digest != e.Digest {
			t.Errorf("warcio reads %s at %d as %+v; crawl log %d %s", u, e.WARCOffset, l, e.Status, e.Digest)
		}
	}
	t.Logf("%d pages over h2 in %d WARC files; warcio indexed %d records", len(stored), len(files), len(seen))
}

// With http2 false the same site cannot be crawled: the seed fails as
// connect-lost with an error naming HTTP/2 and the key.
func TestCrawlHTTP2OffFailsOnHTTP2OnlySite(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	srv, _ := h2Site(t)
	cfg := testConfig()
	cfg.Sitemaps, cfg.ObeyRobots, cfg.HTTP2, cfg.MaxAttempts = false, false, false, 1
	c := newCrawl(t, zk.Addr(), "h2off", cfg, frontier.Layout{Shards: 2, Spread: 1}, []string{srv.URL + "/"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", trusting(srv)); err != nil {
		t.Fatal(err)
	}
	logs := c.logs()
	if len(logs) != 1 || logs[0].Status != fetch.CodeConnectLost || !strings.Contains(logs[0].Error, "config key http2") {
		t.Fatalf("crawl log %+v, want one connect-lost line naming http2", logs)
	}
}

// gunzipFile returns the decompressed bytes of a .warc.gz file.
func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", path, err))
	}
	return b
}
