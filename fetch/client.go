package fetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
)

// Defaults applied by New and SetOptions to zero fields of Options. They are
// the crawl config's defaults (package config is their one definition), so
// a fetcher without options behaves as a crawl that sets none.
const (
	// DefaultUserAgent is sent when Options.UserAgent is empty. Its product
	// token "zkcrawl" is what robots.txt groups match (RFC 9309 section 2.2.1).
	DefaultUserAgent = config.DefaultUserAgent
	// DefaultTimeout bounds one whole fetch: dial, TLS, request, headers and
	// body.
	DefaultTimeout = config.DefaultFetchTimeoutMS * time.Millisecond
	// DefaultMaxBodyBytes caps the bytes of body read per response, as
	// transferred (compressed if the server used Content-Encoding): 10 MiB.
	DefaultMaxBodyBytes = config.DefaultMaxBodyBytes
)

// acceptHeader is the Accept request header, the one Heritrix 3 sends by
// default: HTML preferred, anything accepted.
const acceptHeader = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// Options configures a Fetcher. Zero fields take the defaults above; they
// can be replaced at any time with Fetcher.SetOptions.
type Options struct {
	// UserAgent is the User-Agent request header. Default DefaultUserAgent.
	UserAgent string
	// Timeout bounds one fetch from dial to the last body byte; past it the
	// fetch fails with CodeTimeout. Zero or negative: DefaultTimeout.
	Timeout time.Duration
	// MaxBodyBytes caps the body bytes read per response, counted as
	// transferred (before gzip decoding), unless a Content.BodyCaps rule
	// matches its media type. Past it reading stops and
	// Result.Truncated is set. Zero or negative: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// AllowPrivateNetworks disables the SSRF guard (see BlockedAddr). Only for
	// tests and crawls of one's own intranet.
	AllowPrivateNetworks bool
	// Logger receives debug lines per fetch. Default slog.Default().
	Logger *slog.Logger
	// RootCAs verifies https servers' certificates; nil means the system's
	// roots. Read when a connection is dialled. Tests set it.
	RootCAs *x509.CertPool
	// Resolver resolves the host names dialled; nil: the Fetcher's own,
	// NewResolver(ResolverOptions{}) made by New. Read at every dial.
	Resolver *Resolver
	// MaxConnsPerHost bounds the connections (in use, being dialled or
	// idle) to one host (scheme, name and port), and the idle ones to
	// it. A caller with politeness sets per_host_max_in_flight + 1 (one
	// for a robots.txt or sitemap fetch beside a page): requests past it
	// wait in the pool within their Timeout. Zero or negative: no bound
	// on connections, MaxIdleConnsPerHost idle ones.
	MaxConnsPerHost int
	// MaxIdleConns bounds the idle connections kept in all, the least
	// recently used closed first; a caller sets its request budget (more
	// idle connections than requests in flight are never reused at once).
	// Zero, negative or above MaxIdleConns: MaxIdleConns.
	MaxIdleConns int
	// Proxies routes fetches through proxies (proxy.go); nil: every fetch
	// direct. Read per fetch; a change swaps the proxied pools.
	Proxies *Proxies
	// DisableHTTP2 makes https fetches offer HTTP/1.1 only (ALPN
	// "http/1.1"); false (default) offers HTTP/2 first (h2.go), so a
	// server that only speaks HTTP/2 is fetched too.
	DisableHTTP2 bool
	// Content holds the crawl's content rules: its BodyCaps apply to every
	// fetch but robots.txt's, its Accept and Reject to FetchContent only.
	// The zero value has none.
	Content ContentRules
}

// withDefaults returns o with zero fields replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxIdleConns <= 0 || o.MaxIdleConns > MaxIdleConns {
		o.MaxIdleConns = MaxIdleConns
	}
	o.MaxConnsPerHost = max(o.MaxConnsPerHost, 0)
	return o
}

