package storage

import (
	"fmt"
	"strings"
)

// The protocol fields of request, response and revisit records: the
// WARC-Protocol field proposal of the IIPC warc-specifications (one field
// per protocol layer, e.g. "WARC-Protocol: h2" and "WARC-Protocol:
// tls/1.3"; what Heritrix, Nutch, StormCrawler and wget-at write) and the
// WARC-Cipher-Suite proposal (the IANA name of the TLS cipher suite).
// Replay tools ignore both; a reader learns from them that a block is the
// HTTP/1.1 form of an HTTP/2 exchange (docs/design.md, "HTTP/2").

// maxProtocolFields bounds Exchange.Protocols.
const maxProtocolFields = 8

// protocolFields validates ex.Protocols and ex.CipherSuite and returns
// their WARC fields, WARC-Protocol ones in the order given, then
// WARC-Cipher-Suite; nil when both are unset. A value must be 1..64
// printable ASCII characters without spaces (a token: "h2", "http/1.1",
// "tls/1.3", "TLS_AES_128_GCM_SHA256"); the error wraps ErrBadExchange and
// names the value.
func protocolFields(ex *Exchange) ([]field, error) {
	if len(ex.Protocols) > maxProtocolFields {
		return nil, fmt.Errorf("%w: %s: %d protocols, at most %d", ErrBadExchange, ex.TargetURI, len(ex.Protocols), maxProtocolFields)
	}
	var fs []field
	for _, p := range ex.Protocols {
		if !fieldToken(p) {
			return nil, fmt.Errorf("%w: %s: protocol %q is not 1..64 printable ASCII characters without spaces", ErrBadExchange, ex.TargetURI, p)
		}
		fs = append(fs, field{"WARC-Protocol", p})
	}
	if ex.CipherSuite != "" {
		if !fieldToken(ex.CipherSuite) {
			return nil, fmt.Errorf("%w: %s: cipher suite %q is not 1..64 printable ASCII characters without spaces", ErrBadExchange, ex.TargetURI, ex.CipherSuite)
		}
		fs = append(fs, field{"WARC-Cipher-Suite", ex.CipherSuite})
	}
	return fs, nil
}

// fieldToken reports whether v is 1..64 bytes of printable ASCII other
// than space.
func fieldToken(v string) bool {
	return len(v) > 0 && len(v) <= 64 && strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r >= 0x7f }) < 0
}
