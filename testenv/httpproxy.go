package testenv

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	socks5 "github.com/armon/go-socks5"
)

// ConnectProxy is a real HTTP CONNECT proxy (RFC 9110 section 9.3.6) on
// loopback, closed when the test ends. It records the tunnel targets asked
// for and each request's Proxy-Authorization; it answers methods other
// than CONNECT with 405.
type ConnectProxy struct {
	// URL is the proxy's http://127.0.0.1:PORT.
	URL  string
	to   string
	cert *x509.Certificate

	mu      sync.Mutex
	targets []string
	auth    []string
}

// NewConnectProxy starts a ConnectProxy. With to ("host:port") set, every
// tunnel goes to that address whatever the target asked for, so a test
// can name a public address and still reach a loopback server.
func NewConnectProxy(t testing.TB, to string) *ConnectProxy {
	p := &ConnectProxy{to: to}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// NewConnectProxyTLS is NewConnectProxy serving https:// (the
// httptest certificate, for 127.0.0.1 and example.com); Certificate
// gives it for the client's pool.
func NewConnectProxyTLS(t testing.TB, to string) *ConnectProxy {
	p := &ConnectProxy{to: to}
	srv := httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL, p.cert = srv.URL, srv.Certificate()
	return p
}

// Certificate returns the certificate of a NewConnectProxyTLS proxy (nil
// for a plain one).
func (p *ConnectProxy) Certificate() *x509.Certificate { return p.cert }

func (p *ConnectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.auth = append(p.auth, r.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	dst := r.Host
	if p.to != "" {
		dst = p.to
	}
	up, err := (&net.Dialer{}).DialContext(r.Context(), "tcp", dst)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	_, _ = rw.WriteString("HTTP/1.1 200 Connection established\r\nProxy-Agent: zkcrawl-testenv\r\n\r\n")
	_ = rw.Flush()
	go func() { _, _ = io.Copy(up, rw); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// Targets returns the host:port of every CONNECT so far, in order.
func (p *ConnectProxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// Auth returns the Proxy-Authorization of every CONNECT so far ("" when
// absent), in order.
func (p *ConnectProxy) Auth() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.auth...)
}

// SOCKS5Proxy is a real SOCKS5 proxy (RFC 1928, github.com/armon/go-socks5)
// on loopback, closed when the test ends, recording the targets asked for.
type SOCKS5Proxy struct {
	// Addr is the proxy's 127.0.0.1:PORT.
	Addr string

	mu      sync.Mutex
	targets []string
}

// NewSOCKS5Proxy starts a SOCKS5Proxy; with user set it requires that
// user and password (RFC 1929), else no authentication. With to set,
// every connection goes to that address (as NewConnectProxy's).
func NewSOCKS5Proxy(t testing.TB, user, password, to string) *SOCKS5Proxy {
	p := &SOCKS5Proxy{}
	conf := &socks5.Config{
		Logger: log.New(io.Discard, "", 0),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			p.mu.Lock()
			p.targets = append(p.targets, addr)
			p.mu.Unlock()
			if to != "" {
				addr = to
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	if user != "" {
		conf.Credentials = socks5.StaticCredentials{user: password}
	}
	srv, err := socks5.New(conf)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { _ = srv.Serve(ln) }()
	p.Addr = ln.Addr().String()
	return p
}

// Targets returns the host:port of every connection asked for so far.
func (p *SOCKS5Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}