// Fetcher performs single HTTP GETs for the crawler. It is safe for
// concurrent use; all fetches share one connection pool (HTTP/1.1
// keep-alive). Create it with New.
type Fetcher struct {
	opts      atomic.Pointer[Options]
	transport atomic.Pointer[http.Transport] // replaced when the pool bounds change
	resolver  *Resolver                      // Options.Resolver when that is nil
	tee       *teeDialer
	poolMu    sync.Mutex // serializes transport replacement
	noTee     bool       // benchmarks only: skip the byte-exact copy (the baseline)

	proxied atomic.Pointer[proxyPools] // one pool per proxy of Options.Proxies
}

// New returns a Fetcher with opts (zero fields defaulted).
//
// The transport speaks HTTP/1.1, whose Result.RawRequest and
// Result.RawResponse are the messages a WARC 1.1 request/response record
// holds, copied off the connection (wire.go; TLS is done by the dialer so
// the copy is of the plain text), and HTTP/2 over TLS when the server
// chooses it by ALPN and Options.DisableHTTP2 is false (h2.go: those
// records are the HTTP/1.1 form of the exchange); it ignores proxy
// environment variables (traffic leaves through a proxy only as
// Options.Proxies says, through a tunnel whose target the SSRF guard
// checked: proxy.go); it never decompresses on its own (the body is kept as
// transferred); host names are resolved by a caching Resolver (dns.go) and
// each resolved address is checked by the SSRF guard as it is dialled; and
// its pool is bounded as Options.MaxConnsPerHost and MaxIdleConns say, idle
// connections closed after IdleConnTimeout.
func New(opts Options) *Fetcher {
	f := &Fetcher{resolver: NewResolver(ResolverOptions{})}
	o := opts.withDefaults()
	f.opts.Store(&o)
	dialer := &net.Dialer{
		Timeout:   30 * time.Second, // the fetch context usually ends it sooner
		KeepAlive: 30 * time.Second,
		Control:   ssrfControl(func() bool { return f.opts.Load().AllowPrivateNetworks }),
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return f.Resolver().dialFunc(dialer)(ctx, network, addr)
	}
	f.tee = &teeDialer{dial: dial, tlsTimeout: 10 * time.Second,
		roots: func() *x509.CertPool { return f.opts.Load().RootCAs }}
	f.transport.Store(f.newTransport(o))
	f.proxied.Store(f.newProxyPools(o))
	return f
}

// newTransport returns a transport with the pool bounds of o.
func (f *Fetcher) newTransport(o Options) *http.Transport { return f.newTransportFor(o, f.tee) }

// newTransportFor returns a transport with the pool bounds of o that
// dials with tee.
func (f *Fetcher) newTransportFor(o Options, tee *teeDialer) *http.Transport {
	perHostIdle := MaxIdleConnsPerHost
	if o.MaxConnsPerHost > 0 {
		perHostIdle = min(o.MaxConnsPerHost, MaxIdleConnsPerHost)
	}
	protos := alpnProtos(!o.DisableHTTP2)
	var nextProto map[string]func(string, *tls.Conn) http.RoundTripper // nil: net/http's HTTP/2 client
	if o.DisableHTTP2 {
		nextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Transport{
		Proxy:       nil,
		DialContext: tee.DialContext,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return tee.dialTLS(ctx, network, addr, protos)
		},
		ForceAttemptHTTP2: !o.DisableHTTP2,
		TLSNextProto:      nextProto,
		// No TLSHandshakeTimeout: the tee dialer does TLS (10 s bound).
		DisableCompression:     true,
		MaxIdleConns:           o.MaxIdleConns,
		MaxIdleConnsPerHost:    perHostIdle,
		MaxConnsPerHost:        o.MaxConnsPerHost,
		IdleConnTimeout:        IdleConnTimeout,
		MaxResponseHeaderBytes: 1 << 20,
		WriteBufferSize:        writeBufferSize,
	}
}

// writeBufferSize is each connection's request write buffer (net/http's
// default is 4 KiB): a crawler's request is a header block of a few hundred
// bytes, and a longer one (many cookies) is written in more than one
// write, so the buffer only costs memory while the connection is kept
// (5,000 hosts with a connection each: 20 MiB of 4 KiB buffers, 5 MiB of
// these).
const writeBufferSize = 1 << 10

