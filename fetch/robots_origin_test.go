package fetch

import (
	"testing"
)

// originKey names a robots.txt cache entry: one per scheme, host and port,
// whatever the URL's spelling of the default port or the host's case.
func TestOriginKey(t *testing.T) {
	for in, want := range map[string]string{
		"http://Example.COM/x":       "http://example.com:80",
		"http://example.com:80/y":    "http://example.com:80",
		"https://example.com/":       "https://example.com:443",
		"http://example.com:8080/":   "http://example.com:8080",
		"https://[2001:db8::1]/":     "https://[2001:db8::1]:443",
		"http://[2001:db8::1]:81/x":  "http://[2001:db8::1]:81",
		"HTTPS://example.com:443/a?": "https://example.com:443",
	} {
		u, err := parseHTTPURL(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := originKey(u); got != want {
			t.Errorf("originKey(%s) = %s, want %s", in, got, want)
		}
	}
}
