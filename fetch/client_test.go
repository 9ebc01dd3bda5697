package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newFetcher returns a Fetcher for tests on loopback (private networks
// allowed unless a test says otherwise).
func newFetcher(t *testing.T, o Options) *Fetcher {
	t.Helper()
	f := New(o)
	t.Cleanup(f.Close)
	return f
}

// loopbackOpts allows the 127.0.0.1 test servers.
func loopbackOpts() Options {
	return Options{AllowPrivateNetworks: true, UserAgent: "zkcrawl-test/1.0", Timeout: 5 * time.Second}
}

func TestFetchOK(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RequestURI() != "/page?q=1" {
			t.Errorf("request URI %q", r.URL.RequestURI())
		}
		if got := r.Header.Get("User-Agent"); got != "zkcrawl-test/1.0" {
			t.Errorf("User-Agent %q", got)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Test", "yes")
		fmt.Fprint(w, "<html><body>hello</body></html>")
	}))
	defer srv.Close()
	f := newFetcher(t, loopbackOpts())

	res, err := f.Fetch(context.Background(), srv.URL+"/page?q=1#frag")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || string(res.Body) != "<html><body>hello</body></html>" {
		t.Fatalf("status %d body %q", res.Status, res.Body)
	}
	if res.MIME != "text/html" || res.ContentType != "text/html; charset=utf-8" {
		t.Errorf("MIME %q ContentType %q", res.MIME, res.ContentType)
	}
	if res.RemoteIP != "127.0.0.1" {
		t.Errorf("RemoteIP %q", res.RemoteIP)
	}
	if res.Truncated || res.Redirect != "" || res.Started.IsZero() || res.Duration <= 0 {
		t.Errorf("unexpected result %+v", res)
	}
	req := string(res.RawRequest)
	if !strings.HasPrefix(req, "GET /page?q=1 HTTP/1.1\r\n") || !strings.HasSuffix(req, "\r\n\r\n") {
		t.Errorf("RawRequest %q", req)
	}
	for _, want := range []string{"Host: " + strings.TrimPrefix(srv.URL, "http://") + "\r\n",
		"User-Agent: zkcrawl-test/1.0\r\n", "Accept-Encoding: gzip\r\n"} {
		if !strings.Contains(req, want) {
			t.Errorf("RawRequest lacks %q: %q", want, req)
		}
	}
	resp := string(res.RawResponseHeader)
	if !strings.HasPrefix(resp, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(resp, "\r\n\r\n") ||
		!strings.Contains(resp, "X-Test: yes\r\n") || !strings.Contains(resp, "Content-Length: 31\r\n") {
		t.Errorf("RawResponseHeader %q", resp)
	}
}

// A chunked response is kept as it crossed the wire: RawResponse holds the
// chunk framing and the Transfer-Encoding field, Body the de-chunked payload.
func TestFetchChunkedKeptAsOnTheWire(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "chunk%d;", i)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	res, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != "chunk0;chunk1;chunk2;" {
		t.Errorf("body %q", res.Body)
	}
	if h := string(res.RawResponseHeader); !strings.Contains(h, "Transfer-Encoding: chunked\r\n") {
		t.Errorf("RawResponseHeader lost Transfer-Encoding: %q", h)
	}
	wantTail := "\r\n\r\n7\r\nchunk0;\r\n7\r\nchunk1;\r\n7\r\nchunk2;\r\n0\r\n\r\n"
	if raw := string(res.RawResponse); !strings.HasPrefix(raw, string(res.RawResponseHeader)) || !strings.HasSuffix(raw, wantTail) {
		t.Errorf("RawResponse %q, want the header then the chunks %q", raw, wantTail)
	}
}

