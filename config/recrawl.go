package config

import (
	"context"
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

// NextDueSecond waits until the next whole second of the clock and returns
// it, UTC: the recrawl_due_before a request to make scheduled URLs due at
// once writes (`crawlctl recrawl --now`, `seeder --revisit-from`). Entries
// keep their last fetch to the second, so every URL fetched before the
// request, in the same second included, was last fetched before it and is
// due at once, while one fetched after the request is not. It returns
// ctx's error if ctx ends first.
func NextDueSecond(ctx context.Context) (time.Time, error) {
	at := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	case <-t.C:
		return at, nil
	}
}
