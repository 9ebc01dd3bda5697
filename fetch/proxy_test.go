package fetch

import (
	"bytes"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// originServer answers every request with a body naming the path.
func originServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Origin", "yes")
		_, _ = io.WriteString(w, "<html>origin page "+r.URL.Path+"</html>")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func mustProxies(t *testing.T, def string, rules ...config.ProxyRule) *Proxies {
	t.Helper()
	p, err := NewProxies(def, rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkOriginExchange fails unless res holds the origin's exchange in
// origin-form, byte-exact off the tunnel, without the CONNECT handshake.
func checkOriginExchange(t *testing.T, res *Result, path string) {
	t.Helper()
	if res.Status != 200 || !bytes.Contains(res.Body, []byte("origin page "+path)) {
		t.Fatalf("status %d body %q, want the origin's page", res.Status, res.Body)
	}
	if !bytes.HasPrefix(res.RawRequest, []byte("GET "+path+" HTTP/1.1\r\n")) {
		t.Errorf("request %q, want origin-form GET %s", res.RawRequest, path)
	}
	if !bytes.HasPrefix(res.RawResponse, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.Contains(res.RawResponse, []byte("X-Origin: yes\r\n")) {
		t.Errorf("response %q, want the origin's, captured off the wire", res.RawResponse)
	}
	for _, b := range [][]byte{res.RawRequest, res.RawResponse} {
		if bytes.Contains(b, []byte("CONNECT")) || bytes.Contains(b, []byte("Connection established")) || bytes.Contains(b, []byte("Proxy-")) {
			t.Errorf("the proxy handshake leaked into the exchange: %q", b)
		}
	}
}

// Through an HTTP CONNECT proxy and a SOCKS5 proxy, each with a password,
// a fetch gets the origin's page: the exchange is the origin's,
// byte-exact, RemoteIP is the target's, the proxy is asked for the
// target's resolved address and gets the credentials.
func TestFetchThroughProxies(t *testing.T) {
	origin := originServer(t)
	target := strings.TrimPrefix(origin.URL, "http://")
	_, port, _ := net.SplitHostPort(target)
	hp := testenv.NewConnectProxy(t, "")
	sp := testenv.NewSOCKS5Proxy(t, "crawler", "s3cret", "")

	for _, tc := range []struct {
		name, proxy string
		seen        func() []string
	}{
		{"http", "http://crawler:s3cret@" + strings.TrimPrefix(hp.URL, "http://"), hp.Targets},
		{"socks5", "socks5://crawler:s3cret@" + sp.Addr, sp.Targets},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(Options{AllowPrivateNetworks: true, Proxies: mustProxies(t, tc.proxy)})
			defer f.Close()
			// A name, resolved here: the proxy is asked for the address.
			res, err := f.Fetch(t.Context(), "http://localhost:"+port+"/a")
			if err != nil {
				t.Fatal(err)
			}
			checkOriginExchange(t, res, "/a")
			if res.RemoteIP != "127.0.0.1" {
				t.Errorf("RemoteIP %q, want the target's 127.0.0.1", res.RemoteIP)
			}
			if got := tc.seen(); len(got) != 1 || got[0] != "127.0.0.1:"+port {
				t.Errorf("proxy asked for %q, want one tunnel to 127.0.0.1:%s", got, port)
			}
			// The pooled tunnel is reused.
			res, err = f.Fetch(t.Context(), "http://localhost:"+port+"/b")
			if err != nil {
				t.Fatal(err)
			}
			checkOriginExchange(t, res, "/b")
			if got := tc.seen(); len(got) != 1 {
				t.Errorf("%d tunnels, want the first reused", len(got))
			}
		})
	}
	if auth := hp.Auth(); len(auth) == 0 || auth[0] != "Basic Y3Jhd2xlcjpzM2NyZXQ=" {
		t.Errorf("Proxy-Authorization %q, want Basic crawler:s3cret", auth)
	}
	// A wrong SOCKS5 password: a connect failure, not a direct fetch.
	f := New(Options{AllowPrivateNetworks: true, Proxies: mustProxies(t, "socks5://crawler:wrong@"+sp.Addr)})
	defer f.Close()
	_, err := f.Fetch(t.Context(), origin.URL+"/c")
	var fe *Error
	if !errors.As(err, &fe) || fe.Code != CodeConnectFailed || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong password: %v, want CodeConnectFailed without the password", err)
	}
}

// With private networks refused, a private target is refused before the
// proxy is asked, while the proxy itself on 127.0.0.1 is dialled for a
// public target (the test proxies tunnel that one to the loopback origin).
func TestProxySSRFGuard(t *testing.T) {
	origin := originServer(t)
	to := strings.TrimPrefix(origin.URL, "http://")
	hp := testenv.NewConnectProxy(t, to)
	sp := testenv.NewSOCKS5Proxy(t, "", "", to)
	const public = "http://203.0.113.7:8080" // TEST-NET-3: public to the guard

	for _, tc := range []struct {
		name, proxy string
		seen        func() []string
	}{
		{"http", hp.URL, hp.Targets},
		{"socks5", "socks5://" + sp.Addr, sp.Targets},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(Options{Proxies: mustProxies(t, tc.proxy)})
			defer f.Close()
			_, err := f.Fetch(t.Context(), origin.URL+"/private")
			var fe *Error
			if !errors.As(err, &fe) || fe.Code != CodeBlockedByUser || !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("private target through the proxy: %v, want CodeBlockedByUser", err)
			}
			if got := tc.seen(); len(got) != 0 {
				t.Fatalf("the proxy was asked for %q before the guard refused", got)
			}
			res, err := f.Fetch(t.Context(), public+"/pub")
			if err != nil {
				t.Fatalf("public target through the loopback proxy: %v", err)
			}
			checkOriginExchange(t, res, "/pub")
			if res.RemoteIP != "203.0.113.7" {
				t.Errorf("RemoteIP %q, want the target's", res.RemoteIP)
			}
			if got := tc.seen(); len(got) != 1 || got[0] != "203.0.113.7:8080" {
				t.Errorf("proxy asked for %q", got)
			}
		})
	}
}

