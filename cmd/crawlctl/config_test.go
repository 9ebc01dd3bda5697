package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
)

// config get / set against a real ZooKeeper: values parsed as JSON or
// taken as strings, null resets, unchanged values are not written, and
// every invalid change is rejected naming the key, with nothing written.
func TestConfigGetSet(t *testing.T) {
	c := newCrawl(t, "cfg", testConfig(), 4, nil)
	_, v0 := c.config()

	r := c.ctl("config", "get")
	if r.err != nil || !strings.Contains(r.stdout, `"worker_concurrency": 4`) || !strings.Contains(r.stderr, "version 0") {
		t.Fatalf("config get: %v", r)
	}

	r = c.ctl("config", "set", "worker_concurrency=7", "scope=same_domain", `include=["^http://a\\.example/"]`, "max_pages=100")
	if r.err != nil {
		t.Fatalf("config set: %v", r)
	}
	for _, want := range []string{"worker_concurrency: 4 -> 7", `scope: "same_host" -> "same_domain"`, "max_pages: 0 -> 100", "config version 0 -> 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("config set output lacks %q:\n%s", want, r.stdout)
		}
	}
	data, v1 := c.config()
	cfg, err := config.Parse(data)
	if err != nil || v1 != v0+1 {
		t.Fatalf("after config set: version %d, %v", v1, err)
	}
	if cfg.WorkerConcurrency != 7 || cfg.Scope != config.ScopeSameDomain || len(cfg.Include) != 1 || cfg.Include[0] != `^http://a\.example/` || cfg.MaxPages != 100 {
		t.Errorf("config after set: %+v", cfg)
	}

	// null resets to the default; the same values again write nothing.
	if r = c.ctl("config", "set", "max_pages=null"); r.err != nil || !strings.Contains(r.stdout, "max_pages: 100 -> 0") {
		t.Errorf("max_pages=null: %v", r)
	}
	_, v2 := c.config()
	if r = c.ctl("config", "set", "worker_concurrency=7"); r.err != nil || !strings.Contains(r.stdout, "unchanged") {
		t.Errorf("unchanged set: %v", r)
	}
	if _, v := c.config(); v != v2 {
		t.Errorf("an unchanged set wrote version %d (was %d)", v, v2)
	}

	// Rejected changes: the key is named and nothing is written.
	for _, tc := range []struct {
		args []string
		key  string
	}{
		{[]string{"nosuchkey=1", "worker_concurrency=2"}, `"nosuchkey"`},
		{[]string{"worker_concurrency=0"}, `"worker_concurrency"`},
		{[]string{"max_depth=abc"}, `"max_depth"`},
		{[]string{"per_host_rate_per_s=-1"}, `"per_host_rate_per_s"`},
		{[]string{`exclude=["("]`}, `"exclude"`},
		{[]string{"obey_robots=maybe"}, `"obey_robots"`},
	} {
		before, vb := c.config()
		r := c.ctl(append([]string{"config", "set"}, tc.args...)...)
		if r.err == nil || !errors.Is(r.err, config.ErrInvalid) || !strings.Contains(r.err.Error(), tc.key) {
			t.Errorf("config set %q: want a config error naming %s, got %v", tc.args, tc.key, r)
		}
		if after, va := c.config(); va != vb || !bytes.Equal(after, before) {
			t.Errorf("config set %q was rejected but wrote version %d", tc.args, va)
		}
	}

	// --file replaces the document; a bad file is rejected.
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"allow_private_networks": true, "max_depth": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"max_depth": 3, "colour": "blue"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, vb := c.config()
	if r = c.ctl("config", "set", "--file", bad); r.err == nil || !strings.Contains(r.err.Error(), "colour") {
		t.Errorf("config set --file bad.json: want an error naming colour: %v", r)
	}
	if _, va := c.config(); va != vb {
		t.Errorf("a rejected --file wrote version %d", va)
	}
	if r = c.ctl("config", "set", "--file", good); r.err != nil || !strings.Contains(r.stdout, "max_depth: 20 -> 3") || !strings.Contains(r.stdout, "worker_concurrency: 7 -> 32") {
		t.Errorf("config set --file good.json: %v", r)
	}
	data, _ = c.config()
	if cfg, err := config.Parse(data); err != nil || cfg.MaxDepth != 3 || cfg.WorkerConcurrency != config.Default().WorkerConcurrency {
		t.Errorf("after --file: %+v %v", cfg, err)
	}
}

