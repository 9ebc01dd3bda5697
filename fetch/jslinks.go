package fetch

import (
	"bytes"
	"net/url"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// JavaScript link extraction limits.
const (
	// MaxJSScanBytes is how much of a script ExtractJSLinks reads: 4 MiB;
	// the rest is not scanned.
	MaxJSScanBytes = 4 << 20
	// DefaultMaxJSLinks is how many URLs ExtractJSLinks returns per script
	// at most when called with maxLinks <= 0.
	DefaultMaxJSLinks = 1000
)

// IsJavaScript reports whether mediaType (lower case, no parameters) is a
// JavaScript type (text/javascript, application/javascript and the other
// names of the WHATWG MIME Sniffing Standard's JavaScript MIME types).
func IsJavaScript(mediaType string) bool {
	switch mediaType {
	case "text/javascript", "application/javascript", "application/x-javascript",
		"application/ecmascript", "text/ecmascript", "application/x-ecmascript",
		"text/x-javascript", "text/jscript", "text/livescript":
		return true
	}
	return false
}

// ExtractJSLinks returns the string literals of a script that look like
// URLs, resolved against base, as Heritrix's ExtractorJS takes
// speculative links: a literal is what lies between a pair of the same
// quote (' or "), on one line, at most MaxLinkLength bytes and without
// whitespace, a quote of the other kind or a backslash (escaped literals
// are skipped, not decoded). It is taken when it is
//
//   - an absolute http or https URL or a protocol-relative one ("//host.tld/..."),
//     with a dot in the host; or
//   - a relative or root-relative path ("/a/b.html", "./img/x.png",
//     "../c.php?x=1") of word characters, "-", "." and "/", with an
//     optional query of name=value pairs and fragment, whose last
//     segment has a file extension of 2 to 5 letters or digits; without a
//     "/" the extension must be one of jsExtensions (so "this.id" or
//     "foo.bar" are not taken); "text/html"-like MIME types are not.
//
// The scan is one pass over at most MaxJSScanBytes bytes (linear time, no
// backtracking, no allocation but the URLs kept); at most maxLinks URLs
// (maxLinks <= 0: DefaultMaxJSLinks), deduplicated, in script order, are
// returned, each absolute, without fragment, serialized by the WHATWG URL
// parser, http or https only.
func ExtractJSLinks(base *url.URL, js []byte, maxLinks int) []string {
	if maxLinks <= 0 {
		maxLinks = DefaultMaxJSLinks
	}
	if len(js) > MaxJSScanBytes {
		js = js[:MaxJSScanBytes]
	}
	baseURL, err := whatwg.Parse(base.String())
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}  // URLs kept
	tried := map[string]bool{} // literals resolved: at most MaxJSScanBytes of them in all
	for i := 0; i < len(js) && len(out) < maxLinks; {
		q := js[i]
		if q != '"' && q != '\'' {
			i++
			continue
		}
		end, ok := literalEnd(js, i+1, q)
		if !ok {
			i = end // resume where the literal was given up: each byte is looked at a bounded number of times
			continue
		}
		// Every form taken has a dot (host or file extension): most
		// literals are passed over here, without a copy.
		if lit := js[i+1 : end]; bytes.IndexByte(lit, '.') >= 0 {
			keepJSLink(string(lit), baseURL, tried, seen, &out)
		}
		i = end + 1
	}
	return out
}

// keepJSLink appends to out the URL literal s gives (likelyJSURL,
// resolveLink) unless s was tried before or the URL is in seen.
func keepJSLink(s string, baseURL *whatwg.Url, tried, seen map[string]bool, out *[]string) {
	if tried[s] || !likelyJSURL(s) {
		return
	}
	tried[s] = true
	if u, ok := resolveLink(baseURL, s); ok && !seen[u] {
		seen[u] = true
		*out = append(*out, u)
	}
}

// literalEnd returns the index of the quote q closing the literal that
// starts at start, and true; or, when the literal is not a candidate (too
// long, or holds whitespace, the other quote or a backslash), the index
// to resume scanning at (that byte, never before start) and false.
func literalEnd(js []byte, start int, q byte) (int, bool) {
	for j := start; j < len(js); j++ {
		c := js[j]
		switch {
		case c == q:
			return j, true
		case j-start >= MaxLinkLength:
			return j, false
		case c <= ' ' || c == '\\' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>':
			switch c {
			case '"', '\'':
				return j, false // may open the next literal
			case '\\':
				return j + 2, false // an escaped byte opens nothing
			}
			return j + 1, false
		}
	}
	return len(js), false
}

// jsExtensions are the file extensions a bare file name in a script
// ("logo.png", no "/") needs to be taken as a link.
var jsExtensions = map[string]bool{
	"html": true, "htm": true, "xhtml": true, "php": true, "asp": true, "aspx": true, "jsp": true,
	"js": true, "mjs": true, "css": true, "json": true, "xml": true, "txt": true, "pdf": true,
	"png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "webp": true, "ico": true, "avif": true,
	"mp4": true, "webm": true, "mp3": true, "ogg": true, "woff": true, "woff2": true, "ttf": true,
}

// likelyJSURL reports whether a literal looks like a URL (ExtractJSLinks).
func likelyJSURL(s string) bool {
	lower := strings.ToLower(s)
	for _, p := range []string{"http://", "https://", "//"} {
		if rest, ok := strings.CutPrefix(lower, p); ok {
			host, _, _ := strings.Cut(rest, "/")
			host, _, _ = strings.Cut(host, "?")
			return strings.Contains(strings.Trim(host, "."), ".")
		}
	}
	path, query, _ := strings.Cut(s, "?")
	path, frag, hasFrag := strings.Cut(path, "#")
	if hasFrag && query == "" && !wordy(frag, "-") {
		return false
	}
	if query != "" {
		query, frag, hasFrag = strings.Cut(query, "#")
		if hasFrag && !wordy(frag, "-") || !likelyQuery(query) {
			return false
		}
	}
	if path == "" || !wordy(path, "-./") || strings.Contains(path, "//") {
		return false
	}
	last := path[strings.LastIndexByte(path, '/')+1:]
	dot := strings.LastIndexByte(last, '.')
	if dot <= 0 {
		return false
	}
	ext := strings.ToLower(last[dot+1:])
	if len(ext) < 2 || len(ext) > 5 || !wordy(ext, "") {
		return false
	}
	if !strings.Contains(path, "/") {
		return jsExtensions[ext]
	}
	typ, _, _ := strings.Cut(lower, "/")
	switch typ {
	case "text", "application", "image", "audio", "video", "font", "model", "multipart":
		if strings.Count(path, "/") == 1 {
			return false // a MIME type ("application/vnd.ms-excel")
		}
	}
	return true
}

// likelyQuery reports whether q is name=value pairs joined by "&".
func likelyQuery(q string) bool {
	for _, kv := range strings.Split(q, "&") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !wordy(k, "") || !wordy(v, "-./%") {
			return false
		}
	}
	return true
}

// wordy reports whether s holds only ASCII letters, digits, "_" and the
// bytes of extra.
func wordy(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}