// Header names in odd case and order, folded spacing, an interim 103
// response and a chunked body with a trailer reach RawResponse unchanged.
func TestFetchRawResponseIsByteExact(t *testing.T) {
	final := "HTTP/1.1 200 OK\r\n" +
		"x-LOWER-upper:  two  spaces \r\n" +
		"content-type: text/html\r\n" +
		"Zzz-First: 1\r\n" +
		"aaa-last: 2\r\n" +
		"transfer-encoding: chunked\r\n" +
		"connection: close\r\n" +
		"\r\n" +
		"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
	addr := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"+final)
		c.Close()
	})
	url := "http://" + addr + "/"
	res, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.RawResponse) != final {
		t.Errorf("RawResponse\n%q\nwant\n%q", res.RawResponse, final)
	}
	if string(res.Body) != "hello world" || res.Status != 200 {
		t.Errorf("status %d body %q", res.Status, res.Body)
	}
	if !strings.HasPrefix(string(res.RawRequest), "GET / HTTP/1.1\r\n") {
		t.Errorf("RawRequest %q", res.RawRequest)
	}
}

// Over TLS the copy is of the plain HTTP text inside the TLS stream.
func TestFetchTLSRawResponse(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["x-Odd"] = []string{"yes"}
		io.WriteString(w, "secret page")
	}))
	defer srv.Close()
	o := loopbackOpts()
	o.RootCAs = x509.NewCertPool()
	o.RootCAs.AddCert(srv.Certificate())
	res, err := newFetcher(t, o).Fetch(context.Background(), srv.URL+"/tls")
	if err != nil {
		t.Fatal(err)
	}
	raw := string(res.RawResponse)
	if !strings.HasPrefix(raw, "HTTP/1.1 200 OK\r\n") || !strings.Contains(raw, "\r\nx-Odd: yes\r\n") || !strings.HasSuffix(raw, "\r\n\r\nsecret page") {
		t.Errorf("RawResponse %q", raw)
	}
	if !strings.HasPrefix(string(res.RawRequest), "GET /tls HTTP/1.1\r\n") {
		t.Errorf("RawRequest %q", res.RawRequest)
	}
}

// A reused keep-alive connection gives each fetch its own exchange only.
func TestFetchRawPerRequestOnKeepAlive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "page "+r.URL.Path)
	}))
	defer srv.Close()
	f := newFetcher(t, loopbackOpts())
	for _, p := range []string{"/one", "/two", "/three"} {
		res, err := f.Fetch(context.Background(), srv.URL+p)
		if err != nil {
			t.Fatal(err)
		}
		if raw := string(res.RawResponse); strings.Count(raw, "HTTP/1.1 ") != 1 || !strings.HasSuffix(raw, "\r\n\r\npage "+p) {
			t.Errorf("%s: RawResponse %q", p, raw)
		}
		if req := string(res.RawRequest); strings.Count(req, "GET ") != 1 || !strings.HasPrefix(req, "GET "+p+" HTTP/1.1\r\n") {
			t.Errorf("%s: RawRequest %q", p, req)
		}
	}
}

func TestFetchDoesNotFollowRedirects(t *testing.T) {
	var targetHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/a/from", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "../b/to?x=1", http.StatusFound)
	})
	mux.HandleFunc("/b/to", func(w http.ResponseWriter, r *http.Request) { targetHits.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), srv.URL+"/a/from")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 302 || res.Redirect != srv.URL+"/b/to?x=1" {
		t.Errorf("status %d redirect %q", res.Status, res.Redirect)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect target fetched %d times", n)
	}
}

func TestFetchBodyLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 1000
		if r.URL.Path == "/big" {
			n = 5000
		}
		w.Write(bytes.Repeat([]byte("x"), n))
	}))
	defer srv.Close()
	o := loopbackOpts()
	o.MaxBodyBytes = 1000
	f := newFetcher(t, o)

	res, err := f.Fetch(context.Background(), srv.URL+"/big")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Body) != 1000 || !res.Truncated || res.Status != 200 {
		t.Errorf("big: len %d truncated %v status %d", len(res.Body), res.Truncated, res.Status)
	}
	res, err = f.Fetch(context.Background(), srv.URL+"/exact")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Body) != 1000 || res.Truncated {
		t.Errorf("exact: len %d truncated %v", len(res.Body), res.Truncated)
	}
}

