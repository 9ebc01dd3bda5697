package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
)

// ProxyRule is one entry of Config.ProxyRules: URLs matching Match (RE2)
// are fetched through Proxy, a URL as Config.Proxy takes ("" or "direct":
// no proxy).
type ProxyRule struct {
	Match string `json:"match"`
	Proxy string `json:"proxy"`
}

// MaxProxyRules bounds Config.ProxyRules.
const MaxProxyRules = 1000

// ProxyDirect is the Config.Proxy value, besides "", that means no proxy.
const ProxyDirect = "direct"

// ParseProxyURL parses a proxy setting: nil and no error for "" or
// ProxyDirect (no proxy), else the URL, which must have the scheme http,
// https or socks5, a host, an optional port (default 80, 443 or 1080), an
// optional user:password and nothing else (no path beyond "/", query or
// fragment). The error never holds the password: it gives the reason and,
// where the URL parsed, its url.URL.Redacted form.
func ParseProxyURL(raw string) (*url.URL, error) {
	if raw == "" || raw == ProxyDirect {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the raw URL, password included
		}
		return nil, fmt.Errorf("does not parse as a URL: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5":
		return nil, fmt.Errorf("%s: scheme %q is not one of http, https, socks5", u.Redacted(), u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("%s: no host", u.Redacted())
	case u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%s: a proxy URL is scheme://[user:password@]host[:port] only", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s: port %q is outside 1..65535", u.Redacted(), p)
		}
	}
	return u, nil
}

// validateProxy checks Proxy and ProxyRules, reporting through bad.
func (c Config) validateProxy(bad func(key string, format string, args ...any) error) error {
	if _, err := ParseProxyURL(c.Proxy); err != nil {
		return bad("proxy", "%v", err)
	}
	if len(c.ProxyRules) > MaxProxyRules {
		return bad("proxy_rules", "%d rules, more than %d", len(c.ProxyRules), MaxProxyRules)
	}
	for i, r := range c.ProxyRules {
		if _, err := regexp.Compile(r.Match); err != nil {
			return bad("proxy_rules", "rule %d: match %q: %v", i, r.Match, err)
		}
		if _, err := ParseProxyURL(r.Proxy); err != nil {
			return bad("proxy_rules", "rule %d: proxy: %v", i, err)
		}
	}
	return nil
}
