package main

import (
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
)

// config set writes cookies_seed with its values (the workers need them)
// but prints it redacted; a change of the value alone is a change; status
// and a rejected seed never show a value.
func TestConfigSetCookiesSeedRedacted(t *testing.T) {
	c := newCrawl(t, "cookieseed", testConfig(), 4, nil)
	r := c.ctl("config", "set", `cookies_seed=[{"url":"https://example.com/","cookies":["sid=V4LUE-1; Path=/"]}]`)
	if r.err != nil || strings.Contains(r.stdout, "V4LUE") || !strings.Contains(r.stdout, `sid=REDACTED; Path=/`) {
		t.Fatalf("config set: %v", r)
	}
	data, _ := c.config()
	if cfg, err := config.Parse(data); err != nil || cfg.CookiesSeed[0].Cookies[0] != "sid=V4LUE-1; Path=/" {
		t.Fatalf("stored: %s, %v", data, err)
	}
	r = c.ctl("config", "set", `cookies_seed=[{"url":"https://example.com/","cookies":["sid=V4LUE-2; Path=/"]}]`)
	if r.err != nil || strings.Contains(r.stdout, "V4LUE") || !strings.Contains(r.stdout, "config version 1 -> 2") {
		t.Fatalf("changing the value alone: %v", r)
	}
	r = c.ctl("config", "set", `cookies_seed=[{"url":"ftp://example.com/","cookies":["sid=V4LUE-3"]}]`)
	if r.err == nil || strings.Contains(r.err.Error()+r.stdout+r.stderr, "V4LUE") || !strings.Contains(r.err.Error(), `"cookies_seed": entry 0`) {
		t.Fatalf("bad seed: %v", r)
	}
	r = c.ctl("status")
	if r.err != nil || strings.Contains(r.stdout+r.stderr, "V4LUE") {
		t.Fatalf("status: %v", r)
	}
}