// gzipBytes compresses b.
func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func TestFetchGzipKeptAndDecoded(t *testing.T) {
	page := []byte(strings.Repeat("<p>compressible</p>", 200))
	gz := gzipBytes(t, page)
	// 64 MiB of zeros in ~64 KiB: 64 gzip members of 1 MiB each (RFC 1952
	// allows concatenated members; gzip.Reader decodes them all).
	bomb := bytes.Repeat(gzipBytes(t, make([]byte, 1<<20)), 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/bomb" {
			w.Write(bomb)
			return
		}
		w.Write(gz)
	}))
	defer srv.Close()
	f := newFetcher(t, loopbackOpts())

	res, err := f.Fetch(context.Background(), srv.URL+"/page")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, gz) {
		t.Fatalf("body not kept as transferred: %d bytes, want %d gzip bytes", len(res.Body), len(gz))
	}
	dec, err := res.DecodedBody(0)
	if err != nil || !bytes.Equal(dec, page) {
		t.Fatalf("DecodedBody: %d bytes, err %v", len(dec), err)
	}

	res, err = f.Fetch(context.Background(), srv.URL+"/bomb")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Body) != len(bomb) {
		t.Fatalf("bomb body %d bytes, want %d", len(res.Body), len(bomb))
	}
	dec, err = res.DecodedBody(1 << 20)
	if !errors.Is(err, ErrDecodedTooLarge) || len(dec) != 1<<20 {
		t.Fatalf("bomb: %d bytes, err %v; want 1 MiB and ErrDecodedTooLarge", len(dec), err)
	}
}

func TestDecodedBodyTruncatedGzip(t *testing.T) {
	page := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	gz := gzipBytes(t, page)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz)
	}))
	defer srv.Close()
	o := loopbackOpts()
	o.MaxBodyBytes = int64(len(gz) / 2)
	res, err := newFetcher(t, o).Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated {
		t.Fatal("not truncated")
	}
	dec, err := res.DecodedBody(0)
	if err == nil {
		t.Error("no error decoding a truncated gzip stream")
	}
	if !bytes.HasPrefix(page, dec) {
		t.Error("partial decode is not a prefix of the page")
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/midbody" {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	o := loopbackOpts()
	o.Timeout = 200 * time.Millisecond
	f := newFetcher(t, o)

	for _, path := range []string{"/headers", "/midbody"} {
		_, err := f.Fetch(context.Background(), srv.URL+path)
		if Code(err) != CodeTimeout {
			t.Errorf("%s: code %d (%v), want %d", path, Code(err), err, CodeTimeout)
		}
		if !Retryable(Code(err)) {
			t.Errorf("%s: timeout not retryable", path)
		}
	}
}

func TestFetchCanceled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := newFetcher(t, loopbackOpts()).Fetch(ctx, srv.URL)
	if Code(err) != CodeCanceled {
		t.Errorf("code %d (%v), want %d", Code(err), err, CodeCanceled)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestFetchConnectionRefused(t *testing.T) {
	_, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), "http://"+closedPort(t)+"/")
	var fe *Error
	if !errors.As(err, &fe) || fe.Code != CodeConnectFailed {
		t.Fatalf("err %v, want code %d", err, CodeConnectFailed)
	}
	if !Retryable(fe.Code) {
		t.Error("connect failure not retryable")
	}
}

func TestFetchDNSFailure(t *testing.T) {
	// "a..b" is not a valid domain name: Go's resolver answers "no such
	// host" without sending a query, so no traffic leaves loopback.
	_, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), "http://a..b/")
	if Code(err) != CodeDNSFailed {
		t.Fatalf("code %d (%v), want %d", Code(err), err, CodeDNSFailed)
	}
}

func TestFetchTLSFailure(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake error is expected
	srv.StartTLS()
	defer srv.Close()
	_, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), srv.URL)
	if Code(err) != CodeConnectFailed {
		t.Fatalf("code %d (%v), want %d for an untrusted certificate", Code(err), err, CodeConnectFailed)
	}
}

