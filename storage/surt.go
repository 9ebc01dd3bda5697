package storage

import (
	"sort"
	"strings"

	whatwgurl "github.com/nlnwa/whatwg-url/url"

	"github.com/zkcrawl/zkcrawl/internal/plainurl"
)

// surtKey returns the SURT (Sort-friendly URI Reordering Transform) key of
// url exactly as warcio.js 2.4.11 getSurt (src/lib/utils.ts) computes it
// for the "urlkey" of a CDXJ line, which pywb and ReplayWeb.page look up:
//   - a URL not starting with "http:" or "https:" is returned unchanged;
//   - a leading "www.", "www2." ... label ("www" lowercase, then digits) is
//     removed, then the whole URL lowercased (JavaScript toLowerCase);
//   - the result is parsed by the WHATWG URL Standard (Node's URL; here
//     github.com/nlnwa/whatwg-url, the frontier's parser): default ports
//     dropped, dot segments resolved, path and query percent-encoded,
//     IDN hosts in punycode, userinfo and fragment dropped; when it does
//     not parse, the www-stripped URL is returned as it is;
//   - the key is the host labels reversed and joined by ',', then
//     ":port" when not the default, then ')', the path, and, when the query
//     is not empty, '?' and its '&'-separated arguments sorted
//     (JavaScript Array.prototype.sort: code unit order; the WHATWG query
//     is ASCII, so byte order is the same).
//
// This is warcio.js's own form, not the canonical SURT of the Python surt
// package (no trailing slash removal, no session-id stripping, no scheme):
// the CDXJ files must match what `warcio cdx-index` writes.
func surtKey(url string) string {
	if !strings.HasPrefix(url, "https:") && !strings.HasPrefix(url, "http:") {
		return url
	}
	url = stripWWW(url)
	lower := jsLower(url)
	if p, ok := plainurl.Split(lower); ok {
		return surtJoin(p.Host, p.Port, p.Path, p.Query) // what surtSlow gives, unparsed
	}
	return surtSlow(url, lower)
}

// surtSlow is surtKey by a full WHATWG parse of lower, the lowercased
// www-stripped url. FuzzSURTKeyFast checks that both agree.
func surtSlow(url, lower string) string {
	u, err := whatwgurl.Parse(lower)
	if err != nil {
		return url
	}
	q := u.Search()
	if q != "" {
		q = q[1:]
	}
	return surtJoin(u.Hostname(), u.Port(), u.Pathname(), q)
}

// surtJoin writes the key of surtKey from a parsed URL's host, port ("" for
// the default), path and query (without '?').
func surtJoin(host, port, path, query string) string {
	var b strings.Builder
	b.Grow(len(host) + len(port) + len(path) + len(query) + 3)
	labels := strings.Split(host, ".")
	for i := len(labels) - 1; i >= 0; i-- {
		b.WriteString(labels[i])
		if i > 0 {
			b.WriteByte(',')
		}
	}
	if port != "" {
		b.WriteString(":" + port)
	}
	b.WriteByte(')')
	b.WriteString(path)
	if query != "" {
		args := strings.Split(query, "&")
		sort.Strings(args)
		b.WriteByte('?')
		b.WriteString(strings.Join(args, "&"))
	}
	return b.String()
}

// jsLower lowercases s as JavaScript's String.prototype.toLowerCase does
// (Unicode default case mapping). It differs from strings.ToLower in the one
// unconditional special mapping that changes length: U+0130 (capital I with
// dot above) becomes "i" followed by U+0307 (combining dot above).
func jsLower(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "\u0130", "i\u0307"))
}

// stripWWW removes "www" followed by any digits and '.' right after
// "http://" or "https://" (lowercase only): warcio.js's
// url.replace(/^(https?:\/\/)www\d*\./, "$1").
func stripWWW(url string) string {
	var scheme string
	switch {
	case strings.HasPrefix(url, "http://"):
		scheme = "http://"
	case strings.HasPrefix(url, "https://"):
		scheme = "https://"
	default:
		return url
	}
	rest, ok := strings.CutPrefix(url[len(scheme):], "www")
	if !ok {
		return url
	}
	rest = strings.TrimLeft(rest, "0123456789")
	if rest, ok = strings.CutPrefix(rest, "."); !ok {
		return url
	}
	return scheme + rest
}