// A change made by someone else between the read and the compare-and-set
// is reported as a conflict (exit 1) and is not overwritten.
func TestConfigSetConflict(t *testing.T) {
	c := newCrawl(t, "conflict", testConfig(), 4, nil)
	theirs := testConfig()
	theirs.UserAgent = "someone-else/1.0"
	hook := func() {
		if _, err := coord.Store(c.client, c.root, coord.ConfigNode).Write(context.Background(), theirs.Encode(), -1); err != nil {
			t.Error(err)
		}
	}
	for _, args := range [][]string{{"config", "set", "worker_concurrency=9"}, {"pause"}} {
		r := c.ctlWith(context.Background(), hook, args...)
		if !errors.Is(r.err, coord.ErrVersionConflict) || !strings.Contains(r.err.Error(), "someone else changed the config") || !strings.Contains(r.err.Error(), "nothing was overwritten") {
			t.Errorf("%q with a concurrent change: want a conflict error, got %v", args, r)
		}
		data, _ := c.config()
		if !bytes.Equal(data, theirs.Encode()) {
			t.Errorf("%q overwrote the concurrent change:\n%s", args, data)
		}
	}
}

// A config document that is not a JSON object cannot be edited key by key;
// the error points to --file, which replaces it.
func TestConfigSetOnBrokenDocument(t *testing.T) {
	c := newCrawl(t, "broken", testConfig(), 4, nil)
	if _, err := coord.Store(c.client, c.root, coord.ConfigNode).Write(context.Background(), []byte("{not json"), -1); err != nil {
		t.Fatal(err)
	}
	r := c.ctl("config", "get")
	if r.err != nil || !strings.Contains(r.stdout, "{not json") || !strings.Contains(r.stderr, "invalid") {
		t.Errorf("config get of a broken document: %v", r)
	}
	if r = c.ctl("resume"); r.err == nil || !strings.Contains(r.err.Error(), "--file") {
		t.Errorf("resume on a broken document: want an error pointing to --file, got %v", r)
	}
}

// politeness_key is fixed when the crawl is created: config set refuses
// another one (naming the key and why) and writes nothing; the crawl's own
// one is accepted.
func TestConfigSetPolitenessKeyFixed(t *testing.T) {
	c := newCrawl(t, "cfgkey", testConfig(), 4, nil)
	_, v0 := c.config()
	for arg, want := range map[string]string{
		"politeness_key=domain": `politeness_key "domain": fixed when the crawl was created, this crawl uses "host"`,
		"politeness_key=ip":     `politeness_key "ip": fixed when the crawl was created, this crawl uses "host"`,
		"politeness_key=asn":    `key "politeness_key": "asn" is not one of host, domain, ip`,
	} {
		r := c.ctl("config", "set", arg)
		if r.err == nil || !strings.Contains(r.err.Error(), want) || !strings.Contains(r.err.Error(), "nothing written") {
			t.Errorf("config set %s: %v, want an error containing %q", arg, r, want)
		}
	}
	if _, v := c.config(); v != v0 {
		t.Fatalf("a refused politeness_key wrote version %d (was %d)", v, v0)
	}
	if r := c.ctl("config", "set", "politeness_key=host"); r.err != nil || !strings.Contains(r.stdout, `politeness_key: (unset) -> "host"`) {
		t.Errorf("config set politeness_key=host on a host crawl: %v", r)
	}
}
