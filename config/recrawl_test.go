package config

import (
	"errors"
	"strings"
	"testing"
)

func TestRecrawlDefaultsAndRules(t *testing.T) {
	c := Default()
	if c.Recrawl || c.RecrawlIntervalMinS != 3600 || c.RecrawlIntervalMaxS != 2592000 || !c.RecrawlNewFirst {
		t.Fatalf("defaults: %+v", c)
	}
	c, err := Parse([]byte(`{"recrawl":true,"recrawl_rules":[{"match":"^https://news\\.","min_s":60,"max_s":3600}],"recrawl_due_before":"2026-11-26T10:00:00Z","recrawl_due_match":"/docs/"}`))
	if err != nil || !c.Recrawl || len(c.RecrawlRules) != 1 || c.RecrawlRules[0].MinS != 60 || c.RecrawlDue().IsZero() {
		t.Fatalf("parse: %+v, %v", c, err)
	}
	if back, err := Parse(c.Encode()); err != nil || back.RecrawlRules[0] != c.RecrawlRules[0] {
		t.Fatalf("encode round trip: %v", err)
	}
	if !strings.Contains(string(Default().Encode()), `"recrawl_rules": []`) {
		t.Fatal("empty recrawl_rules must encode as []")
	}
	for doc, want := range map[string]string{
		`{"recrawl_rules":[{"match":"(","min_s":1,"max_s":2}]}`:            `rule 0 (match "(")`,
		`{"recrawl_rules":[{"match":"a","min_s":10,"max_s":2}]}`:           `rule 0 (match "a"): min_s 10 is more than max_s 2`,
		`{"recrawl_rules":[{"match":"a","min_s":0,"max_s":2}]}`:            `rule 0 (match "a"): min_s 0`,
		`{"recrawl_interval_min_s":100,"recrawl_interval_max_s":10}`:       `"recrawl_interval_min_s": 100 is more than`,
		`{"recrawl_interval_max_s":0}`:                                     `"recrawl_interval_max_s": 0 is outside`,
		`{"recrawl_due_before":"yesterday"}`:                               `"recrawl_due_before": "yesterday" is not an RFC 3339 time`,
		`{"recrawl_due_match":"["}`:                                        `"recrawl_due_match"`,
		`{"recrawl_rules":[{"match":"a","min_s":1,"max_s":2,"x":1}]}`:      `unknown key`,
		`{"recrawl_interval_min_s":1,"recrawl_interval_max_s":4294967296}`: `outside 1..2147483648`,
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", doc, err, want)
		}
	}
}
