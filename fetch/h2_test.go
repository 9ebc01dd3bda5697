package fetch

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// h2OnlyServer starts a TLS server on loopback that speaks HTTP/2 only
// (ALPN "h2" alone: an HTTP/1.1-only client fails its handshake), counting
// the connections it accepts, and returns options trusting it.
func h2OnlyServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, Options, *atomic.Int64) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP2(true) // and not HTTP/1: such a connection is closed unanswered
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	srv.TLS.NextProtos = []string{"h2"}
	t.Cleanup(srv.Close)
	o := loopbackOpts()
	o.RootCAs = x509.NewCertPool()
	o.RootCAs.AddCert(srv.Certificate())
	return srv, o, &conns
}

// An h2-only server is fetched over HTTP/2; the records are the HTTP/1.1
// form: request and status line "HTTP/1.1", lower-case field names, no
// pseudo-header fields, the body as received.
func TestFetchHTTP2OnlyServer(t *testing.T) {
	srv, o, _ := h2OnlyServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request came in %s", r.Proto)
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header()["X-Multi"] = []string{"a", "b"}
		io.WriteString(w, "<a href=/next>h2 page</a>")
	})
	res, err := newFetcher(t, o).Fetch(context.Background(), srv.URL+"/h2?q=1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Protocol != ProtoHTTP2 || res.TLS != "tls/1.3" || res.CipherSuite == "" {
		t.Errorf("Protocol %q TLS %q CipherSuite %q, want h2, tls/1.3 and a suite", res.Protocol, res.TLS, res.CipherSuite)
	}
	if res.RawResponse != nil {
		t.Errorf("RawResponse %q, want nil (no HTTP/1.1 bytes over h2)", res.RawResponse)
	}
	hdr := string(res.RawResponseHeader)
	for _, want := range []string{"HTTP/1.1 200 OK\r\n", "\r\ncontent-type: text/html\r\n", "\r\nx-multi: a\r\nx-multi: b\r\n"} {
		if !strings.Contains(hdr, want) {
			t.Errorf("RawResponseHeader %q lacks %q", hdr, want)
		}
	}
	if !strings.HasPrefix(hdr, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(hdr, "\r\n\r\n") || strings.Contains(hdr, ":status") {
		t.Errorf("RawResponseHeader %q", hdr)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	req := string(res.RawRequest)
	if !strings.HasPrefix(req, "GET /h2?q=1 HTTP/1.1\r\nhost: "+host+"\r\n") || !strings.Contains(req, "\r\nuser-agent: zkcrawl-test/1.0\r\n") ||
		!strings.Contains(req, "\r\naccept-encoding: gzip\r\n") || strings.Contains(req, ":method") || !strings.HasSuffix(req, "\r\n\r\n") {
		t.Errorf("RawRequest %q", req)
	}
	if string(res.Body) != "<a href=/next>h2 page</a>" {
		t.Errorf("Body %q", res.Body)
	}
	t.Logf("request block:\n%s\nresponse header block:\n%s", req, hdr)
	// What a replay tool reads: an HTTP/1.1 request and response.
	pr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(res.RawRequest)))
	if err != nil || pr.Host != host || pr.URL.RequestURI() != "/h2?q=1" {
		t.Errorf("RawRequest does not parse as HTTP/1.1: %v", err)
	}
	block := append(bytes.Clone(res.RawResponseHeader), res.Body...)
	presp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(block)), nil)
	if err != nil {
		t.Fatalf("RawResponseHeader + Body does not parse as HTTP/1.1: %v", err)
	}
	if body, _ := io.ReadAll(presp.Body); presp.StatusCode != 200 || string(body) != string(res.Body) || len(presp.Header["X-Multi"]) != 2 {
		t.Errorf("parsed: status %d body %q header %v", presp.StatusCode, body, presp.Header)
	}
}