// proxy_rules: the first match wins, "direct" bypasses the proxy, other
// URLs take the default; a change of setting routes anew.
func TestProxyRules(t *testing.T) {
	origin := originServer(t)
	hp := testenv.NewConnectProxy(t, "")
	p := mustProxies(t, hp.URL,
		config.ProxyRule{Match: `/direct/`, Proxy: "direct"},
		config.ProxyRule{Match: `/direct/|/also/`, Proxy: "socks5://127.0.0.1:1"},
	)
	if u := p.For(origin.URL + "/direct/x"); u != nil {
		t.Fatalf("/direct/ routed through %v, want direct (first rule)", u)
	}
	if u := p.For(origin.URL + "/also/x"); u == nil || u.Scheme != "socks5" {
		t.Fatalf("/also/ routed through %v, want the second rule's", u)
	}
	f := New(Options{AllowPrivateNetworks: true, Proxies: p})
	defer f.Close()
	for _, path := range []string{"/direct/1", "/other"} {
		if _, err := f.Fetch(t.Context(), origin.URL+path); err != nil {
			t.Fatal(err)
		}
	}
	if got := hp.Targets(); len(got) != 1 {
		t.Fatalf("%d tunnels, want 1 (/other only)", len(got))
	}
	f.SetOptions(Options{AllowPrivateNetworks: true}) // proxy removed: direct
	if _, err := f.Fetch(t.Context(), origin.URL+"/other"); err != nil {
		t.Fatal(err)
	}
	if got := hp.Targets(); len(got) != 1 {
		t.Fatalf("%d tunnels after the proxy was removed, want still 1", len(got))
	}
}