// The Fetcher's keep-alive pool (net/http.Transport): a host's connection
// is reused by its next request while idle for less than IdleConnTimeout.
// Idle connections are at most Options.MaxIdleConns in all (never more
// than MaxIdleConns), the least recently used closed first, and at most
// min(Options.MaxConnsPerHost, MaxIdleConnsPerHost) per host; so however
// many hosts a crawl visits, the pool holds at most MaxIdleConns idle
// sockets (file descriptors: the worker sizes the pool within the
// process's limit), each for at most IdleConnTimeout. MaxIdleConns is
// room for one connection to each host of a wide crawl's worker (8,192
// hosts at about 64 KiB each: 512 MiB at most). Connections in use are bounded by the
// caller's requests in flight.
const (
	MaxIdleConns        = 8192
	MaxIdleConnsPerHost = 64
	IdleConnTimeout     = 60 * time.Second
)

// Resolver returns the resolver dials use: Options.Resolver, or the
// Fetcher's own.
func (f *Fetcher) Resolver() *Resolver {
	if r := f.opts.Load().Resolver; r != nil {
		return r
	}
	return f.resolver
}

// Options returns the options in effect, with defaults filled in.
func (f *Fetcher) Options() Options { return *f.opts.Load() }

// SetOptions replaces the options live; fetches already running keep the
// options they started with. Zero fields take the defaults. Turning
// AllowPrivateNetworks off also closes idle pooled connections, and every
// fetch re-checks the address of the connection it is handed, so no pooled
// connection to a private address is reused afterwards.
func (f *Fetcher) SetOptions(opts Options) {
	o := opts.withDefaults()
	f.poolMu.Lock()
	defer f.poolMu.Unlock()
	old := f.opts.Swap(&o)
	if old.MaxConnsPerHost != o.MaxConnsPerHost || old.MaxIdleConns != o.MaxIdleConns ||
		old.DisableHTTP2 != o.DisableHTTP2 || old.Proxies.settingKey() != o.Proxies.settingKey() {
		// A pooled connection through one proxy is never reused for a
		// URL a new setting routes otherwise.
		prev := f.proxied.Swap(f.newProxyPools(o))
		prev.closeIdle()
	}
	if old.MaxConnsPerHost != o.MaxConnsPerHost || old.MaxIdleConns != o.MaxIdleConns || old.DisableHTTP2 != o.DisableHTTP2 {
		// A transport's bounds cannot change under it: a new one takes
		// over, and the old one's connections close as their fetches end
		// (idle ones now, the rest within IdleConnTimeout).
		prev := f.transport.Swap(f.newTransport(o))
		prev.CloseIdleConnections()
		return
	}
	if old.AllowPrivateNetworks && !o.AllowPrivateNetworks {
		f.transport.Load().CloseIdleConnections()
		f.proxied.Load().closeIdle()
	}
}

// Close closes idle pooled connections. The Fetcher stays usable.
func (f *Fetcher) Close() {
	f.transport.Load().CloseIdleConnections()
	f.proxied.Load().closeIdle()
}

// Fetch GETs rawURL once and returns the response with its body, capped at
// Options.MaxBodyBytes. It never follows redirects: a 3xx comes back as a
// Result whose Redirect holds the Location resolved against rawURL (RFC 9110
// section 10.2.2). Any HTTP status, including 4xx and 5xx, is a Result with
// a nil error.
//
// It sends "Accept-Encoding: gzip" and keeps the body as transferred; use
// Result.DecodedBody to get the decoded bytes.
//
// With a cookie jar in ctx (WithCookieJar) it sends the jar's cookies for
// rawURL in one Cookie header, part of Result.RawRequest, and stores the
// response's Set-Cookie fields in the jar, whatever the status.
//
// Errors are *Error with a negative crawl-log code (see codes.go):
// CodeUnfetchableURI for a bad URL or a scheme other than http/https,
// CodeDNSFailed, CodeConnectFailed, CodeConnectLost, CodeTimeout,
// CodeBlockedByUser (SSRF guard), CodeCanceled when ctx is cancelled.
// The Result is nil whenever the error is non-nil.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	return f.fetch(ctx, rawURL, 0, Conditions{}, false)
}