// With HTTP/2 off the h2-only server closes the connection unanswered:
// the fetch fails as connect-lost with an error that names the likely
// cause and the config key.
func TestFetchHTTP2OffFailsClearly(t *testing.T) {
	srv, o, _ := h2OnlyServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	o.DisableHTTP2 = true
	_, err := newFetcher(t, o).Fetch(context.Background(), srv.URL+"/")
	if Code(err) != CodeConnectLost || !strings.Contains(err.Error(), "only HTTP/2") || !strings.Contains(err.Error(), "config key http2") {
		t.Fatalf("err %v (code %d), want connect-lost naming HTTP/2 and the config key", err, Code(err))
	}
	t.Logf("HTTP/2 off: %v", err)
}

// A server that refuses every ALPN protocol offered (TLS alert
// no_application_protocol) fails the dial as CodeConnectFailed wrapping
// ErrNoCommonProtocol; other handshake errors pass unchanged.
func TestALPNRefused(t *testing.T) {
	alert := errors.New("remote error: tls: no application protocol")
	err := alpnRefused("example.com:443", alpnProtos(false), alert)
	if !errors.Is(err, ErrNoCommonProtocol) || !errors.Is(err, alert) || !strings.Contains(err.Error(), "config key http2") {
		t.Errorf("alpnRefused: %v", err)
	}
	if c := classify(context.Background(), context.Background(), err, phaseRoundTrip); c != CodeConnectFailed {
		t.Errorf("classified %d, want %d", c, CodeConnectFailed)
	}
	if err := alpnRefused("example.com:443", alpnProtos(true), alert); strings.Contains(err.Error(), "config key") {
		t.Errorf("with h2 offered: %v", err)
	}
	other := errors.New("tls: bad certificate")
	if err := alpnRefused("example.com:443", alpnProtos(false), other); err != other {
		t.Errorf("other error changed: %v", err)
	}
}

// Requests to one h2 host share one connection, a stream each.
func TestFetchHTTP2OneConnection(t *testing.T) {
	srv, o, conns := h2OnlyServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) })
	o.MaxConnsPerHost = 5
	f := newFetcher(t, o)
	if _, err := f.Fetch(context.Background(), srv.URL+"/first"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := "/p" + string(rune('a'+i))
			res, err := f.Fetch(context.Background(), srv.URL+p)
			if err != nil || string(res.Body) != p || res.Protocol != ProtoHTTP2 {
				t.Errorf("%s: %v", p, err)
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
}

// The SSRF guard holds for h2: a loopback h2 server is refused unless
// private networks are allowed, and a pooled h2 connection is not reused
// after they are disallowed.
func TestFetchHTTP2SSRFGuard(t *testing.T) {
	srv, o, _ := h2OnlyServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	guarded := o
	guarded.AllowPrivateNetworks = false
	if _, err := newFetcher(t, guarded).Fetch(context.Background(), srv.URL+"/"); Code(err) != CodeBlockedByUser {
		t.Fatalf("guarded fetch: err %v (code %d), want %d", err, Code(err), CodeBlockedByUser)
	}
	f := newFetcher(t, o)
	if _, err := f.Fetch(context.Background(), srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	f.SetOptions(guarded)
	if _, err := f.Fetch(context.Background(), srv.URL+"/"); Code(err) != CodeBlockedByUser {
		t.Fatalf("after disallow: err %v (code %d), want %d", err, Code(err), CodeBlockedByUser)
	}
}

// A server offering both h2 and http/1.1 is fetched over h2 by default and
// over HTTP/1.1, byte-exact, with HTTP/2 off; an HTTP/1.1-only TLS server
// stays byte-exact with HTTP/2 on.
func TestFetchHTTP2Negotiation(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["x-Odd"] = []string{"yes"}
		io.WriteString(w, "both")
	})
	both := httptest.NewUnstartedServer(h)
	both.EnableHTTP2 = true
	both.StartTLS()
	both.TLS.NextProtos = []string{"h2", "http/1.1"}
	defer both.Close()
	h1 := httptest.NewTLSServer(h)
	defer h1.Close()
	o := loopbackOpts()
	o.RootCAs = x509.NewCertPool()
	o.RootCAs.AddCert(both.Certificate())
	o.RootCAs.AddCert(h1.Certificate())
	off := o
	off.DisableHTTP2 = true
	for _, c := range []struct {
		name  string
		o     Options
		url   string
		proto string
	}{{"h2 on, both", o, both.URL, ProtoHTTP2}, {"h2 off, both", off, both.URL, ProtoHTTP11}, {"h2 on, h1 only", o, h1.URL, ProtoHTTP11}} {
		res, err := newFetcher(t, c.o).Fetch(context.Background(), c.url+"/x")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Protocol != c.proto || res.TLS == "" {
			t.Errorf("%s: Protocol %q TLS %q, want %q", c.name, res.Protocol, res.TLS, c.proto)
		}
		if c.proto == ProtoHTTP11 && !strings.Contains(string(res.RawResponse), "\r\nx-Odd: yes\r\n") {
			t.Errorf("%s: RawResponse %q is not the bytes as received", c.name, res.RawResponse)
		}
	}
}

