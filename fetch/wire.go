package fetch

// Byte-exact capture of HTTP/1.1 exchanges: a tee on the connection, as
// gowarc (github.com/CorentinB/warc, the library under the Internet
// Archive's Zeno) does. gowarc v0.8.70 itself was tried and not kept: its
// HTTP client dials through its own DNS resolver and dialer (no hook for the
// SSRF guard's dial-time Control in ssrf.go), writes records asynchronously
// through its own file rotator (so the offset of a response's gzip member,
// which the crawl log records, is never known to the caller), and pairs one
// connection with one exchange. The tee below is the part of it we need:
// every connection the transport dials is a teeConn; a fetch attaches a
// wireRecorder to the connection it is handed (httptrace GotConn) and
// detaches it after the last body byte, so the recorder holds exactly the
// bytes of that request and response as they crossed the wire (header case
// and order, Transfer-Encoding framing, Content-Encoding as sent).

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"sync"
	"time"
)

// wireSlack is what a recorder keeps beyond the body limit: the response
// header (the transport allows 1 MiB), chunk framing and the transport's
// read-ahead.
const wireSlack = 1<<20 + 256<<10

// teeConn is a client connection that copies every byte read and written
// to the recorder attached at the time, if any.
type teeConn struct {
	net.Conn
	mu  sync.Mutex
	rec *wireRecorder
}

func (c *teeConn) recorder() *wireRecorder {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec
}

// attach makes r the recorder of c.
func (c *teeConn) attach(r *wireRecorder) {
	c.mu.Lock()
	c.rec = r
	c.mu.Unlock()
}

// detach removes r if it is still c's recorder (the transport may already
// have handed c to the next request, which attached its own).
func (c *teeConn) detach(r *wireRecorder) {
	c.mu.Lock()
	if c.rec == r {
		c.rec = nil
	}
	c.mu.Unlock()
}

// Read reads from the connection and copies what it read to the recorder.
func (c *teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if r := c.recorder(); r != nil {
			r.add(&r.resp, p[:n])
		}
	}
	return n, err
}

// Write writes to the connection and copies what it wrote to the recorder.
func (c *teeConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		if r := c.recorder(); r != nil {
			r.add(&r.req, p[:n])
		}
	}
	return n, err
}

// wireRecorder holds the bytes of one exchange on one connection, each
// direction capped at limit bytes (beyond it the capture is marked
// incomplete and the fetch falls back to the rebuilt header).
type wireRecorder struct {
	limit int64

	mu        sync.Mutex
	req, resp bytes.Buffer
	over      bool
}

func (r *wireRecorder) add(b *bytes.Buffer, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over {
		return
	}
	if int64(b.Len()+len(p)) > r.limit {
		r.over = true
		return
	}
	b.Write(p)
}

// result returns what was recorded (not copied: call it after detach, when
// nothing writes to r any more); ok is false when a cap was hit.
func (r *wireRecorder) result() (req, resp []byte, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.req.Bytes(), r.resp.Bytes(), !r.over
}

// teeDialer wraps plain dials, and TLS dials for https, so that the transport
// only ever holds teeConns. TLS is done here (not by the transport) so the
// tee sees the HTTP bytes inside TLS, not the ciphertext.
type teeDialer struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// tlsTimeout bounds the TLS handshake.
	tlsTimeout time.Duration
	// roots returns the certificate pool to verify servers with (nil:
	// the system's).
	roots func() *x509.CertPool
}

// DialContext dials a plain connection.
func (d *teeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &teeConn{Conn: c}, nil
}

// DialTLSContext dials and completes a TLS handshake with the server name of
// addr (certificates verified as crypto/tls does by default; HTTP/1.1 only).
func (d *teeDialer) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.dialTLS(ctx, network, addr, alpnProtos(false))
}

// dialTLS is DialTLSContext offering the ALPN protocols protos (alpnProtos).
// A connection on which the server chose "h2" is returned as the bare
// *tls.Conn net/http needs to hand it to its HTTP/2 client (h2.go: its
// frames are not copied); any other is a teeConn.
func (d *teeDialer) dialTLS(ctx context.Context, network, addr string, protos []string) (net.Conn, error) {
	raw, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		raw.Close()
		return nil, err
	}
	tc := tls.Client(raw, &tls.Config{ServerName: host, NextProtos: protos, RootCAs: d.roots()})
	hctx, cancel := context.WithTimeout(ctx, d.tlsTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, alpnRefused(addr, protos, err)
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		return tc, nil
	}
	return &teeConn{Conn: tc}, nil
}

// trimInformational drops interim 1xx responses (103 Early Hints and the
// like, RFC 9110 section 15.2) from the start of a captured response, so
// that the capture starts with the final response a WARC record holds.
// 101 Switching Protocols is never followed by another response and is
// kept.
func trimInformational(raw []byte) []byte {
	for len(raw) > 12 && bytes.HasPrefix(raw, []byte("HTTP/1.")) && raw[9] == '1' {
		code, err := strconv.Atoi(string(raw[9:12]))
		if err != nil || code == 101 {
			return raw
		}
		end := headerEnd(raw)
		if end < 0 {
			return raw
		}
		raw = raw[end:]
	}
	return raw
}

// headerEnd returns the index just after the blank line ending the header
// block of an HTTP/1.1 message (CRLF CRLF, or the bare LF LF that net/http
// also accepts), or -1 if there is none.
func headerEnd(msg []byte) int {
	crlf := bytes.Index(msg, []byte("\r\n\r\n"))
	lf := bytes.Index(msg, []byte("\n\n"))
	switch {
	case crlf < 0 && lf < 0:
		return -1
	case lf < 0 || (crlf >= 0 && crlf < lf):
		return crlf + 4
	default:
		return lf + 2
	}
}
