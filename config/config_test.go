package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParseDefaultsAndOverrides(t *testing.T) {
	c, err := Parse([]byte(`{"per_host_rate_per_s": 5, "scope": "any", "obey_robots": false}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.PerHostRatePerS != 5 || c.Scope != ScopeAny || c.ObeyRobots {
		t.Fatalf("overrides not applied: %+v", c)
	}
	if c.MaxAttempts != Default().MaxAttempts || c.UserAgent != Default().UserAgent {
		t.Fatalf("defaults lost: %+v", c)
	}
	empty, err := Parse(nil)
	if err != nil || empty.Scope != ScopeSameHost || !empty.ObeyRobots {
		t.Fatalf("empty document: %+v, %v", empty, err)
	}
	if !empty.PageRequisites || empty.RequisitesScope != ScopeAny || !empty.Sitemaps || empty.DelayFactor != 0 || empty.MaxDelayMS != 30000 {
		t.Fatalf("capture defaults: %+v", empty)
	}
	c, err = Parse([]byte(`{"page_requisites": false, "requisites_scope": "same_domain", "sitemaps": false, "delay_factor": 2.5, "max_delay_ms": 5000}`))
	if err != nil || c.PageRequisites || c.RequisitesScope != ScopeSameDomain || c.Sitemaps || c.DelayFactor != 2.5 || c.MaxDelayMS != 5000 {
		t.Fatalf("capture keys: %+v, %v", c, err)
	}
}

// max_in_flight defaults to 0 (automatic) and takes 1..MaxMaxInFlight; a
// config that sets only worker_concurrency, as configs did before
// max_in_flight, still parses and keeps its value (the automatic budget's
// floor).
func TestParseMaxInFlight(t *testing.T) {
	c, err := Parse([]byte(`{"worker_concurrency": 64}`))
	if err != nil || c.WorkerConcurrency != 64 || c.MaxInFlight != 0 {
		t.Fatalf("worker_concurrency only: %+v, %v", c, err)
	}
	c, err = Parse([]byte(`{"worker_concurrency": 8, "max_in_flight": 2000}`))
	if err != nil || c.WorkerConcurrency != 8 || c.MaxInFlight != 2000 {
		t.Fatalf("both: %+v, %v", c, err)
	}
}

// dedup_index is off by default and takes a redis URL; dedup_min_bytes
// defaults to 1024.
func TestParseDedup(t *testing.T) {
	c, err := Parse(nil)
	if err != nil || c.DedupIndex != "" || c.DedupMinBytes != 1024 {
		t.Fatalf("defaults: %q %d, %v", c.DedupIndex, c.DedupMinBytes, err)
	}
	c, err = Parse([]byte(`{"dedup_index": "redis://127.0.0.1:6379/2", "dedup_min_bytes": 0}`))
	if err != nil || c.DedupIndex != "redis://127.0.0.1:6379/2" || c.DedupMinBytes != 0 {
		t.Fatalf("set: %+v, %v", c, err)
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]string{
		`{`:                                   "not valid JSON",
		`{"per_host_rate_per_s": "fast"}`:     `key "per_host_rate_per_s"`,
		`{"per_host_rate_per_s": -1}`:         `key "per_host_rate_per_s"`,
		`{"worker_concurrency": 0}`:           `key "worker_concurrency"`,
		`{"max_in_flight": -1}`:               `key "max_in_flight"`,
		`{"max_in_flight": 70000}`:            `key "max_in_flight"`,
		`{"max_depth": -2}`:                   `key "max_depth"`,
		`{"scope": "planet"}`:                 `key "scope"`,
		`{"colour": "blue"}`:                  `unknown key "colour"`,
		`{"exclude": ["(unclosed"]}`:          `key "exclude"`,
		`{"max_body_bytes": 1e12}`:            `key "max_body_bytes"`,
		`{"user_agent": ""}`:                  `key "user_agent"`,
		`{"max_attempts": 1} {"paused":true}`: "trailing data",
		`[1,2]`:                               "want config.Config",
		`{"requisites_scope": "cdn"}`:         `key "requisites_scope"`,
		`{"page_requisites": "yes"}`:          `key "page_requisites"`,
		`{"sitemaps": 1}`:                     `key "sitemaps"`,
		`{"delay_factor": -1}`:                `key "delay_factor"`,
		`{"delay_factor": 101}`:               `key "delay_factor"`,
		`{"max_delay_ms": -5}`:                `key "max_delay_ms"`,
		`{"max_queued_per_host": -1}`:         `key "max_queued_per_host"`,
		`{"max_queued_total": -1}`:            `key "max_queued_total"`,
		`{"max_frontier_bytes": 1000}`:        `key "max_frontier_bytes"`,
		`{"max_url_length": 10}`:              `key "max_url_length"`,
		`{"max_url_length": 9000}`:            `key "max_url_length"`,
		`{"max_pages_per_host": -1}`:          `key "max_pages_per_host"`,
		`{"max_pages_per_host": 1.5}`:         `key "max_pages_per_host"`,
		`{"host_budget_action": "evict"}`:     `key "host_budget_action"`,
		`{"politeness_key": "tld"}`:           `key "politeness_key": "tld" is not one of host, domain, ip`,
		`{"dedup_min_bytes": -1}`:             `key "dedup_min_bytes"`,
		`{"dedup_index": "http://h:6379"}`:    `key "dedup_index"`,
		`{"dedup_index": "redis://h:6379/x"}`: `key "dedup_index"`,
	}
	for doc, want := range cases {
		_, err := Parse([]byte(doc))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want an ErrInvalid mentioning %q", doc, err, want)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	c := Default()
	c.Include = []string{`^https://example\.org/`}
	got, err := Parse(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Encode()) != string(c.Encode()) {
		t.Fatalf("round trip changed the config:\n%s\n%s", got.Encode(), c.Encode())
	}
}

func TestRetryDelay(t *testing.T) {
	c := Default()
	c.RetryBackoffMS = 100
	if d := c.RetryDelay(1).Milliseconds(); d != 100 {
		t.Fatalf("attempt 1: %d ms", d)
	}
	if d := c.RetryDelay(3).Milliseconds(); d != 400 {
		t.Fatalf("attempt 3: %d ms", d)
	}
}

// TestEncodeEmptyListsAndUserAgent: include/exclude are written as [], and
// the default user agent is flagged on public crawls only.
func TestEncodeEmptyListsAndUserAgent(t *testing.T) {
	doc := string(Default().Encode())
	for _, want := range []string{`"include": []`, `"exclude": []`} {
		if !strings.Contains(doc, want) {
			t.Errorf("Encode lacks %s:\n%s", want, doc)
		}
	}
	c, err := Parse([]byte(`{"include": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(c.Encode()), "null") {
		t.Errorf("null list survives Encode:\n%s", c.Encode())
	}
	if !Default().NeedsContactUA() {
		t.Error("default config on a public crawl: NeedsContactUA false")
	}
	c = Default()
	c.AllowPrivateNetworks = true
	if c.NeedsContactUA() {
		t.Error("private crawl flagged for its user agent")
	}
	c = Default()
	c.UserAgent = "examplebot/1.0 (+https://example.org/bot)"
	if c.NeedsContactUA() {
		t.Error("own user agent flagged")
	}
}

// max_pages_per_host defaults to 0 (no cap) with action keep; both keys
// parse and round-trip.
func TestHostBudgetKeys(t *testing.T) {
	d := Default()
	if d.MaxPagesPerHost != 0 || d.HostBudgetAction != HostBudgetKeep {
		t.Fatalf("defaults: max_pages_per_host %d, host_budget_action %q; want 0 and keep", d.MaxPagesPerHost, d.HostBudgetAction)
	}
	c, err := Parse([]byte(`{"max_pages_per_host": 10, "host_budget_action": "drop"}`))
	if err != nil || c.MaxPagesPerHost != 10 || c.HostBudgetAction != HostBudgetDrop {
		t.Fatalf("Parse: %+v, %v", c, err)
	}
	back, err := Parse(c.Encode())
	if err != nil || back.MaxPagesPerHost != 10 || back.HostBudgetAction != HostBudgetDrop {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// politeness_key: host and domain parse; the default leaves it out of the
// document (it means "as the crawl was created"), so every config written
// before it existed encodes as before.
func TestPolitenessKey(t *testing.T) {
	for _, kind := range []string{PolitenessHost, PolitenessDomain, PolitenessIP} {
		c, err := Parse([]byte(`{"politeness_key": "` + kind + `"}`))
		if err != nil || c.PolitenessKey != kind {
			t.Errorf("politeness_key %s: %+v, %v", kind, c.PolitenessKey, err)
		}
		if !strings.Contains(string(c.Encode()), `"politeness_key": "`+kind+`"`) {
			t.Errorf("politeness_key %s not in the encoded document:\n%s", kind, c.Encode())
		}
	}
	if strings.Contains(string(Default().Encode()), "politeness_key") {
		t.Errorf("the default config names politeness_key:\n%s", Default().Encode())
	}
}

// max_retry_after_s defaults to 3600, takes 0 (off) to 86400, and a value
// outside is refused naming the key and the range.
func TestMaxRetryAfter(t *testing.T) {
	if d := Default().MaxRetryAfterS; d != 3600 {
		t.Fatalf("default max_retry_after_s %d, want 3600", d)
	}
	for _, ok := range []int{0, 1, 86400} {
		if c, err := Parse([]byte(`{"max_retry_after_s": ` + strconv.Itoa(ok) + `}`)); err != nil || c.MaxRetryAfterS != ok {
			t.Errorf("max_retry_after_s %d: %+v, %v", ok, c.MaxRetryAfterS, err)
		}
	}
	for _, bad := range []string{"-1", "86401", "1.5", `"1h"`} {
		_, err := Parse([]byte(`{"max_retry_after_s": ` + bad + `}`))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "max_retry_after_s"`) {
			t.Errorf("max_retry_after_s %s: %v, want an ErrInvalid naming the key", bad, err)
		}
	}
}