// FetchIf is Fetch with the validators of cond sent as a conditional GET
// (RFC 9110 section 13.1; Conditions says which are sent): a server that
// finds the resource unchanged answers 304 Not Modified, an ordinary
// Result with an empty Body. Result.Conditional reports whether the
// request carried any condition. Errors as Fetch's.
func (f *Fetcher) FetchIf(ctx context.Context, rawURL string, cond Conditions) (*Result, error) {
	return f.fetch(ctx, rawURL, 0, cond, false)
}

// FetchContent is FetchIf for a page subject to the content rules
// (Options.Content Accept and Reject): a 2xx response whose media type
// (a missing Content-Type counts as OctetStream) they refuse is not read
// past its header. Its connection is closed, so the server stops
// sending, and the error is a *Error with CodeMIMERejected whose cause is
// a *RejectedError (status, media type, rule). Other statuses (redirects,
// 304, errors) are not judged: their body is not the resource. Callers
// use FetchIf for what must be read whatever its type (page requisites,
// sitemaps; robots.txt has its own path).
func (f *Fetcher) FetchContent(ctx context.Context, rawURL string, cond Conditions) (*Result, error) {
	return f.fetch(ctx, rawURL, 0, cond, true)
}

// fetch is FetchIf with an optional body cap overriding Options.MaxBodyBytes
// and the content rules' BodyCaps (maxBody > 0), used for robots.txt's
// 500 KiB limit, and with the content rules' Accept and Reject applied
// when filter is set (FetchContent).
func (f *Fetcher) fetch(ctx context.Context, rawURL string, maxBody int64, cond Conditions, filter bool) (*Result, error) {
	o := f.opts.Load()
	fixedCap := maxBody > 0
	wireBody := maxBody
	if !fixedCap {
		maxBody = o.MaxBodyBytes
		wireBody = o.Content.maxCap(maxBody)
	}
	reqCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	wc := &wireCapture{allowPrivate: o.AllowPrivateNetworks, wireLimit: wireBody + wireSlack, noTee: f.noTee}
	req, err := newGet(httptrace.WithClientTrace(reqCtx, wc.trace()), rawURL, o.UserAgent)
	if err != nil {
		return nil, err
	}
	wc.requestLine = "GET " + req.URL.RequestURI() + " HTTP/1.1\r\n"
	conditional := cond.apply(req.Header, time.Now())
	jar := cookieJarOf(ctx)
	if jar != nil {
		// Set before the transport writes the request, so the wire
		// capture (the WARC request record) holds the Cookie header sent.
		for _, c := range jar.Cookies(req.URL) {
			req.AddCookie(c)
		}
	}

	started := time.Now()
	transport, via := f.transportFor(rawURL)
	resp, err := transport.RoundTrip(req)
	if err != nil {
		wc.finish() // detach the recorder from a connection that may live on
		code := classify(ctx, reqCtx, err, phaseRoundTrip)
		code, err = wc.h2OnlyHint(o, code, err)
		if wc.wasBlocked() {
			code, err = CodeBlockedByUser, fmt.Errorf("%w: pooled connection to %s: %v", ErrBlockedAddress, wc.remoteIP(), err)
		}
		o.Logger.Debug("fetch failed", "url", rawURL, "code", code, "err", err, "proxy", redactedProxy(via))
		return nil, &Error{Code: code, URL: rawURL, Err: err}
	}
	defer resp.Body.Close()
	if jar != nil {
		jar.SetCookies(req.URL, resp.Cookies()) // whatever the status, as browsers do
	}

	mt := responseMIME(resp) // once: the body cap and the content rules judge the same type
	if !fixedCap {
		maxBody = o.Content.MaxBody(mt, maxBody)
	}
	if filter && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if rej := rejected(o.Content, resp.StatusCode, mt); rej != nil {
			// Closing an unread body closes the connection (net/http does
			// not drain it), so the server stops sending.
			wc.finish()
			o.Logger.Debug("fetch stopped after the header", "url", rawURL, "code", CodeMIMERejected, "err", rej)
			return nil, &Error{Code: CodeMIMERejected, URL: rawURL, Err: rej}
		}
	}
	body, truncated, err := readBody(resp.Body, maxBody, resp.ContentLength)
	wireReq, wireResp := wc.finish()
	if err != nil {
		code := classify(ctx, reqCtx, err, phaseBody)
		o.Logger.Debug("fetch failed reading body", "url", rawURL, "code", code, "bytes", len(body), "err", err)
		return nil, &Error{Code: code, URL: rawURL, Err: fmt.Errorf("reading body after %d bytes: %w", len(body), err)}
	}

	res := &Result{
		URL:         rawURL,
		Status:      resp.StatusCode,
		Header:      resp.Header,
		RawRequest:  wireReq,
		Body:        body,
		ContentType: resp.Header.Get("Content-Type"),
		RemoteIP:    wc.remoteIP(),
		Started:     started,
		Reached:     wc.reachedAt(),
		Answered:    wc.answeredAt(),
		Duration:    time.Since(started),
		Truncated:   truncated,
		Conditional: conditional,
		Protocol:    protocolOf(resp),
	}
	res.TLS, res.CipherSuite = wc.tlsOf()
	res.RawResponse, res.RawResponseHeader = wireResponse(wireResp, resp, body)
	if len(res.RawRequest) == 0 {
		res.RawRequest = wc.request(req, res.Protocol == ProtoHTTP2)
	}
	res.Redirect = redirectTarget(resp)
	res.MIME = resultMIME(res)
	o.Logger.Debug("fetched", "url", rawURL, "status", res.Status, "bytes", len(body),
		"truncated", truncated, "ip", res.RemoteIP, "duration", res.Duration)
	return res, nil
}

