package config

import (
	"regexp"
	"time"
)

// validateRecrawl checks the recrawl keys: intervals within
// 1..MaxRecrawlIntervalS with min <= max, each rule's pattern compiling and
// its bounds in order (the error names the rule by index and pattern),
// recrawl_due_before RFC 3339 and recrawl_due_match compiling.
func (c Config) validateRecrawl(bad func(key, format string, args ...any) error) error {
	inRange := func(v int64) bool { return v >= 1 && v <= MaxRecrawlIntervalS }
	switch {
	case !inRange(c.RecrawlIntervalMinS):
		return bad("recrawl_interval_min_s", "%d is outside 1..%d", c.RecrawlIntervalMinS, int64(MaxRecrawlIntervalS))
	case !inRange(c.RecrawlIntervalMaxS):
		return bad("recrawl_interval_max_s", "%d is outside 1..%d", c.RecrawlIntervalMaxS, int64(MaxRecrawlIntervalS))
	case c.RecrawlIntervalMinS > c.RecrawlIntervalMaxS:
		return bad("recrawl_interval_min_s", "%d is more than recrawl_interval_max_s %d", c.RecrawlIntervalMinS, c.RecrawlIntervalMaxS)
	case len(c.RecrawlRules) > MaxRecrawlRules:
		return bad("recrawl_rules", "%d rules, the limit is %d", len(c.RecrawlRules), MaxRecrawlRules)
	}
	for i, r := range c.RecrawlRules {
		if _, err := regexp.Compile(r.Match); err != nil {
			return bad("recrawl_rules", "rule %d (match %q): %v", i, r.Match, err)
		}
		switch {
		case !inRange(r.MinS) || !inRange(r.MaxS):
			return bad("recrawl_rules", "rule %d (match %q): min_s %d and max_s %d must be within 1..%d", i, r.Match, r.MinS, r.MaxS, int64(MaxRecrawlIntervalS))
		case r.MinS > r.MaxS:
			return bad("recrawl_rules", "rule %d (match %q): min_s %d is more than max_s %d", i, r.Match, r.MinS, r.MaxS)
		}
	}
	if c.RecrawlDueBefore != "" {
		if _, err := time.Parse(time.RFC3339, c.RecrawlDueBefore); err != nil {
			return bad("recrawl_due_before", "%q is not an RFC 3339 time: %v", c.RecrawlDueBefore, err)
		}
	}
	if _, err := regexp.Compile(c.RecrawlDueMatch); err != nil {
		return bad("recrawl_due_match", "%q: %v", c.RecrawlDueMatch, err)
	}
	return nil
}

// RecrawlDue returns recrawl_due_before as a time (zero when unset or
// unparsable; Validate refuses the latter).
func (c Config) RecrawlDue() time.Time {
	t, err := time.Parse(time.RFC3339, c.RecrawlDueBefore)
	if err != nil {
		return time.Time{}
	}
	return t
}
