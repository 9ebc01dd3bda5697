package config

import (
	"errors"
	"strings"
	"testing"
)

// A bad proxy or proxy rule is refused naming the key and the reason,
// never showing the password; good ones pass.
func TestValidateProxy(t *testing.T) {
	good := Default()
	good.Proxy = "http://user:pw@proxy.example:3128"
	good.ProxyRules = []ProxyRule{
		{Match: `^https://intranet\.`, Proxy: "direct"},
		{Match: `\.onion/`, Proxy: "socks5://127.0.0.1:9050"},
		{Match: `^http://plain/`, Proxy: ""},
		{Match: `x`, Proxy: "https://p.example"},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("good proxy setting refused: %v", err)
	}
	for _, tc := range []struct {
		proxy string
		rules []ProxyRule
		key   string
		want  string
	}{
		{proxy: "ftp://user:hunter2@p.example:21", key: "proxy", want: "scheme"},
		{proxy: "http://user:hunter2@:3128", key: "proxy", want: "no host"},
		{proxy: "http://user:hunter2@p.example:3128/x?y", key: "proxy", want: "scheme://"},
		{proxy: "http://user:hunter2@p.example:99999", key: "proxy", want: "port"},
		{proxy: "http://user:hunter2@p ex ample", key: "proxy", want: "does not parse"},
		{proxy: "p.example:3128", key: "proxy", want: "scheme"},
		{rules: []ProxyRule{{Match: "(", Proxy: "direct"}}, key: "proxy_rules", want: "rule 0: match"},
		{rules: []ProxyRule{{Match: "x", Proxy: "socks4://user:hunter2@h"}}, key: "proxy_rules", want: "rule 0: proxy"},
	} {
		c := Default()
		c.Proxy, c.ProxyRules = tc.proxy, tc.rules
		err := c.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "`+tc.key+`"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("proxy %q rules %v: %v, want key %q and %q", tc.proxy, tc.rules, err, tc.key, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	// The document round-trips.
	back, err := Parse(good.Encode())
	if err != nil || back.Proxy != good.Proxy || len(back.ProxyRules) != 4 || back.ProxyRules[1] != good.ProxyRules[1] {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}