// rejected returns why rules refuse a response of status and media type
// mt (responseMIME) as a *RejectedError, or nil.
func rejected(rules ContentRules, status int, mt string) *RejectedError {
	if no, why := rules.Rejects(mt); no {
		return &RejectedError{Status: status, MIME: mt, Why: why}
	}
	return nil
}

// newGet returns the GET request for rawURL with the crawler's headers, or
// an *Error with CodeUnfetchableURI when rawURL is not an absolute http or
// https URL (checkHTTPURL).
func newGet(ctx context.Context, rawURL, userAgent string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, &Error{Code: CodeUnfetchableURI, URL: rawURL, Err: fmt.Errorf("invalid URL: %w", err)}
	}
	if err := checkHTTPURL(rawURL, req.URL); err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", acceptHeader)
	// Set explicitly, so the transport neither adds its own nor decodes the
	// body: the stored body is the one transferred.
	req.Header.Set("Accept-Encoding", "gzip")
	return req, nil
}

// checkHTTPURL returns nil if u, parsed from rawURL, is an absolute http or
// https URL with a host, else an *Error with CodeUnfetchableURI naming
// rawURL and the reason. The frontier admits only such URLs
// (frontier.ErrUnsupportedScheme); this guards callers that bypass it.
func checkHTTPURL(rawURL string, u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &Error{Code: CodeUnfetchableURI, URL: rawURL,
			Err: fmt.Errorf("unsupported URL scheme (only http and https): %q", u.Scheme)}
	}
	if u.Host == "" {
		return &Error{Code: CodeUnfetchableURI, URL: rawURL, Err: errors.New("invalid URL: no host")}
	}
	return nil
}

// redirectTarget returns the Location of a 3xx response resolved against
// the request URL (RFC 9110 section 10.2.2), or "" for other statuses, for
// 304 Not Modified (not a redirect: section 15.4.5) and for a missing or
// unparsable Location.
func redirectTarget(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
		return ""
	}
	loc, err := resp.Location()
	if err != nil {
		return ""
	}
	return loc.String()
}

// resultMIME returns the media type of res: its Content-Type's, or without
// one, the type sniffed per the WHATWG MIME Sniffing Standard, as browsers
// do, from the first 512 decoded body bytes; "" for an empty body without
// Content-Type.
func resultMIME(res *Result) string {
	if mt := mediaType(res.ContentType); mt != "" || len(res.Body) == 0 {
		return mt
	}
	head, _ := res.DecodedBody(512)
	if len(head) == 0 {
		return ""
	}
	return mediaType(http.DetectContentType(head))
}

