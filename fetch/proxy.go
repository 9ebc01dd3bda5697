package fetch

// Fetching through proxies. Every target, http and https alike, goes
// through a tunnel: HTTP CONNECT (RFC 9110 section 9.3.6) to an http:// or
// https:// proxy, or a SOCKS5 CONNECT (RFC 1928, golang.org/x/net/proxy)
// to a socks5:// one. The bytes inside the tunnel are exactly the
// exchange with the origin (origin-form request, the origin's response),
// so the tee (wire.go) copies them as it does on a direct connection, and
// the CONNECT handshake is never part of a WARC record. The tunnel is
// asked for the target's address, resolved here with the Fetcher's
// resolver and checked by the SSRF guard first (the proxy never resolves
// the name, so it cannot be steered to another address): the target's
// address is known, is the connection's RemoteAddr, and is the
// Result.RemoteIP (WARC-IP-Address). The dial to the proxy itself is the
// only one the guard lets reach a private address.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/proxy"

	"github.com/zkcrawl/zkcrawl/config"
)

// Proxies routes fetches through proxies, as the crawl config's proxy and
// proxy_rules say (config.Config.Proxy). A nil *Proxies routes every
// fetch direct. Build it with NewProxies; it is immutable.
type Proxies struct {
	def   *url.URL // nil: direct
	rules []proxyRule
	key   string // the whole setting, passwords included: tells a change
}

type proxyRule struct {
	re    *regexp.Regexp
	proxy *url.URL // nil: direct
}

// NewProxies compiles a proxy setting: def is the proxy of URLs no rule
// matches, rules are tried in order over the URL fetched; each proxy is a
// URL config.ParseProxyURL accepts ("" or "direct": none). The error names
// the rule and the reason, never a password.
func NewProxies(def string, rules []config.ProxyRule) (*Proxies, error) {
	u, err := config.ParseProxyURL(def)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxies{def: u}
	var key strings.Builder
	key.WriteString(def)
	for i, r := range rules {
		re, err := regexp.Compile(r.Match)
		if err != nil {
			return nil, fmt.Errorf("proxy rule %d: match %q: %w", i, r.Match, err)
		}
		ru, err := config.ParseProxyURL(r.Proxy)
		if err != nil {
			return nil, fmt.Errorf("proxy rule %d: %w", i, err)
		}
		p.rules = append(p.rules, proxyRule{re: re, proxy: ru})
		fmt.Fprintf(&key, "\n%s\x00%s", r.Match, r.Proxy)
	}
	p.key = key.String()
	return p, nil
}

// For returns the proxy rawURL is fetched through, or nil for direct.
func (p *Proxies) For(rawURL string) *url.URL {
	if p == nil {
		return nil
	}
	for _, r := range p.rules {
		if r.re.MatchString(rawURL) {
			return r.proxy
		}
	}
	return p.def
}

// String returns the setting with passwords redacted (url.URL.Redacted),
// for logs.
func (p *Proxies) String() string {
	if p == nil {
		return "direct"
	}
	var b strings.Builder
	b.WriteString(redactedProxy(p.def))
	for _, r := range p.rules {
		fmt.Fprintf(&b, "; %s -> %s", r.re, redactedProxy(r.proxy))
	}
	return b.String()
}

// settingKey returns what tells two settings apart ("" for nil).
func (p *Proxies) settingKey() string {
	if p == nil {
		return ""
	}
	return p.key
}

// urls returns the distinct proxies p names.
func (p *Proxies) urls() map[string]*url.URL {
	m := map[string]*url.URL{}
	if p == nil {
		return m
	}
	if p.def != nil {
		m[p.def.String()] = p.def
	}
	for _, r := range p.rules {
		if r.proxy != nil {
			m[r.proxy.String()] = r.proxy
		}
	}
	return m
}

// proxyPools holds one connection pool per proxy of a setting, so a pooled
// connection is only ever reused for a URL routed through the same proxy.
// Each pool has the bounds of the direct one (Options.MaxConnsPerHost and
// MaxIdleConns apply per pool).
type proxyPools struct {
	proxies *Proxies
	pools   map[string]*http.Transport // by proxy URL
}

// newProxyPools returns the pools of o.Proxies.
func (f *Fetcher) newProxyPools(o Options) *proxyPools {
	pp := &proxyPools{proxies: o.Proxies, pools: map[string]*http.Transport{}}
	for key, u := range o.Proxies.urls() {
		tee := &teeDialer{dial: f.proxyDial(u), tlsTimeout: f.tee.tlsTimeout, roots: f.tee.roots}
		pp.pools[key] = f.newTransportFor(o, tee)
	}
	return pp
}

// closeIdle closes the idle connections of every pool.
func (pp *proxyPools) closeIdle() {
	for _, t := range pp.pools {
		t.CloseIdleConnections()
	}
}

// transportFor returns the pool rawURL is fetched with and the proxy it
// goes through (nil: the direct pool).
func (f *Fetcher) transportFor(rawURL string) (*http.Transport, *url.URL) {
	pp := f.proxied.Load()
	if u := pp.proxies.For(rawURL); u != nil {
		return pp.pools[u.String()], u
	}
	return f.transport.Load(), nil
}

// proxyDialTimeout bounds one dial through a proxy (every address of the
// target, each with its proxy dial and handshake) when the dial's context
// has no deadline of its own; the fetch's Timeout ends it sooner.
const proxyDialTimeout = 30 * time.Second

