package frontier

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/nlnwa/whatwg-url/canonicalizer"
	whatwgerrors "github.com/nlnwa/whatwg-url/errors"
	whatwgurl "github.com/nlnwa/whatwg-url/url"

	"github.com/zkcrawl/zkcrawl/internal/plainurl"
)

// MaxURLLength is the longest normalized URL, in bytes, that Normalize and
// Resolve accept. 2,048 bytes is the de-facto limit of browsers and search
// engines (sitemaps.org caps <loc> at 2,048 characters); longer URLs are
// almost always crawler traps or session garbage.
const MaxURLLength = 2048

// MaxRawURLLength is the longest raw input, in bytes, that Normalize and
// Resolve will even parse. It bounds parsing work for hostile input; the
// normalized result must still fit MaxURLLength.
const MaxRawURLLength = 4 * MaxURLLength

// Sentinel errors of Normalize and Resolve. Every returned error wraps exactly
// one of them (test with errors.Is) and names the input URL.
var (
	// ErrInvalidURL: the input does not parse as a URL under the WHATWG URL
	// Standard (https://url.spec.whatwg.org/#url-parsing).
	ErrInvalidURL = errors.New("invalid URL")
	// ErrUnsupportedScheme: the scheme is not http or https (mailto:,
	// javascript:, ftp:, data:, ...).
	ErrUnsupportedScheme = errors.New("unsupported scheme (only http and https are crawled)")
	// ErrEmptyHost: the URL has no host.
	ErrEmptyHost = errors.New("empty host")
	// ErrTooLong: the raw input exceeds MaxRawURLLength or the normalized URL
	// exceeds MaxURLLength bytes.
	ErrTooLong = errors.New("URL too long")
)

// canon is the WHATWG parser with the canonicalization profile used for every
// URL in the frontier: the WHATWG defaults (lowercase scheme and host, IDNA
// UTS #46 to punycode, default port removed, dot segments resolved, empty
// path -> "/", backslashes and tab/newline handled like a browser) plus
// removal of the fragment and of userinfo. The query order is kept as is.
//
// github.com/nlnwa/whatwg-url is the parser of the Norwegian web archive's
// crawler (Veidemann); it passes the web-platform-tests URL suite. Profile
// values are stateless and safe for concurrent use.
var canon = canonicalizer.New(
	canonicalizer.WithRemoveFragment(),
	canonicalizer.WithRemoveUserInfo(),
)

// Normalize parses raw as an absolute URL and returns its canonical form, the
// form used for dedup keys, scope, politeness and the crawl log.
//
// Rules, in order (WHATWG URL Standard parsing, then RFC 3986 section 6.2.2
// syntax-based normalization where WHATWG leaves a choice):
//   - leading/trailing C0 controls and spaces are trimmed, tabs and newlines
//     removed (WHATWG "basic URL parser");
//   - only http and https are accepted, else ErrUnsupportedScheme;
//   - scheme and host are lowercased, IDN hosts converted to punycode
//     (UTS #46, the same mapping as golang.org/x/net/idna), trailing dots of a
//     domain host dropped ("example.com." -> "example.com"), IPv4 in any
//     WHATWG-accepted spelling written dotted-decimal; a URL without a host
//     gets ErrEmptyHost;
//   - the default port (:80 for http, :443 for https) is removed;
//   - dot segments are resolved and an empty path becomes "/";
//   - percent-escapes in path and query are written in uppercase hex, and
//     escapes of unreserved characters (ALPHA DIGIT - . _ ~) decoded
//     (RFC 3986 section 6.2.2.2); non-ASCII is percent-encoded as UTF-8;
//   - the fragment is removed;
//   - userinfo ("user:password@") is dropped, not rejected: links carrying
//     credentials are rare, the page behind them is the same resource for a
//     crawler that never logs in, and credentials must not be copied into
//     ZooKeeper, the crawl log or WARC files;
//   - the query is kept byte for byte in its original parameter order
//     (sorting changes meaning on some sites).
//
// The input may be at most MaxRawURLLength bytes and the result at most
// MaxURLLength bytes, else ErrTooLong. Errors wrap ErrInvalidURL,
// ErrUnsupportedScheme, ErrEmptyHost or ErrTooLong and quote the input.
// Normalize is idempotent: Normalize(Normalize(x)) == Normalize(x).
func Normalize(raw string) (string, error) {
	if len(raw) > MaxRawURLLength {
		return "", fmt.Errorf("normalize %s: %w (%d bytes, limit %d before normalization)", quote(raw), ErrTooLong, len(raw), MaxRawURLLength)
	}
	if IsPlainNormal(raw) {
		return raw, nil // links and queued URLs nearly always are
	}
	return normalizeSlow(raw)
}

