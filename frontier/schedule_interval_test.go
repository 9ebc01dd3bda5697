package frontier

import (
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
)

// A first capture's interval: half its content's age when a Last-Modified
// or sitemap lastmod gives one; else the sitemap changefreq's period,
// clamped to the URL's bounds (always the minimum, never the maximum);
// else the priority; else the minimum. A later capture adapts its own
// interval and ignores changefreq.
func TestScheduleFirstIntervalChangefreq(t *testing.T) {
	p := newSchedPolicy(config.Config{RecrawlIntervalMinS: 3600, RecrawlIntervalMaxS: 2592000,
		RecrawlRules: []config.RecrawlRule{{Match: `/narrow/`, MinS: 7200, MaxS: 172800}}})
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	half := 0.5
	cases := []struct {
		name string
		it   Item
		want int64
	}{
		{"always", Item{Changefreq: "always"}, 3600},
		{"hourly", Item{Changefreq: "hourly"}, 3600},
		{"daily", Item{Changefreq: "daily"}, 86400},
		{"weekly", Item{Changefreq: "weekly"}, 604800},
		{"monthly", Item{Changefreq: "monthly"}, 2592000},
		{"yearly clamped to max", Item{Changefreq: "yearly"}, 2592000},
		{"never is the max", Item{Changefreq: "never"}, 2592000},
		{"rule bounds: hourly up to its min", Item{URL: "http://e.com/narrow/a", Changefreq: "hourly"}, 7200},
		{"rule bounds: weekly down to its max", Item{URL: "http://e.com/narrow/a", Changefreq: "weekly"}, 172800},
		{"rule bounds: always", Item{URL: "http://e.com/narrow/a", Changefreq: "always"}, 7200},
		{"rule bounds: never", Item{URL: "http://e.com/narrow/a", Changefreq: "never"}, 172800},
		{"Last-Modified wins", Item{Changefreq: "hourly", Prev: &Capture{LastModified: at.Add(-10 * 24 * time.Hour)}}, 5 * 86400},
		{"lastmod wins", Item{Changefreq: "yearly", Lastmod: "2026-11-24T12:00:00Z"}, 86400},
		{"changefreq before priority", Item{Changefreq: "daily", Priority: &half}, 86400},
		{"priority without changefreq", Item{Priority: &half}, 96598},
		{"nothing: the minimum", Item{}, 3600},
		{"later capture ignores changefreq", Item{Changefreq: "yearly", Prev: &Capture{IntervalS: 10000}}, 14000},
	}
	for _, c := range cases {
		it := c.it
		if it.URL == "" {
			it.URL = "http://e.com/a"
		}
		cp := Capture{Time: at}
		if it.Prev != nil {
			cp = *it.Prev
			cp.Time = at
		}
		it.Prev = &cp
		if got := p.interval(it); got != c.want {
			t.Errorf("%s: interval %d, want %d", c.name, got, c.want)
		}
	}
}