// rawServer accepts connections on loopback and hands each to handle.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// Read the request head before answering.
				buf := make([]byte, 4096)
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				var got []byte
				for !bytes.Contains(got, []byte("\r\n\r\n")) {
					n, err := c.Read(buf)
					if err != nil {
						break
					}
					got = append(got, buf[:n]...)
				}
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestFetchResetMidBody(t *testing.T) {
	half := func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n")
		c.Write(bytes.Repeat([]byte("a"), 500))
	}
	closeAddr := rawServer(t, func(c net.Conn) { half(c); c.Close() })
	resetAddr := rawServer(t, func(c net.Conn) {
		half(c)
		time.Sleep(20 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0) // close with RST
		c.Close()
	})
	brokenChunkAddr := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n10\r\nshort")
		c.Close()
	})
	closedBeforeResponse := rawServer(t, func(c net.Conn) { c.Close() })
	f := newFetcher(t, loopbackOpts())
	for name, addr := range map[string]string{"close": closeAddr, "reset": resetAddr,
		"chunked": brokenChunkAddr, "no-response": closedBeforeResponse} {
		_, err := f.Fetch(context.Background(), "http://"+addr+"/")
		if Code(err) != CodeConnectLost {
			t.Errorf("%s: code %d (%v), want %d", name, Code(err), err, CodeConnectLost)
		}
	}
}

func TestFetchMalformedResponse(t *testing.T) {
	addr := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "SMTP ready\r\n\r\n")
		c.Close()
	})
	_, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), "http://"+addr+"/")
	if Code(err) != CodeRuntimeError {
		t.Errorf("code %d (%v), want %d", Code(err), err, CodeRuntimeError)
	}
}

func TestFetchUnfetchableURI(t *testing.T) {
	f := newFetcher(t, loopbackOpts())
	for _, u := range []string{"ftp://example.com/x", "mailto:a@example.com", "http://", "http://[::1", "javascript:alert(1)"} {
		_, err := f.Fetch(context.Background(), u)
		if Code(err) != CodeUnfetchableURI {
			t.Errorf("%q: code %d (%v), want %d", u, Code(err), err, CodeUnfetchableURI)
		}
	}
}

func TestFetchSniffsMissingContentType(t *testing.T) {
	addr := rawServer(t, func(c net.Conn) {
		body := "<!DOCTYPE html><html><body>x</body></html>"
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		c.Close()
	})
	res, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), "http://"+addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	if res.ContentType != "" || res.MIME != "text/html" {
		t.Errorf("ContentType %q MIME %q", res.ContentType, res.MIME)
	}
}

func TestSetOptionsLive(t *testing.T) {
	uas := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uas <- r.Header.Get("User-Agent")
	}))
	defer srv.Close()
	f := newFetcher(t, loopbackOpts())
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	o := f.Options()
	o.UserAgent = "zkcrawl-new/2.0"
	f.SetOptions(o)
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if a, b := <-uas, <-uas; a != "zkcrawl-test/1.0" || b != "zkcrawl-new/2.0" {
		t.Errorf("user agents %q, %q", a, b)
	}
}

func TestCodeAndRetryable(t *testing.T) {
	if Code(nil) != 0 || Code(context.DeadlineExceeded) != CodeTimeout ||
		Code(fmt.Errorf("x: %w", context.Canceled)) != CodeCanceled || Code(errors.New("x")) != CodeRuntimeError {
		t.Error("Code of plain errors")
	}
	wrapped := fmt.Errorf("outer: %w", &Error{Code: CodeConnectLost, URL: "http://x/", Err: io.ErrUnexpectedEOF})
	if Code(wrapped) != CodeConnectLost || !errors.Is(wrapped, io.ErrUnexpectedEOF) {
		t.Error("Code/Is through wrapping")
	}
	retry := []int{500, 502, 503, 504, 599, 429, 408, CodeDNSFailed, CodeConnectFailed, CodeConnectLost,
		CodeTimeout, CodeRobotsPrerequisiteFailed, CodeCanceled}
	final := []int{200, 301, 304, 400, 403, 404, 410, CodeRuntimeError, CodeUnfetchableURI, CodeBlockedByUser,
		CodeRobotsPrecluded, CodeTooManyRetries}
	for _, c := range retry {
		if !Retryable(c) {
			t.Errorf("Retryable(%d) = false", c)
		}
	}
	for _, c := range final {
		if Retryable(c) {
			t.Errorf("Retryable(%d) = true", c)
		}
	}
	if CodeName(CodeBlockedByUser) != "blocked-address" || CodeName(404) != "http-404" {
		t.Error("CodeName")
	}
}

