package worker

import (
	"context"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Issue 10 item 5: once a worker's status node reports the paused config
// version, no request reaches the site any more, although items it claimed
// before the pause were waiting in politeness. Before: each claim loop
// claimed and fetched one more item after the pause.
func TestPauseStopsFetchesOnceReported(t *testing.T) {
	zks := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 5, Hosts: 4, PagesPerHost: 80, LinksPerPage: 4})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 2 // items wait up to 0.5 s in politeness
	cfg.PerHostMaxInFlight = 1
	c := newCrawl(t, zks.Addr(), "pause", cfg, frontier.Layout{Shards: 8, Spread: 2}, web.Seeds())
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	done := c.startWorker(ctx, "w1", func(o *Options) {
		o.ExitWhenDone = false
		o.HeartbeatInterval = 100 * time.Millisecond
	})
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("w1: %v", err)
		}
	}()
	for len(web.Requests()) < 12 {
		if ctx.Err() != nil {
			t.Fatal("the crawl did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cfg.Paused = true
	c.setConfig(cfg)
	var reported time.Time
	for reported.IsZero() {
		if ctx.Err() != nil {
			t.Fatal("w1 never reported the paused config")
		}
		if st, _, ok := liveStatus(c, "w1"); ok && st.Paused {
			reported = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	var after []string
	for _, r := range web.Requests() {
		if r.Time.After(reported) {
			after = append(after, r.Host+r.Path)
		}
	}
	if len(after) > 0 {
		t.Errorf("%d requests started after w1 reported the pause: %v", len(after), after)
	}
	if st, _, _ := liveStatus(c, "w1"); st.InFlight != 0 {
		t.Errorf("w1 still has %d fetches in flight while paused", st.InFlight)
	}
}