// readBody reads at most limit bytes of body. If the body is longer it stops
// after limit bytes and reports truncated. contentLength (-1 if unknown)
// sizes the buffer.
func readBody(body io.Reader, limit int64, contentLength int64) (data []byte, truncated bool, err error) {
	var buf bytes.Buffer
	if contentLength > 0 && contentLength <= limit {
		buf.Grow(int(contentLength))
	}
	_, err = buf.ReadFrom(io.LimitReader(body, limit+1))
	data = buf.Bytes()
	if int64(len(data)) > limit {
		return data[:limit], true, nil
	}
	return data, false, err
}

// mediaType returns the lower-case type/subtype of a Content-Type value, or
// "" if there is none.
func mediaType(contentType string) string {
	if strings.TrimSpace(contentType) == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(contentType); mt != "" && (err == nil || errors.Is(err, mime.ErrInvalidMediaParameter)) {
		return mt
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// wireResponse returns the response as captured on the wire and its header
// block. A capture is used only when it starts with the status line and
// holds a complete header block. When the body has no transfer coding
// (Content-Length or read to close) its wire bytes are the stored body, so
// the capture is cut right after them: block and payload agree for a
// truncated body, and stray bytes a server sent past its Content-Length
// are not archived as part of the response. Without a usable capture (cap hit, or the
// request went out on a connection without a tee) raw is nil and the header
// is rebuilt by rawResponseHeader.
func wireResponse(capture []byte, resp *http.Response, body []byte) (raw, header []byte) {
	if resp.ProtoMajor == 2 {
		return nil, h2ResponseHeader(resp) // no HTTP/1.1 bytes to copy (h2.go)
	}
	capture = trimInformational(capture)
	end := headerEnd(capture)
	if capture == nil || end < 0 || !bytes.HasPrefix(capture, []byte("HTTP/1.")) {
		return nil, rawResponseHeader(resp)
	}
	if len(resp.TransferEncoding) == 0 && len(capture) > end+len(body) {
		capture = capture[:end+len(body)]
	}
	return capture, capture[:end]
}

// rawResponseHeader rebuilds the status line and header block of resp in
// HTTP/1.1 wire form. Go's client parses the header into a map, so field
// order is lost (fields are written sorted by name, in canonical case) and
// it removes Transfer-Encoding after undoing chunked framing; the stored
// body is the de-chunked one, so leaving Transfer-Encoding out keeps the
// record self-consistent (a WARC reader must not try to de-chunk it).
func rawResponseHeader(resp *http.Response) []byte {
	var b bytes.Buffer
	proto := resp.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	b.WriteString(proto)
	b.WriteByte(' ')
	b.WriteString(resp.Status) // "200 OK"
	b.WriteString("\r\n")
	h := resp.Header
	if h.Get("Transfer-Encoding") != "" {
		h = h.Clone()
		h.Del("Transfer-Encoding")
	}
	_ = h.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}

// wireCapture records, through net/http/httptrace, the request header block
// as the transport wrote it and the peer of the connection used. The
// transport may retry a request on a fresh connection after a stale pooled
// one failed, so GotConn starts a new capture each time.
type wireCapture struct {
	allowPrivate bool
	requestLine  string
	wireLimit    int64 // cap of each direction of the byte-exact copy
	noTee        bool  // benchmark baseline: no byte-exact copy

	mu      sync.Mutex
	buf     bytes.Buffer
	done    bool      // WroteHeaders seen for the current connection
	sent    time.Time // when WroteHeaders was seen for it
	reused  bool      // the connection had served a request before (GotConnInfo.Reused)
	firstAt time.Time // when the response's first byte came (GotFirstResponseByte)
	remote  netip.Addr
	tls     *tls.ConnectionState // of the connection of the current attempt; nil: plain
	blocked bool
	conn    *teeConn      // connection of the current attempt
	rec     *wireRecorder // its byte-exact copy
}

// finish detaches the recorder and returns the exact request and response
// bytes of the last attempt, or nils if they were not captured completely.
func (wc *wireCapture) finish() (req, resp []byte) {
	wc.mu.Lock()
	conn, rec := wc.conn, wc.rec
	wc.mu.Unlock()
	if conn == nil || rec == nil {
		return nil, nil
	}
	conn.detach(rec)
	req, resp, ok := rec.result()
	if !ok {
		return nil, nil
	}
	return req, resp
}

// trace returns the httptrace hooks that feed wc.
func (wc *wireCapture) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			ip := remoteIPOf(info.Conn)
			wc.mu.Lock()
			if wc.conn != nil && wc.rec != nil {
				wc.conn.detach(wc.rec) // an earlier attempt on another connection
			}
			wc.conn, wc.rec = nil, nil
			if tc, ok := info.Conn.(*teeConn); ok && !wc.noTee {
				wc.conn, wc.rec = tc, &wireRecorder{limit: wc.wireLimit}
				tc.attach(wc.rec)
			}
			wc.buf.Reset()
			wc.buf.WriteString(wc.requestLine)
			wc.done = false
			wc.sent, wc.firstAt, wc.reused = time.Time{}, time.Time{}, info.Reused
			wc.remote = ip
			wc.tls = connTLS(info.Conn)
			wc.mu.Unlock()
			if !wc.allowPrivate {
				// A pooled connection may have been dialled while private
				// networks were allowed (before SetOptions turned that off).
				// Close it before the request is written.
				if blocked, _ := BlockedAddr(ip); blocked {
					wc.mu.Lock()
					wc.blocked = true
					wc.mu.Unlock()
					info.Conn.Close()
				}
			}
		},
		WroteHeaderField: func(key string, values []string) {
			key, ok := h2RequestField(key)
			if !ok {
				return
			}
			wc.mu.Lock()
			for _, v := range values {
				wc.buf.WriteString(key)
				wc.buf.WriteString(": ")
				wc.buf.WriteString(v)
				wc.buf.WriteString("\r\n")
			}
			wc.mu.Unlock()
		},
		WroteHeaders: func() {
			wc.mu.Lock()
			wc.buf.WriteString("\r\n")
			wc.done = true
			wc.sent = time.Now()
			wc.mu.Unlock()
		},
		GotFirstResponseByte: func() {
			wc.mu.Lock()
			wc.firstAt = time.Now()
			wc.mu.Unlock()
		},
	}
}

