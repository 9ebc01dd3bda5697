package config

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// CookieSeed is one entry of Config.CookiesSeed: cookies put into a
// politeness key's jar before its first request to URL's host (or to a
// host one of the cookies' Domain attributes domain-matches), as if URL
// had answered with them, for a crawl of pages behind a login. JSON:
// {"url": "https://example.com/", "cookies": ["sid=abc123; Path=/"]}.
//
// Its cookie values are secrets: they are in the config znode (so in
// `crawlctl config get`, which prints the document to edit it) and in the
// WARC request records of the requests that carry them, but never in logs,
// the status node, `crawlctl status` or the changes `crawlctl config set`
// prints (Redacted, LogValue).
type CookieSeed struct {
	// URL is the absolute http or https URL the cookies are set from: its
	// host (and its path, for cookies without a Path attribute) scopes
	// them as RFC 6265 section 5.3 does a response's.
	URL string `json:"url"`
	// Cookies are Set-Cookie field values (RFC 6265 section 4.1):
	// "name=value" and optional attributes (Path, Domain, Secure, Expires,
	// Max-Age), 1..MaxSeedCookies of them, each name and value at most
	// MaxSeedCookieBytes bytes.
	Cookies []string `json:"cookies"`
}

// Bounds of cookies_seed.
const (
	// MaxCookieSeeds bounds the entries of cookies_seed.
	MaxCookieSeeds = 100
	// MaxSeedCookies bounds the cookies of one entry.
	MaxSeedCookies = 50
	// MaxSeedCookieBytes bounds one cookie's name and value, in bytes (the
	// 4096 of RFC 6265 section 6.1, what the jars keep at most).
	MaxSeedCookieBytes = 4096
)

// redacted replaces a seed cookie's value wherever the config is shown.
const redacted = "REDACTED"

// Parse returns the seed's URL and cookies. Errors name the cookie by
// index and name, never by value: a URL that is not absolute http(s) with
// a host, no cookies or more than MaxSeedCookies, a cookie that is not a
// valid Set-Cookie value (http.ParseSetCookie), one longer than
// MaxSeedCookieBytes, or one whose Domain attribute does not domain-match
// the URL's host (a jar would ignore it).
func (s CookieSeed) Parse() (*url.URL, []*http.Cookie, error) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, nil, fmt.Errorf("url %q is not an absolute http or https URL with a host", s.URL)
	}
	if len(s.Cookies) == 0 || len(s.Cookies) > MaxSeedCookies {
		return nil, nil, fmt.Errorf("%d cookies, want 1..%d", len(s.Cookies), MaxSeedCookies)
	}
	out := make([]*http.Cookie, 0, len(s.Cookies))
	for i, line := range s.Cookies {
		name := seedCookieName(line)
		if strings.ContainsAny(line, "\r\n") {
			return nil, nil, fmt.Errorf("cookie %d (name %q): contains a line break", i, name)
		}
		c, err := http.ParseSetCookie(line)
		if err != nil {
			return nil, nil, fmt.Errorf("cookie %d (name %q): not a Set-Cookie value \"name=value[; attributes]\"", i, name)
		}
		if len(c.Name)+len(c.Value) > MaxSeedCookieBytes {
			return nil, nil, fmt.Errorf("cookie %d (name %q): name and value are %d bytes, the limit is %d", i, name, len(c.Name)+len(c.Value), MaxSeedCookieBytes)
		}
		if d := strings.ToLower(strings.TrimPrefix(c.Domain, ".")); d != "" {
			if h := strings.ToLower(u.Hostname()); h != d && !strings.HasSuffix(h, "."+d) {
				return nil, nil, fmt.Errorf("cookie %d (name %q): Domain %q does not cover the url's host %q (RFC 6265 section 5.3 step 6)", i, name, c.Domain, h)
			}
		}
		out = append(out, c)
	}
	return u, out, nil
}

// seedCookieName returns the name part of a Set-Cookie value, cut to 64
// bytes, for error messages (never the value).
func seedCookieName(line string) string {
	name, _, _ := strings.Cut(line, "=")
	name = strings.TrimSpace(name)
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return name
}

// Redacted returns s with each cookie's value replaced by "REDACTED"
// (names and attributes kept), the form shown in logs and by crawlctl.
func (s CookieSeed) Redacted() CookieSeed {
	out := CookieSeed{URL: s.URL, Cookies: make([]string, len(s.Cookies))}
	for i, line := range s.Cookies {
		first, attrs, hasAttrs := strings.Cut(line, ";")
		name, _, _ := strings.Cut(first, "=")
		out.Cookies[i] = strings.TrimSpace(name) + "=" + redacted
		if hasAttrs {
			out.Cookies[i] += ";" + attrs
		}
	}
	return out
}

// LogValue makes slog write the redacted seed (slog.LogValuer).
func (s CookieSeed) LogValue() slog.Value {
	r := s.Redacted()
	return slog.GroupValue(slog.String("url", r.URL), slog.Any("cookies", r.Cookies))
}

// CookieSeeds is the list of Config.CookiesSeed; slog writes it redacted.
type CookieSeeds []CookieSeed

// LogValue makes slog write the seeds redacted (slog.LogValuer).
func (s CookieSeeds) LogValue() slog.Value { return slog.AnyValue([]CookieSeed(RedactSeeds(s))) }

// RedactSeeds returns seeds with every cookie value redacted (Redacted).
func RedactSeeds(seeds []CookieSeed) CookieSeeds {
	out := make(CookieSeeds, len(seeds))
	for i, s := range seeds {
		out[i] = s.Redacted()
	}
	return out
}

// plainConfig is Config without its LogValue method.
type plainConfig Config

// LogValue makes slog write the config with its seed cookies redacted
// (slog.LogValuer), should a whole Config be logged.
func (c Config) LogValue() slog.Value { return slog.AnyValue(plainConfig(c.Redacted())) }

// validateCookies checks cookies_seed: at most MaxCookieSeeds entries, each
// parsing (CookieSeed.Parse); the error names the entry by index and URL.
func (c Config) validateCookies(bad func(key, format string, args ...any) error) error {
	if len(c.CookiesSeed) > MaxCookieSeeds {
		return bad("cookies_seed", "%d entries, the limit is %d", len(c.CookiesSeed), MaxCookieSeeds)
	}
	for i, s := range c.CookiesSeed {
		if _, _, err := s.Parse(); err != nil {
			return bad("cookies_seed", "entry %d: %v", i, err)
		}
	}
	return nil
}
