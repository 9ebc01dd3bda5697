package frontier

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
)

// Adaptive recrawl intervals as Nutch's AdaptiveFetchSchedule: a capture
// that changed shrinks the interval by schedDecRate, one that did not
// grows it by schedIncRate, within the URL's bounds (docs/design.md,
// "Recrawl").
const (
	schedDecRate = 0.2
	schedIncRate = 0.4
)

// schedPolicy is the recrawl settings of one config, compiled: the
// bounds per URL (recrawl_rules, else recrawl_interval_min_s/max_s) and
// the `crawlctl recrawl --now` request (recrawl_due_before/match).
type schedPolicy struct {
	stamp     uint64 // SchedulePolicy of the config
	min, max  int64
	rules     []config.RecrawlRule
	res       []*regexp.Regexp
	dueBefore int64 // Unix seconds; 0: none
	dueMatch  *regexp.Regexp
}

// newSchedPolicy compiles cfg's recrawl keys (validated by config: a
// pattern that does not compile here matches nothing).
func newSchedPolicy(cfg config.Config) *schedPolicy {
	p := &schedPolicy{stamp: SchedulePolicy(cfg), min: cfg.RecrawlIntervalMinS, max: cfg.RecrawlIntervalMaxS, rules: slices.Clone(cfg.RecrawlRules)}
	p.min, p.max = max(p.min, 1), max(p.max, p.min, 1)
	for _, r := range cfg.RecrawlRules {
		re, _ := regexp.Compile(r.Match)
		p.res = append(p.res, re)
	}
	if t := cfg.RecrawlDue(); !t.IsZero() {
		p.dueBefore = t.Unix()
		if cfg.RecrawlDueMatch != "" {
			p.dueMatch, _ = regexp.Compile(cfg.RecrawlDueMatch)
		}
	}
	return p
}

// SchedulePolicy returns a 64-bit stamp of cfg's recrawl keys that decide
// due times (recrawl_interval_min_s/max_s, recrawl_rules,
// recrawl_due_before/match): FNV-1a over their JSON, equal for equal keys.
// An owner writes it into its ScheduleSummary; BacklogPending compares.
func SchedulePolicy(cfg config.Config) uint64 {
	due := ""
	if t := cfg.RecrawlDue(); !t.IsZero() {
		due = t.UTC().Format(time.RFC3339) + " " + cfg.RecrawlDueMatch
	}
	b, _ := json.Marshal([]any{cfg.RecrawlIntervalMinS, cfg.RecrawlIntervalMaxS, cfg.RecrawlRules, due})
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// same reports whether cfg's recrawl keys are those p was compiled from
// (their SchedulePolicy stamps are equal).
func (p *schedPolicy) same(cfg config.Config) bool { return p.stamp == SchedulePolicy(cfg) }

// bounds returns the interval bounds of URL u: the first matching rule's,
// else the global ones.
func (p *schedPolicy) bounds(u string) (lo, hi int64) {
	for i, re := range p.res {
		if re != nil && re.MatchString(u) {
			return p.rules[i].MinS, p.rules[i].MaxS
		}
	}
	return p.min, p.max
}

// interval returns the next recrawl interval, in seconds, of schedule
// entry it (it.Prev set): the capture's interval shrunk by schedDecRate
// when it changed, grown by schedIncRate when not; for a first capture
// (Prev.IntervalS 0), half the age of its content (Prev.LastModified, else
// the sitemap lastmod) when known, else the sitemap changefreq's period
// (ChangefreqSeconds: always the minimum, never the maximum), else from
// the sitemap priority (min x (max/min)^(1-priority): priority 1 gives
// min, 0 max), else the minimum; always clamped to the URL's bounds. A changed capture's
// interval shrinks and an unchanged one's grows by at least a second, so
// whole-second rounding cannot hold a short interval still.
func (p *schedPolicy) interval(it Item) int64 {
	lo, hi := p.bounds(it.URL)
	c := it.Prev
	var iv float64
	switch {
	case c.IntervalS > 0 && c.Changed:
		iv = float64(c.IntervalS) * (1 - schedDecRate)
	case c.IntervalS > 0:
		iv = float64(c.IntervalS) * (1 + schedIncRate)
	default:
		iv = float64(lo)
		lm := c.LastModified
		if lm.IsZero() {
			lm = parseLastmod(it.Lastmod)
		}
		cf, cfOK := ChangefreqSeconds(it.Changefreq)
		switch {
		case !lm.IsZero() && lm.Before(c.Time):
			iv = c.Time.Sub(lm).Seconds() / 2
		case cfOK && cf == 0: // always
			iv = float64(lo)
		case cfOK && cf < 0: // never
			iv = float64(hi)
		case cfOK:
			iv = float64(cf)
		case it.Priority != nil:
			iv = float64(lo) * math.Pow(float64(hi)/float64(lo), 1-*it.Priority)
		}
	}
	next := int64(math.Round(iv))
	switch {
	case c.IntervalS > 0 && c.Changed:
		next = min(next, c.IntervalS-1) // whole seconds: 2 x 0.8 must not round back to 2
	case c.IntervalS > 0:
		next = max(next, c.IntervalS+1) // nor 1 x 1.4 to 1
	}
	return min(max(next, lo), hi)
}

// due returns when schedule entry it is due, in Unix seconds, and the
// interval that makes it so: Prev.LastFetch() plus interval, or, when a
// `crawlctl recrawl --now` request covers it (last fetched before
// recrawl_due_before, URL matching recrawl_due_match), the request's time
// if that is earlier.
func (p *schedPolicy) due(it Item) (at, interval int64) {
	interval = p.interval(it)
	t := it.Prev.LastFetch().Unix()
	if p.dueBefore != 0 && t < p.dueBefore && (p.dueMatch == nil || p.dueMatch.MatchString(it.URL)) {
		return min(p.dueBefore, t+interval), interval
	}
	return t + interval, interval
}

// ChangefreqSeconds returns the period in seconds of a sitemap
// <changefreq> value (sitemap protocol 0.9): hourly 3,600, daily 86,400,
// weekly 604,800, monthly 2,592,000 (30 days), yearly 31,536,000 (365
// days); 0 for always (the schedule uses the URL's minimum interval) and
// -1 for never (its maximum). ok is false for "" and any other string.
func ChangefreqSeconds(changefreq string) (seconds int64, ok bool) {
	switch changefreq {
	case "always":
		return 0, true
	case "hourly":
		return 3600, true
	case "daily":
		return 86400, true
	case "weekly":
		return 604800, true
	case "monthly":
		return 2592000, true
	case "yearly":
		return 31536000, true
	case "never":
		return -1, true
	}
	return 0, false
}

// lastmodLayouts are the W3C Datetime forms a sitemap lastmod takes.
var lastmodLayouts = []string{time.RFC3339, "2006-01-02T15:04Z07:00", "2006-01-02", "2006-01", "2006"}

// parseLastmod parses a sitemap lastmod (W3C Datetime); zero when it does
// not parse.
func parseLastmod(s string) time.Time {
	for _, l := range lastmodLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