// request returns the captured request header block (h2: the answer came
// over HTTP/2, whose captured fields are complete once it came). If the
// capture is incomplete (a server that answered before reading the whole
// request), it falls back to req's own HTTP/1.1 serialization, which uses
// the same writer the transport uses.
func (wc *wireCapture) request(req *http.Request, h2 bool) []byte {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.done {
		return bytes.Clone(wc.buf.Bytes())
	}
	if h2 && wc.buf.Len() > len(wc.requestLine) {
		// HTTP/2 encodes the whole header block before it sends it, so
		// once the answer came every field was captured; WroteHeaders (the
		// block's end) may not have run yet: the stream's writer goroutine
		// runs beside the reader that returned the response (seen on a
		// loaded machine).
		return append(bytes.Clone(wc.buf.Bytes()), "\r\n"...)
	}
	var b bytes.Buffer
	// A context without the trace, so writing does not feed the capture.
	_ = req.WithContext(context.Background()).Write(&b)
	return b.Bytes()
}

// reachedAt returns when the last attempt's request is taken to have
// reached the server (Result.Reached): on a reused keep-alive connection,
// when its header block was written; on a new one, when the response's
// first byte came (a server may accept a new connection late, so only its
// answer bounds when it read the request); the zero time if not known.
func (wc *wireCapture) reachedAt() time.Time {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.reused && !wc.sent.IsZero() {
		return wc.sent
	}
	return wc.firstAt
}

// answeredAt returns when the last attempt's response began
// (Result.Answered); the zero time if not known.
func (wc *wireCapture) answeredAt() time.Time {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return wc.firstAt
}

// remoteIP returns the IP of the connection the request went out on, or ""
// if no connection was obtained.
func (wc *wireCapture) remoteIP() string {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if !wc.remote.IsValid() {
		return ""
	}
	return wc.remote.String()
}

// wasBlocked reports whether GotConn closed a pooled connection to a blocked
// address.
func (wc *wireCapture) wasBlocked() bool {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return wc.blocked
}

// remoteIPOf returns the peer IP of c, or the zero Addr if it has none.
func remoteIPOf(c net.Conn) netip.Addr {
	if c == nil {
		return netip.Addr{}
	}
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr().Unmap()
		}
	}
	return netip.Addr{}
}