// proxyDefaultPort returns the port of a proxy URL without one.
func proxyDefaultPort(scheme string) string {
	switch scheme {
	case "https":
		return "443"
	case "socks5":
		return "1080"
	}
	return "80"
}

// proxyDial returns a dial function that connects to addr (the target's
// host:port) through the proxy u: the target's name is resolved with the
// Fetcher's resolver and each address is checked by the SSRF guard (unless
// AllowPrivateNetworks) before a tunnel to it is asked for; addresses are
// tried in turn, the deadline split among them as for a direct dial. The
// connection returned reports the target's address as its RemoteAddr.
// Errors: a *net.OpError around the lookup's *net.DNSError, around
// ErrBlockedAddress, or around the proxy's failure (dial, handshake, or a
// refused CONNECT with the proxy's status line).
func (f *Fetcher) proxyDial(u *url.URL) func(ctx context.Context, network, addr string) (net.Conn, error) {
	// The proxy's own address may be private: its dial has no guard.
	toProxy := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	proxyAddr := net.JoinHostPort(u.Hostname(), u.Port())
	if u.Port() == "" {
		proxyAddr = net.JoinHostPort(u.Hostname(), proxyDefaultPort(u.Scheme))
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := ctx.Deadline(); !ok { // the transport dials without the fetch's deadline
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, proxyDialTimeout)
			defer cancel()
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		ips, err := f.Resolver().LookupNetIP(ctx, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		allowPrivate := f.opts.Load().AllowPrivateNetworks
		var first error
		for i, ip := range ips {
			ip = ip.Unmap()
			target := net.JoinHostPort(ip.String(), port)
			if blocked, reason := BlockedAddr(ip); blocked && !allowPrivate {
				if first == nil {
					first = &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%w: %s is %s", ErrBlockedAddress, ip, reason)}
				}
				continue
			}
			actx, cancel := ctx, context.CancelFunc(func() {})
			if dl, ok := ctx.Deadline(); ok && i < len(ips)-1 {
				part := time.Until(dl) / time.Duration(len(ips)-i)
				actx, cancel = context.WithTimeout(ctx, max(part, dnsMinAttempt))
			}
			c, err := f.tunnel(actx, toProxy, u, proxyAddr, target)
			cancel()
			if err == nil {
				p, _ := strconv.Atoi(port)
				return &tunnelConn{Conn: c, remote: net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(p)))}, nil
			}
			if first == nil {
				first = &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("through proxy %s: %w", u.Redacted(), err)}
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}

// tunnel returns a connection to target (ip:port) through the proxy u at
// proxyAddr, dialled with d through the Fetcher's resolver.
func (f *Fetcher) tunnel(ctx context.Context, d *net.Dialer, u *url.URL, proxyAddr, target string) (net.Conn, error) {
	dial := f.Resolver().dialFunc(d)
	if u.Scheme == "socks5" {
		var auth *proxy.Auth
		if u.User != nil {
			pw, _ := u.User.Password()
			auth = &proxy.Auth{User: u.User.Username(), Password: pw}
		}
		sd, err := proxy.SOCKS5("tcp", proxyAddr, auth, contextDialer(dial))
		if err != nil {
			return nil, err
		}
		return sd.(proxy.ContextDialer).DialContext(ctx, "tcp", target)
	}
	c, err := dial(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: u.Hostname(), RootCAs: f.tee.roots()})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	tc, err := httpConnect(ctx, c, u, target)
	if err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// httpConnect asks the HTTP proxy on c for a tunnel to target with
// CONNECT, sending u's user:password as Proxy-Authorization Basic (RFC
// 9110 section 11.7.1; RFC 7617). Any status but 2xx is an error giving
// the proxy's status line. The handshake is bounded by ctx.
func httpConnect(ctx context.Context, c net.Conn, u *url.URL, target string) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u.User != nil {
		pw, _ := u.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
	}
	if err := req.Write(c); err != nil {
		return nil, fmt.Errorf("CONNECT %s: %w", target, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("CONNECT %s: reading the proxy's answer: %w", target, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("CONNECT %s: the proxy answered %q", target, resp.Status)
	}
	if !stop() {
		return nil, fmt.Errorf("CONNECT %s: %w", target, ctx.Err())
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 { // bytes of the origin read with the proxy's answer
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// contextDialer adapts a dial function to proxy.Dialer and
// proxy.ContextDialer.
type contextDialer func(ctx context.Context, network, addr string) (net.Conn, error)

func (d contextDialer) Dial(network, addr string) (net.Conn, error) {
	return d(context.Background(), network, addr)
}

func (d contextDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d(ctx, network, addr)
}

// tunnelConn is a connection through a proxy that reports the target's
// address as its peer, so that the SSRF re-check of pooled connections
// and Result.RemoteIP see the target, not the proxy.
type tunnelConn struct {
	net.Conn
	remote net.Addr
}

// RemoteAddr returns the target's address.
func (c *tunnelConn) RemoteAddr() net.Addr { return c.remote }

// bufferedConn reads first what a bufio.Reader already took off Conn.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// redactedProxy returns u for logs, password redacted; "direct" for nil.
func redactedProxy(u *url.URL) string {
	if u == nil {
		return "direct"
	}
	return u.Redacted()
}