// IsPlainNormal reports, without parsing, that raw is its own normal form
// (Normalize returns it unchanged): a plain URL (internal/plainurl: http or
// https, a lowercase DNS name or dotted quad, a small character set, no dot
// segment, no fragment) without '%' and at most MaxURLLength bytes. false
// means only "not known": call Normalize.
func IsPlainNormal(raw string) bool {
	if len(raw) > MaxURLLength || strings.Contains(raw, "%") {
		return false
	}
	_, plain := plainurl.Split(raw)
	return plain
}

// normalizeSlow is Normalize by a full WHATWG parse. FuzzNormalizeFast
// checks that it returns every plain URL without '%' unchanged.
func normalizeSlow(raw string) (string, error) {
	u, err := canon.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("normalize %s: %w: %s", quote(raw), ErrInvalidURL, describe(err))
	}
	return finish(raw, u)
}

// Resolve resolves the reference ref (an href or src attribute value, a
// Location header) against base, the URL of the page where it was found, as
// a browser does (WHATWG URL Standard, "basic URL parser" with a base URL),
// and returns the result normalized as by Normalize. A nil base is an error
// wrapping ErrInvalidURL; ref may be absolute, in which case base is ignored.
// Errors quote ref and wrap the same sentinels as Normalize.
func Resolve(base *url.URL, ref string) (string, error) {
	if base == nil {
		return "", fmt.Errorf("resolve %s: %w: nil base URL", quote(ref), ErrInvalidURL)
	}
	if len(ref) > MaxRawURLLength {
		return "", fmt.Errorf("resolve %s: %w (%d bytes, limit %d before normalization)", quote(ref), ErrTooLong, len(ref), MaxRawURLLength)
	}
	b := base.String()
	if b == "" {
		return "", fmt.Errorf("resolve %s: %w: empty base URL", quote(ref), ErrInvalidURL)
	}
	u, err := canon.ParseRef(b, ref)
	if err != nil {
		return "", fmt.Errorf("resolve %s against %s: %w: %s", quote(ref), quote(b), ErrInvalidURL, describe(err))
	}
	return finish(ref, u)
}

// Host returns the crawl's host key of the URL u: its authority ("host" or
// "host:port") normalized as by Normalize: lowercase, punycode, trailing dots
// dropped, IPv6 in brackets, userinfo dropped, the port kept only when it is
// not the scheme's default ("example.com" for both http://example.com/ and
// https://example.com/, "example.com:8080"). It returns "" when u is not a
// valid http or https URL.
//
// This one key names a host everywhere (docs/design.md, "The host key"):
// politeness (fetch.Politeness), the worker's claim slots, the group owner's
// ready windows and per-host quotas, same_host scope, and the shard group
// (Layout.Group hashes it, so one key's URLs always have one owner). Its
// value is part of frontier layout 2: changing it would move hosts of
// running crawls to other groups.
func Host(u string) string {
	if len(u) > MaxRawURLLength {
		return ""
	}
	if h, ok := hostFast(u); ok {
		return h
	}
	return hostSlow(u)
}

// hostSlow is Host by a full WHATWG parse.
func hostSlow(u string) string {
	p, err := canon.Parse(u)
	if err != nil || !httpScheme(p.Scheme()) {
		return ""
	}
	if err := fixHost(p); err != nil {
		return ""
	}
	return p.Host()
}