// BenchmarkFetchTLSProtocol measures a fetch's CPU per page over TLS on a
// keep-alive loopback connection, a 30 KB HTML page with Content-Length:
// "h1" an HTTP/1.1-only server (the byte-exact tee), "h2" the same page
// from an HTTP/2 server (the HTTP/1.1 form rebuilt), "h2-off" that h2
// server with HTTP/2 off (HTTP/1.1 by ALPN). Reported: ns/op, allocations
// and block-bytes/op (the WARC response block).
func BenchmarkFetchTLSProtocol(b *testing.B) {
	page := strings.Repeat("<p>zkcrawl benchmark page with some filler text to look like HTML.</p>\n", 420)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		io.WriteString(w, page)
	})
	h1 := httptest.NewTLSServer(h)
	defer h1.Close()
	h2 := httptest.NewUnstartedServer(h)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	h2.TLS.NextProtos = []string{"h2", "http/1.1"}
	defer h2.Close()
	o := loopbackOpts()
	o.RootCAs = x509.NewCertPool()
	o.RootCAs.AddCert(h1.Certificate())
	o.RootCAs.AddCert(h2.Certificate())
	off := o
	off.DisableHTTP2 = true
	for _, c := range []struct {
		name, url, proto string
		o                Options
	}{{"h1", h1.URL, ProtoHTTP11, o}, {"h2", h2.URL, ProtoHTTP2, o}, {"h2-off", h2.URL, ProtoHTTP11, off}} {
		b.Run(c.name, func(b *testing.B) {
			f := New(c.o)
			defer f.Close()
			var block int
			b.ReportAllocs()
			for b.Loop() {
				res, err := f.Fetch(context.Background(), c.url+"/page")
				if err != nil || res.Protocol != c.proto {
					b.Fatal(err, res.Protocol)
				}
				block = len(res.RawResponse)
				if block == 0 {
					block = len(res.RawResponseHeader) + len(res.Body)
				}
			}
			b.ReportMetric(float64(block), "block-bytes/op")
		})
	}
}

// Over h2 the body is kept as transferred: a gzip body stays compressed
// (Content-Encoding kept) and a body over the cap is cut and Truncated.
func TestFetchHTTP2BodyAsTransferred(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, strings.Repeat("compressed page ", 100))
	zw.Close()
	srv, o, _ := h2OnlyServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(bytes.Repeat([]byte("x"), 64<<10))
			return
		}
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	})
	o.MaxBodyBytes = 16 << 10
	f := newFetcher(t, o)
	res, err := f.Fetch(context.Background(), srv.URL+"/gz")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, gz.Bytes()) || !strings.Contains(string(res.RawResponseHeader), "\r\ncontent-encoding: gzip\r\n") {
		t.Errorf("Body %d bytes (sent %d gzip bytes), header %q", len(res.Body), gz.Len(), res.RawResponseHeader)
	}
	if dec, err := res.DecodedBody(0); err != nil || string(dec) != strings.Repeat("compressed page ", 100) {
		t.Errorf("DecodedBody: %v", err)
	}
	res, err = f.Fetch(context.Background(), srv.URL+"/big")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Body) != 16<<10 || res.Protocol != ProtoHTTP2 {
		t.Errorf("Truncated %v, %d body bytes, protocol %q", res.Truncated, len(res.Body), res.Protocol)
	}
	// The stream was reset, not the connection: the next fetch works.
	if _, err := f.Fetch(context.Background(), srv.URL+"/gz"); err != nil {
		t.Fatal(err)
	}
}
