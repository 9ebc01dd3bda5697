// Package plainurl recognizes "plain" http(s) URLs without parsing them: the
// ones the WHATWG URL Standard (https://url.spec.whatwg.org/, as
// implemented by github.com/nlnwa/whatwg-url) parses and serializes back to
// the same string, with the components read off as slices of it. Crawled
// URLs are nearly all plain once normalized, so the hot paths (a link's
// normalization, a CDXJ line's SURT key, the host key) skip the full parse
// and fall back to it for anything else. The checks are deliberately narrow
// (ASCII only, lowercase DNS names or dotted quads, a small character set,
// no dot segments): ok false only means "parse it"; FuzzSplit checks every
// ok answer against the parser.
package plainurl

import (
	"strconv"
	"strings"
)

// Parts are a plain URL's components, each a slice of the URL.
type Parts struct {
	Scheme string // "http" or "https"
	Host   string // a lowercase ASCII DNS name or a dotted-quad IPv4 address
	Port   string // "" or a port other than the scheme's default, decimal without leading zero
	Path   string // starts with '/'
	Query  string // after '?'; "" when there is none (a URL ending in "?" is not plain)
}

// Split returns u's parts when u is plain: "http://" or "https://", an
// authority that Authority accepts, then a path that starts with '/' and
// holds only pathByte characters and percent-escapes (no "." or ".."
// segment, no escaped dot), then optionally '?' and a non-empty query of
// queryByte characters and percent-escapes; no userinfo, fragment,
// whitespace, control or non-ASCII character. Such a u is its own WHATWG
// serialization (href). ok is false for anything else.
func Split(u string) (p Parts, ok bool) {
	var rest, def string
	switch {
	case strings.HasPrefix(u, "http://"):
		p.Scheme, rest, def = "http", u[len("http://"):], "80"
	case strings.HasPrefix(u, "https://"):
		p.Scheme, rest, def = "https", u[len("https://"):], "443"
	default:
		return p, false
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return p, false
	}
	if p.Host, p.Port, ok = Authority(rest[:slash], def); !ok {
		return p, false
	}
	if p.Path, p.Query, ok = PathQuery(rest[slash:]); !ok {
		return p, false
	}
	return p, true
}

// PathQuery splits s, the path and query of a URL, at its first '?' when s
// is plain as Split defines it: s starts with '/'. ok is false otherwise.
func PathQuery(s string) (path, query string, ok bool) {
	path, query, hasQuery := strings.Cut(s, "?")
	if path == "" || path[0] != '/' || hasQuery && query == "" {
		return "", "", false
	}
	if !plainChars(path, false) || !plainChars(query, true) {
		return "", "", false
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return "", "", false
		}
	}
	return path, query, true
}

// plainChars reports whether s holds only pathByte characters (with
// inQuery also '?') and percent-escapes of two hex digits, and no escaped
// '.' ("%2e" is a dot to a path's dot-segment rule).
func plainChars(s string, inQuery bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || s[i+1] == '2' && (s[i+2] == 'e' || s[i+2] == 'E') {
				return false
			}
			i += 2
		case c == '?' && inQuery:
		case !pathByte(c):
			return false
		}
	}
	return true
}

// pathByte reports the characters WHATWG leaves as they are in a special
// URL's path and query: ALPHA DIGIT and - . _ ~ ! $ & ( ) * + , ; = : @ /
// (the apostrophe, which the query percent-encodes, is left out).
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&()*+,;=:@/", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Authority splits auth, the authority of an http(s) URL (between "//" and
// the path), into host and port when it is plain: a lowercase ASCII DNS
// name (labels of a-z, 0-9 and '-', each starting with a letter or all
// digits, not ending with '-', no "xn--", at most 63 and 253 bytes, an
// all-digit label at most 255 without leading zero, the last label not all
// digits) or a
// dotted-quad IPv4 address without leading zeros, then optionally ':' and a
// port of 1-65535 without leading zero other than defPort (the scheme's
// default, "80" or "443"). WHATWG keeps such an authority as it is; every
// other form (userinfo, uppercase, punycode, IPv6, IPv4 numbers WHATWG
// rewrites, a default or empty port) gives ok false.
func Authority(auth, defPort string) (host, port string, ok bool) {
	host, port, hasPort := strings.Cut(auth, ":")
	if hasPort {
		if port == "" || port == defPort || port[0] == '0' || len(port) > 5 {
			return "", "", false
		}
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return "", "", false
			}
		}
		if n, _ := strconv.Atoi(port); n > 65535 {
			return "", "", false
		}
	}
	if host == "" || len(host) > 253 || strings.Contains(host, "xn--") {
		return "", "", false
	}
	labels, numeric := 0, true
	for label := range strings.SplitSeq(host, ".") {
		labels++
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", "", false
		}
		allDigits := true
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z' || c == '-':
				allDigits = false
			default:
				return "", "", false
			}
		}
		if !allDigits {
			if label[0] < 'a' || label[0] > 'z' {
				return "", "", false // "0x1", "0-0": the parser may read a number
			}
			numeric = false
		} else if n, err := strconv.Atoi(label); err != nil || n > 255 || (len(label) > 1 && label[0] == '0') {
			return "", "", false // a number WHATWG may rewrite
		}
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if strings.Trim(last, "0123456789") == "" && !(numeric && labels == 4) {
		return "", "", false // an IPv4 form other than a dotted quad
	}
	return host, port, true
}