// hostFast returns Host(u) without parsing when u is plainly an already
// normalized http(s) URL whose authority is a lowercase ASCII DNS name or a
// dotted-quad IPv4 address, with no userinfo and no default port: the
// crawler's hot path calls Host on such URLs many times per page. ok is
// false for anything else (punycode, IPv6, numeric forms WHATWG rewrites,
// odd lengths), which then takes the full parse. FuzzHostFast checks that
// both agree.
func hostFast(u string) (host string, ok bool) {
	var rest, def string
	switch {
	case strings.HasPrefix(u, "http://"):
		rest, def = u[len("http://"):], "80"
	case strings.HasPrefix(u, "https://"):
		rest, def = u[len("https://"):], "443"
	default:
		return "", false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return "", false // a normalized URL has at least the "/" path
	}
	if _, _, ok := plainurl.Authority(rest[:end], def); !ok {
		return "", false
	}
	return rest[:end], true
}

// finish applies the rules WHATWG parsing does not cover and checks the
// result. in is the caller's input, quoted in errors.
func finish(in string, u *whatwgurl.Url) (string, error) {
	if !httpScheme(u.Scheme()) {
		return "", fmt.Errorf("normalize %s: %w: scheme %q", quote(in), ErrUnsupportedScheme, u.Scheme())
	}
	if err := fixHost(u); err != nil {
		return "", fmt.Errorf("normalize %s: %w", quote(in), err)
	}
	if p := u.Pathname(); p != "" {
		if np := normalizePercent(p); np != p {
			u.SetPathname(np)
		}
	}
	if q := u.Search(); q != "" {
		if nq := normalizePercent(q); nq != q {
			u.SetSearch(nq)
		}
	}
	out := u.Href(true)
	if len(out) > MaxURLLength {
		return "", fmt.Errorf("normalize %s: %w (%d bytes normalized, limit %d)", quote(in), ErrTooLong, len(out), MaxURLLength)
	}
	return out, nil
}

// fixHost drops trailing dots of a domain host and rejects an empty host.
func fixHost(u *whatwgurl.Url) error {
	h := u.Hostname()
	if h != "" && !u.IsIPv6() && !u.IsIPv4() && strings.HasSuffix(h, ".") {
		h = strings.TrimRight(h, ".")
		if h != "" {
			u.SetHostname(h)
			h = u.Hostname()
		}
	}
	if h == "" {
		return ErrEmptyHost
	}
	return nil
}

func httpScheme(s string) bool { return s == "http" || s == "https" }

// normalizePercent uppercases the hex digits of every percent-escape and
// decodes escapes of unreserved characters (RFC 3986 sections 2.3 and
// 6.2.2.2). Hand-written: neither WHATWG nor the canonicalizer profiles do
// this without also decoding reserved characters.
func normalizePercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	const hexdigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			// Decoding must not complete a stray '%' written just before
			// ("%7%30" must not become "%70"): the result would change on a
			// second pass (found by FuzzNormalize).
			stray := isHex(v) && (len(b) >= 1 && b[len(b)-1] == '%' || len(b) >= 2 && b[len(b)-2] == '%' && isHex(b[len(b)-1]))
			if isUnreserved(v) && !stray {
				b = append(b, v)
			} else {
				b = append(b, '%', hexdigits[v>>4], hexdigits[v&15])
			}
			i += 2
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// isUnreserved reports RFC 3986 section 2.3 unreserved characters.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// describe turns a whatwg-url error into a short reason without repeating the
// URL (the caller quotes it).
func describe(err error) string {
	var ve *whatwgerrors.ValidationError
	if errors.As(err, &ve) {
		if d := ve.Description(); d != "" {
			return fmt.Sprintf("%s: %q", ve.Type(), d)
		}
		return string(ve.Type())
	}
	return err.Error()
}

// quote quotes s for an error message, shortened to keep messages readable.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q...(%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
