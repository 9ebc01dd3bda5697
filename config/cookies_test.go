package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// cookies defaults to true and cookies_seed to []; a valid seed parses and
// encodes back with its values (the znode keeps them).
func TestCookiesKeys(t *testing.T) {
	d := Default()
	if !d.Cookies || !strings.Contains(string(d.Encode()), `"cookies_seed": []`) {
		t.Fatalf("defaults: cookies %v, encoded %s", d.Cookies, d.Encode())
	}
	c, err := Parse([]byte(`{"cookies":false,"cookies_seed":[{"url":"https://example.com/app/","cookies":["sid=abc123; Path=/","pref=dark"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cookies || len(c.CookiesSeed) != 1 || c.CookiesSeed[0].Cookies[0] != "sid=abc123; Path=/" {
		t.Fatalf("parsed %+v", c)
	}
	if !strings.Contains(string(c.Encode()), "abc123") {
		t.Fatal("Encode dropped the seed value the znode must keep")
	}
}

// A bad cookies_seed is refused naming the key, the entry and the cookie's
// name, never its value.
func TestCookiesSeedRefused(t *testing.T) {
	long := strings.Repeat("S", MaxSeedCookieBytes)
	for doc, want := range map[string]string{
		`{"cookies_seed":[{"url":"ftp://x/","cookies":["sid=SECRET"]}]}`:               `entry 0: url "ftp://x/" is not an absolute http or https URL`,
		`{"cookies_seed":[{"url":"/rel","cookies":["sid=SECRET"]}]}`:                   `entry 0: url "/rel"`,
		`{"cookies_seed":[{"url":"https://x/","cookies":[]}]}`:                         `entry 0: 0 cookies, want 1..50`,
		`{"cookies_seed":[{"url":"https://x/","cookies":["a=1","SECRET"]}]}`:           `entry 0: cookie 1 (name "SECRET"): not a Set-Cookie value`,
		`{"cookies_seed":[{"url":"https://x/","cookies":["sid=` + long + `"]}]}`:       `cookie 0 (name "sid"): name and value are 4099 bytes, the limit is 4096`,
		`{"cookies_seed":[{"url":"https://x/","cookies":["sid=SECRET\r\nX: y"]}]}`:     `cookie 0 (name "sid"): contains a line break`,
		`{"cookies_seed":[{"url":"https://a.x/","cookies":["sid=SECRET; Domain=y"]}]}`: `cookie 0 (name "sid"): Domain "y" does not cover the url's host "a.x"`,
		`{"cookies_seed":[{"url":"https://x/","cookie":"sid=SECRET"}]}`:                `unknown key "cookie"`,
		`{"cookies_seed":{"url":"https://x/"}}`:                                        `key "cookies_seed": got JSON object`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", doc, err, want)
			continue
		}
		if !strings.Contains(err.Error(), "cookies_seed") && !strings.Contains(want, "unknown key") {
			t.Errorf("%s: %v does not name cookies_seed", doc, err)
		}
		if strings.Contains(err.Error(), "SECRET") && !strings.Contains(want, `"SECRET"`) {
			t.Errorf("%s: the error shows the value: %v", doc, err)
		}
	}
	many := make([]CookieSeed, MaxCookieSeeds+1)
	for i := range many {
		many[i] = CookieSeed{URL: "https://x/", Cookies: []string{"a=1"}}
	}
	c := Default()
	c.CookiesSeed = many
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "101 entries, the limit is 100") {
		t.Fatalf("too many seeds: %v", err)
	}
}

// Redacted and LogValue show names and attributes, never values.
func TestCookiesSeedRedacted(t *testing.T) {
	c := Default()
	c.CookiesSeed = []CookieSeed{{URL: "https://example.com/", Cookies: []string{"sid=SECRET1; Path=/; Secure", "t=SECRET2"}}}
	red := c.Redacted()
	if got := red.CookiesSeed[0].Cookies; got[0] != "sid=REDACTED; Path=/; Secure" || got[1] != "t=REDACTED" {
		t.Fatalf("redacted: %q", got)
	}
	if c.CookiesSeed[0].Cookies[0] != "sid=SECRET1; Path=/; Secure" {
		t.Fatal("Redacted changed the original")
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "seed", c.CookiesSeed[0], "seeds", c.CookiesSeed, "config", c)
	if strings.Contains(buf.String(), "SECRET") || !strings.Contains(buf.String(), "sid=REDACTED") {
		t.Fatalf("logged: %s", buf.String())
	}
	b, _ := json.Marshal(red)
	if strings.Contains(string(b), "SECRET") {
		t.Fatalf("redacted config: %s", b)
	}
}
