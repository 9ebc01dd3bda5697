package chaos

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// A continuous crawl under worker kills (long only: `make chaos`): config
// recrawl on with a fixed interval (recrawl_interval_min_s =
// recrawl_interval_max_s), three workers crawl a small web for about
// fifteen intervals while, every few intervals, the oldest is killed with
// SIGKILL and a fresh one takes its place; then every worker is stopped
// with SIGTERM. The schedule lives in the frontier (the groups' backlogs),
// so the kills move it with the groups. From the crawl logs:
//
//   - no URL falls out of the schedule: every ground-truth URL is fetched
//     again within interval + slack of its last fetch, to the end of the
//     run (slack: the session timeout before a killed worker's groups move,
//     their reload, and the 1 s granularity of due times);
//   - none is due twice at once and none is refetched early: a URL fetched
//     again less than interval - 1.5 s after its last fetch must be one the
//     killed workers held a claim on at a kill (at-least-once: the item was
//     fetched, its completion never came), and there are at most that many.
func TestContinuousCrawlSurvivesKills(t *testing.T) {
	if !longRun() {
		t.Skip("long only (ZKCRAWL_CHAOS=long, make chaos): a continuous crawl over about 90 s")
	}
	const (
		interval = 6 * time.Second
		rounds   = 15
		every    = 4 * interval // between kills
		slack    = sessionTimeout + 5*time.Second
	)
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	cfg := crawlConfig(0)
	cfg.PerHostMaxInFlight = 4
	cfg.Recrawl = true
	cfg.RecrawlIntervalMinS = int64(interval / time.Second)
	cfg.RecrawlIntervalMaxS = int64(interval / time.Second)
	cfg.Sitemaps = false
	c := newCrawl(t, crawlSpec{
		name:   "recrawl",
		zk:     zk.Addr(),
		web:    testenv.WebConfig{Seed: 23, Hosts: 4, PagesPerHost: 15, LinksPerPage: 3},
		config: cfg,
	})
	for range 3 {
		c.startWorker(workerOpts{})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	held := map[string]bool{} // URLs the killed workers held claims on at the kills
	kills := 0
	end := began.Add(rounds * interval)
	for next := began.Add(every); time.Now().Before(end); next = next.Add(every) {
		sleep(t, min(time.Until(next), time.Until(end)))
		if !time.Now().Before(end) {
			break
		}
		victim, cls := c.killOldest(ctx)
		for _, cl := range cls {
			held[cl.url] = true
		}
		kills++
		fresh := c.startWorker(workerOpts{})
		t.Logf("kill %d at %v: SIGKILL %s holding %d claims; started %s",
			kills, time.Since(began).Round(100*time.Millisecond), victim.id, len(cls), fresh.id)
	}
	stop := time.Now()
	c.stopAll(0)

	fetches := map[string][]time.Time{}
	for _, e := range c.logs() {
		fetches[e.URL] = append(fetches[e.URL], e.TS)
	}
	late, early, earlyHeld, lines := 0, 0, 0, 0
	for u, exp := range c.truth {
		if exp.Status == 0 || strings.HasSuffix(u, "/sitemap.xml") { // sitemaps off: not fetched
			continue
		}
		ts := fetches[u]
		lines += len(ts)
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		if len(ts) < 2 {
			t.Errorf("%s: fetched %d times in %v; a URL recrawled every %v should be fetched again and again", u, len(ts), stop.Sub(began), interval)
			continue
		}
		for i := 1; i < len(ts); i++ {
			gap := ts[i].Sub(ts[i-1])
			switch {
			case gap > interval+slack:
				if late < 10 {
					t.Errorf("%s: fetched again %v after its last fetch (at %v); want <= %v: it fell out of the schedule for a while",
						u, gap.Round(100*time.Millisecond), ts[i-1].Sub(began).Round(100*time.Millisecond), interval+slack)
				}
				late++
			case gap < interval-1500*time.Millisecond:
				if held[u] {
					earlyHeld++
				} else {
					if early < 10 {
						t.Errorf("%s: fetched again %v after its last fetch (at %v), early, and no killed worker held its claim",
							u, gap.Round(100*time.Millisecond), ts[i-1].Sub(began).Round(100*time.Millisecond))
					}
					early++
				}
			}
		}
		if last := ts[len(ts)-1]; stop.Sub(last) > interval+slack {
			t.Errorf("%s: last fetched %v before the stop; want <= %v: it fell out of the schedule", u, stop.Sub(last).Round(100*time.Millisecond), interval+slack)
		}
	}
	if earlyHeld > len(held) {
		t.Errorf("%d early refetches of URLs the killed workers held, more than the %d claims they held", earlyHeld, len(held))
	}
	t.Logf("continuous crawl: %d ground-truth URLs, %d fetches in %v (interval %v), %d kills holding %d claims; late %d, early %d (+%d of held claims)",
		countFetchable(c.truth), lines, stop.Sub(began).Round(100*time.Millisecond), interval, kills, len(held), late, early, earlyHeld)
}
