package fetch

// HTTP/2 (RFC 9113) over TLS, chosen by ALPN (RFC 7301); no h2c. When
// Options.DisableHTTP2 is false the TLS dialer offers "h2" before
// "http/1.1": a server that picks h2 gets a bare *tls.Conn, which
// net/http's transport hands to its bundled HTTP/2 client (one connection
// per host, each request one stream); a server that picks http/1.1 gets
// the teeConn of wire.go as before, so its records stay byte-exact.
//
// An h2 exchange has no HTTP/1.1 bytes to copy: what crosses the
// connection is binary frames with HPACK-compressed header blocks, which
// replay tools do not read. The records hold instead the HTTP/1.1 form of
// the exchange, as Heritrix's FetchHTTP2, Nutch and StormCrawler write it,
// marked "WARC-Protocol: h2" (the WARC-Protocol field proposal of the IIPC
// warc-specifications): request line and status line "HTTP/1.1", the
// header fields as sent / received, the body as received (DATA frame
// payloads joined; Content-Encoding untouched). docs/design.md
// ("HTTP/2") lists what of this is exact and what is rebuilt.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Protocol identifiers of Result.Protocol and Result.TLS: the names the
// WARC-Protocol field proposal gives (the ALPN identifiers for HTTP).
const (
	ProtoHTTP2  = "h2"
	ProtoHTTP11 = "http/1.1"
	ProtoHTTP10 = "http/1.0"
)

// alpnProtos returns the ALPN protocols the TLS dialer offers, most
// preferred first: h2 then http/1.1, or http/1.1 alone.
func alpnProtos(http2 bool) []string {
	if http2 {
		return []string{"h2", "http/1.1"}
	}
	return []string{"http/1.1"}
}

// protocolOf returns the Result.Protocol of resp: ProtoHTTP2 for HTTP/2,
// "http/1.0" for HTTP/1.0, else ProtoHTTP11.
func protocolOf(resp *http.Response) string {
	switch {
	case resp.ProtoMajor == 2:
		return ProtoHTTP2
	case resp.ProtoMajor == 1 && resp.ProtoMinor == 0:
		return ProtoHTTP10
	}
	return ProtoHTTP11
}

// connTLS returns the TLS state of c (a *tls.Conn, or a teeConn around
// one), or nil for a plain connection.
func connTLS(c net.Conn) *tls.ConnectionState {
	if tc, ok := c.(*teeConn); ok {
		c = tc.Conn
	}
	if tc, ok := c.(*tls.Conn); ok {
		cs := tc.ConnectionState()
		return &cs
	}
	return nil
}

// tlsName returns the WARC-Protocol name of a TLS version ("tls/1.3"),
// or "" for 0 (no TLS). Versions crypto/tls cannot negotiate as a client
// (SSL 3.0 and older) are named "ssl/3.0" or by their hex code.
func tlsName(version uint16) string {
	switch version {
	case 0:
		return ""
	case tls.VersionTLS10:
		return "tls/1.0"
	case tls.VersionTLS11:
		return "tls/1.1"
	case tls.VersionTLS12:
		return "tls/1.2"
	case tls.VersionTLS13:
		return "tls/1.3"
	case tls.VersionSSL30: //nolint:staticcheck // named, never negotiated
		return "ssl/3.0"
	}
	return "tls/0x" + strconv.FormatUint(uint64(version), 16)
}

// h2RequestField maps a request header field the HTTP/2 client wrote
// (httptrace WroteHeaderField: names lower case, pseudo-header fields
// first) to its HTTP/1.1 form: ":authority" becomes "host" (RFC 9113
// section 8.3.1), the other pseudo-header fields (":method", ":path",
// ":scheme", which the request line carries) are dropped (ok false).
// Regular fields are kept as sent.
func h2RequestField(name string) (h1 string, ok bool) {
	if !strings.HasPrefix(name, ":") {
		return name, true
	}
	if name == ":authority" {
		return "host", true
	}
	return "", false
}

// h2ResponseHeader rebuilds the HTTP/1.1 form of an HTTP/2 response's
// header block: the status line "HTTP/1.1 <code> <reason>" (HTTP/2 sends
// no reason phrase, RFC 9113 section 8.3.2: it is the standard one of
// http.StatusText, empty for an unknown code), then one "name: value" line
// per field value, names in lower case as HTTP/2 sends them (RFC 9113
// section 8.2.2: net/http stores them canonicalized, so lowering them
// restores the received name), fields sorted by name (net/http keeps no
// order across names), a name's values in their received order, then the
// empty line. Pseudo-header fields are not in resp.Header and so not
// written; trailers are not written.
func h2ResponseHeader(resp *http.Response) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(resp.StatusCode))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(resp.StatusCode))
	b.WriteString("\r\n")
	names := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		name := strings.ToLower(k)
		for _, v := range resp.Header[k] {
			b.WriteString(name)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// tlsOf returns the WARC-Protocol name of the TLS version of the last
// attempt's connection ("tls/1.3") and its cipher suite's IANA name
// ("TLS_AES_128_GCM_SHA256"), or "", "" for a plain connection.
func (wc *wireCapture) tlsOf() (version, cipherSuite string) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.tls == nil {
		return "", ""
	}
	return tlsName(wc.tls.Version), tls.CipherSuiteName(wc.tls.CipherSuite)
}

// ErrNoCommonProtocol is wrapped by the error of a fetch whose server
// refused every ALPN protocol offered (TLS alert no_application_protocol,
// RFC 7301 section 3.2): typically a server that speaks only HTTP/2 while
// Options.DisableHTTP2 is set. Such a fetch fails with CodeConnectFailed.
var ErrNoCommonProtocol = errors.New("server accepts none of the protocols offered by ALPN")

// alpnRefused returns err of a TLS handshake with addr, offering protos,
// wrapped with ErrNoCommonProtocol (and a *net.OpError of Op "dial", so
// classify says CodeConnectFailed) when the server refused every
// protocol; other errors are returned as they are.
func alpnRefused(addr string, protos []string, err error) error {
	if !strings.Contains(err.Error(), "no application protocol") {
		return err
	}
	hint := ""
	if !slices.Contains(protos, "h2") {
		hint = " (HTTP/2 is off: config key http2)"
	}
	return &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("TLS handshake with %s offering %s: %w%s: %w",
		addr, strings.Join(protos, ", "), ErrNoCommonProtocol, hint, err)}
}

// h2OnlyHint returns the code and error of a fetch that got no response
// (classified code, failed with err), with the likely cause added when it
// fits a server that refuses HTTP/1.1 (one that speaks only HTTP/2 accepts
// a TLS client that offers only http/1.1, chooses no protocol by ALPN,
// and closes the connection unanswered): HTTP/2 was off (o.DisableHTTP2),
// the connection's TLS handshake chose no protocol, and the connection
// was lost (CodeConnectLost, or CodeRuntimeError for net/http's "server
// closed idle connection"). Such a failure is CodeConnectLost. Others are
// returned as they are.
func (wc *wireCapture) h2OnlyHint(o *Options, code int, err error) (int, error) {
	if !o.DisableHTTP2 || (code != CodeConnectLost && code != CodeRuntimeError) {
		return code, err
	}
	wc.mu.Lock()
	st := wc.tls
	wc.mu.Unlock()
	if st == nil || st.NegotiatedProtocol != "" {
		return code, err
	}
	return CodeConnectLost, fmt.Errorf("%w (the server chose no protocol by ALPN and closed the connection without answering HTTP/1.1: "+
		"it may speak only HTTP/2, which is off: config key http2)", err)
}