// A refused CONNECT is a connect failure naming the proxy's status; a
// redacted setting shows no password.
func TestProxyRefusedAndRedacted(t *testing.T) {
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusProxyAuthRequired)
	}))
	defer deny.Close()
	p := mustProxies(t, "http://u:topsecret@"+strings.TrimPrefix(deny.URL, "http://"))
	if s := p.String(); strings.Contains(s, "topsecret") || !strings.Contains(s, "u:xxxxx@") {
		t.Fatalf("String() = %q, want the password redacted", s)
	}
	f := New(Options{AllowPrivateNetworks: true, Proxies: p})
	defer f.Close()
	_, err := f.Fetch(t.Context(), "http://127.0.0.1:9/")
	var fe *Error
	if !errors.As(err, &fe) || fe.Code != CodeConnectFailed || !strings.Contains(err.Error(), "407") || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("refused CONNECT: %v, want CodeConnectFailed naming 407 without the password", err)
	}
	for _, bad := range []string{"ftp://h:1", "http://", "http://u:p@h:1/path", "://x"} {
		if _, err := NewProxies(bad, nil); err == nil {
			t.Errorf("NewProxies(%q) accepted", bad)
		}
	}
}

// BenchmarkFetchThroughProxy: one fetch of a small page from a loopback
// origin, direct and through each loopback proxy, on a pooled connection
// (reused) and on a new one each time (new: the tunnel's handshake).
func BenchmarkFetchThroughProxy(b *testing.B) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<html>origin page</html>")
	}))
	defer origin.Close()
	hp := testenv.NewConnectProxy(b, "")
	sp := testenv.NewSOCKS5Proxy(b, "", "", "")
	for _, route := range []struct{ name, proxy string }{
		{"direct", ""}, {"connect", hp.URL}, {"socks5", "socks5://" + sp.Addr},
	} {
		for _, fresh := range []bool{false, true} {
			name := route.name + "/reused"
			if fresh {
				name = route.name + "/new"
			}
			b.Run(name, func(b *testing.B) {
				p, err := NewProxies(route.proxy, nil)
				if err != nil {
					b.Fatal(err)
				}
				f := New(Options{AllowPrivateNetworks: true, Proxies: p})
				defer f.Close()
				for b.Loop() {
					if fresh {
						f.Close()
					}
					if _, err := f.Fetch(b.Context(), origin.URL+"/"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// An https target through an http and an https proxy: TLS to the origin
// inside the tunnel, verified against the target's name; the exchange
// is the origin's plain HTTP, RemoteIP the target's.
func TestFetchHTTPSThroughProxies(t *testing.T) {
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "yes")
		_, _ = io.WriteString(w, "<html>origin page "+r.URL.Path+"</html>")
	}))
	defer origin.Close()
	roots := x509.NewCertPool()
	roots.AddCert(origin.Certificate())
	hp := testenv.NewConnectProxy(t, "")
	tp := testenv.NewConnectProxyTLS(t, "")
	roots.AddCert(tp.Certificate())
	for _, proxy := range []string{hp.URL, "https://u:p@" + strings.TrimPrefix(tp.URL, "https://")} {
		f := New(Options{AllowPrivateNetworks: true, RootCAs: roots, Proxies: mustProxies(t, proxy)})
		res, err := f.Fetch(t.Context(), origin.URL+"/s")
		f.Close()
		if err != nil {
			t.Fatalf("through %s: %v", proxy, err)
		}
		checkOriginExchange(t, res, "/s")
		if res.RemoteIP != "127.0.0.1" {
			t.Errorf("RemoteIP %q", res.RemoteIP)
		}
	}
	if len(hp.Targets()) != 1 || len(tp.Targets()) != 1 || tp.Auth()[0] != "Basic dTpw" {
		t.Fatalf("tunnels %q %q auth %q, want one each, with u:p to the https proxy", hp.Targets(), tp.Targets(), tp.Auth())
	}
}