// BenchmarkFetch measures keep-alive fetches against a loopback server.
func BenchmarkFetch(b *testing.B) {
	page := bytes.Repeat([]byte("<a href=/x>x</a>"), 256)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(page)
	}))
	defer srv.Close()
	f := New(loopbackOpts())
	defer f.Close()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.Fetch(context.Background(), srv.URL+"/p"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func TestDecodedBodyEncodings(t *testing.T) {
	page := []byte(strings.Repeat("deflate me ", 100))
	var zl, raw bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(page)
	zw.Close()
	fw, _ := flate.NewWriter(&raw, flate.DefaultCompression)
	fw.Write(page)
	fw.Close()
	doubleGzip := gzipBytes(t, gzipBytes(t, page))
	for name, c := range map[string]struct {
		enc  string
		body []byte
	}{
		"zlib":        {"deflate", zl.Bytes()},
		"raw deflate": {"Deflate", raw.Bytes()},
		"x-gzip":      {"x-gzip", gzipBytes(t, page)},
		"gzip, gzip":  {"gzip, gzip", doubleGzip},
		"identity":    {"identity", page},
		"none":        {"", page},
	} {
		r := &Result{URL: "http://x/", Header: http.Header{}, Body: c.body}
		if c.enc != "" {
			r.Header.Set("Content-Encoding", c.enc)
		}
		got, err := r.DecodedBody(0)
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	r := &Result{URL: "http://x/", Header: http.Header{"Content-Encoding": {"br"}}, Body: []byte{1, 2, 3}}
	if _, err := r.DecodedBody(0); !errors.Is(err, ErrUnsupportedEncoding) {
		t.Errorf("br: %v, want ErrUnsupportedEncoding", err)
	}
	r = &Result{URL: "http://x/", Header: http.Header{}, Body: page}
	if got, err := r.DecodedBody(10); !errors.Is(err, ErrDecodedTooLarge) || len(got) != 10 {
		t.Errorf("identity over limit: %d bytes, %v", len(got), err)
	}
}

// Bytes a server sends past its Content-Length are not part of the stored
// response.
func TestFetchRawResponseStopsAtContentLength(t *testing.T) {
	addr := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhelloGARBAGE")
		c.Close()
	})
	res, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), "http://"+addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"; string(res.RawResponse) != want {
		t.Errorf("RawResponse %q, want %q", res.RawResponse, want)
	}
}

// A request whose header block is longer than a connection's write buffer
// (so it goes out in more than one write) is captured whole: RawRequest is
// byte for byte what the server read.
func TestFetchLongRequestCapturedWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	read := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var got []byte
		buf := make([]byte, 512)
		for !bytes.Contains(got, []byte("\r\n\r\n")) {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			got = append(got, buf[:n]...)
		}
		read <- got
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}()
	url := "http://" + ln.Addr().String() + "/" + strings.Repeat("p", 3*writeBufferSize)
	res, err := newFetcher(t, loopbackOpts()).Fetch(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	sent := <-read
	if len(sent) <= writeBufferSize || !bytes.Equal(res.RawRequest, sent) {
		t.Errorf("RawRequest (%d bytes) is not what the server read (%d bytes, the buffer %d):\n%q\n%q",
			len(res.RawRequest), len(sent), writeBufferSize, res.RawRequest, sent)
	}
}
