package worker

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// metricValue sums a gathered metric's samples whose labels include want.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			found = true
			sum += value(m)
		}
	}
	return sum, found
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestMetricsExpectedOutcomesAndGauges: a crawl full of duplicate links
// counts their NodeExists as expected outcomes, not errors; while paused
// with URLs queued, the queue_depth gauge shows the owned shards' items.
func TestMetricsExpectedOutcomesAndGauges(t *testing.T) {
	old := gaugeInterval
	gaugeInterval = 200 * time.Millisecond
	defer func() { gaugeInterval = old }()

	_, reg := crawlWithMetrics(t, "metrics", testenv.WebConfig{Seed: 4, Hosts: 3, PagesPerHost: 40, LinksPerPage: 6}, frontier.Layout{Shards: 8, Spread: 1})
	zk := testenv.ZooKeeper(t)
	cfg := testConfig()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if errs, _ := metricValue(t, reg, "zkcrawl_zk_op_errors_total", nil); errs != 0 {
		t.Errorf("zk_op_errors_total = %v after a clean crawl, want 0", errs)
	}
	exists, _ := metricValue(t, reg, "zkcrawl_zk_op_expected_total", map[string]string{"outcome": "node_exists"})
	dups, _ := metricValue(t, reg, "zkcrawl_links_total", map[string]string{"result": "duplicate"})
	fetches, _ := metricValue(t, reg, "zkcrawl_fetches_total", nil)
	all, _ := metricValue(t, reg, "zkcrawl_zk_op_expected_total", nil)
	t.Logf("%v fetches: zk_op_errors_total 0, zk_op_expected_total %v (node_exists %v; all of them were counted as errors before), duplicate links %v", fetches, all, exists, dups)
	for _, name := range []string{"zkcrawl_dns_cache_hits_total", "zkcrawl_dns_cache_misses_total", "zkcrawl_dns_lookups_in_flight", "zkcrawl_dns_cache_entries"} {
		if v, ok := metricValue(t, reg, name, nil); !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0: the test web's hosts are IP literals, never looked up", name, v, ok)
		}
	}
	if exists == 0 || dups == 0 {
		t.Errorf("expected node_exists = %v, duplicate links = %v; want both > 0", exists, dups)
	}

	// Paused with queued URLs: the gauge shows them.
	paused := cfg
	paused.Paused = true
	c2 := newCrawl(t, zk.Addr(), "gauges", paused, frontier.Layout{Shards: 8, Spread: 1},
		[]string{"http://a.example/1", "http://a.example/2", "http://b.example/1"})
	reg2 := prometheus.NewRegistry()
	m2, err := NewMetrics(reg2)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := c2.startWorker(rctx, "w1", func(o *Options) { o.Metrics = m2; o.ExitWhenDone = false })
	eventually(t, 10*time.Second, "queue_depth gauge 3", func() bool {
		v, ok := metricValue(t, reg2, "zkcrawl_queue_depth", nil)
		return ok && v == 3
	})
	for _, name := range []string{"zkcrawl_claims_held", "zkcrawl_dead_letters"} {
		if v, ok := metricValue(t, reg2, name, nil); !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0", name, v, ok)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMetricsItemStages: after a small crawl every stage of
// zkcrawl_item_stage_seconds has observations, and the stages from robots
// to complete, which follow each other, add up to total (no item was
// abandoned).
func TestMetricsItemStages(t *testing.T) {
	c, reg := crawlWithMetrics(t, "stages", testenv.WebConfig{Seed: 5, Hosts: 2, PagesPerHost: 15, LinksPerPage: 4}, frontier.Layout{Shards: 4, Spread: 1})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count, sum := map[string]uint64{}, map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "zkcrawl_item_stage_seconds" {
			continue
		}
		for _, x := range mf.GetMetric() {
			s := x.GetLabel()[0].GetValue()
			count[s], sum[s] = x.GetHistogram().GetSampleCount(), x.GetHistogram().GetSampleSum()
		}
	}
	pages := len(c.logs())
	t.Logf("%d crawl log lines; observations by stage: %v", pages, count)
	for _, s := range stageNames {
		if count[s] == 0 {
			t.Errorf("stage %q: no observations", s)
		}
	}
	if count["total"] != uint64(pages) || count["claim"] != uint64(pages) || count["fetch"] != uint64(pages) {
		t.Errorf("total, claim, fetch observed %d, %d, %d times; want one per crawl log line (%d)", count["total"], count["claim"], count["fetch"], pages)
	}
	var laps float64
	for _, s := range stageNames[stageRobots:stageTotal] {
		laps += sum[s]
	}
	if d := laps - sum["total"]; d > 1e-3*sum["total"] || -d > 1e-3*sum["total"] {
		t.Errorf("stages robots..complete add up to %v s, total %v s", laps, sum["total"])
	}
}

// crawlWithMetrics crawls a synthetic web (webCfg) to the end with one worker
// whose metrics go to the returned registry.
func crawlWithMetrics(t *testing.T, name string, webCfg testenv.WebConfig, layout frontier.Layout) (*crawlEnv, *prometheus.Registry) {
	t.Helper()
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, webCfg)
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, zk.Addr(), name, cfg, layout, web.Seeds())
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", func(o *Options) { o.Metrics = m }); err != nil {
		t.Fatal(err)
	}
	return c, reg
}
