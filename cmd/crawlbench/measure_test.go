package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func TestQuantileInterpolatesInsideABucket(t *testing.T) {
	// 10 observations <= 1, 10 more <= 2, 0 more <= 4, none above.
	h := hist{Bounds: []float64{1, 2, 4, math.Inf(1)}, Counts: []float64{10, 20, 20, 20}, Count: 20, Sum: 25}
	cases := []struct{ q, want float64 }{
		{0.25, 0.5}, // rank 5 in [0,1]
		{0.5, 1},    // rank 10: top of the first bucket
		{0.75, 1.5}, // rank 15 in (1,2]
		{1, 2},
	}
	for _, c := range cases {
		if got := h.quantile(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := (hist{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty histogram quantile = %v, want NaN", got)
	}
	// A rank in the +Inf bucket yields the largest finite bound.
	inf := hist{Bounds: []float64{1, math.Inf(1)}, Counts: []float64{1, 10}, Count: 10}
	if got := inf.quantile(0.99); got != 1 {
		t.Errorf("quantile in +Inf bucket = %v, want 1", got)
	}
}

func TestMergeAddsBucketsAndRejectsOtherBounds(t *testing.T) {
	a := hist{Bounds: []float64{1, math.Inf(1)}, Counts: []float64{1, 2}, Count: 2, Sum: 3}
	m, err := hist{}.merge(a)
	if err != nil {
		t.Fatal(err)
	}
	m, err = m.merge(a)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts[0] != 2 || m.Counts[1] != 4 || m.Count != 4 || m.Sum != 6 {
		t.Errorf("merged = %+v", m)
	}
	if a.Counts[0] != 1 {
		t.Errorf("merge changed its input: %+v", a)
	}
	if _, err := m.merge(hist{Bounds: []float64{2, math.Inf(1)}, Counts: []float64{1, 1}, Count: 1}); err == nil {
		t.Error("merge of different bounds: no error")
	}
}

func TestExactQuantileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := exactQuantile(d, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := exactQuantile(d, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
	if got := exactQuantile(nil, 0.5); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
}

func TestNumGroupsThousands(t *testing.T) {
	cases := map[float64]string{1234567.891: "1,234,567.89", 999: "999.00", -12345: "-12,345.00", 0.5: "0.50"}
	for v, want := range cases {
		if got := num(v, 2); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
	if got := f0(math.NaN()); got != "—" {
		t.Errorf("f0(NaN) = %q", got)
	}
}

func TestCheckTruthCountsMissingDuplicateExtraAndWrongStatus(t *testing.T) {
	truth := map[string]testenv.WebExpect{
		"http://a/1": {Status: 200},
		"http://a/2": {Status: 200},
		"http://a/3": {Status: 404},
		"http://a/x": {Status: 0}, // must not be fetched
	}
	t0 := time.Now()
	lines := []storage.LogEntry{ // in time order, as testenv.ReadCrawlLogs returns them
		{URL: "http://a/1", Status: 200, TS: t0},
		{URL: "http://a/3", Status: 200, TS: t0},
		{URL: "http://a/x", Status: 200, TS: t0},
		{URL: "http://a/1", Status: 200, TS: t0.Add(time.Second)},
	}
	c := checkTruth(lines, truth)
	if c.urls != 3 || c.missing != 1 || c.dups != 1 || c.extra != 1 || c.wrong != 1 {
		t.Errorf("checkTruth = %+v", c)
	}
}

// tableRow returns the table line whose measure contains measure.
func tableRow(t *testing.T, table, measure string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.Contains(l, measure) {
			return l
		}
	}
	t.Fatalf("no row %q in\n%s", measure, table)
	return ""
}

func TestTableJudgesTargets(t *testing.T) {
	r := &report{
		Queued: &queuedResult{URLs: 300000, Hosts: 3000, SeedPerS: 40000, PostedDataPerURL: 3, DrainedDataPerURL: 49,
			PostedZnodesPerURL: 0.001, DrainedZnodesPerURL: 0.02},
		Trap: &trapResult{Links: 10000, URLLength: 1900, TimeS: 40, AbortMB: 512, Runs: []trapRun{
			{Flavour: "repetitive", GrowthMB: 1, PeakGrowthMB: 2},
			{Flavour: "subdomain", GrowthMB: 30, PeakGrowthMB: 33, Dropped: map[string]int64{"bytes": 5}},
		}},
		Real: &realResult{MaxInFlight: 8, Runs: []realRun{
			{ForceSync: true, WgetS: 2, ZKS: 1, Ratio: 0.5, WritesPerLine: 1.3, ZKPages: 10, WgetPages: 10},
			{ForceSync: false, WgetS: 2, ZKS: 3, Ratio: 1.5, WritesPerLine: 1.2, ZKPages: 10, WgetPages: 10},
		}},
	}
	table := r.table()
	for measure, want := range map[string]string{
		"seeding rate":                   "**NOT MET**",
		"znodes per queued URL":          "met",
		"ZooKeeper data per queued URL":  "**NOT MET**", // 49 B after the drain
		"repetitive: ZooKeeper data":     "met",
		"subdomain: ZooKeeper data":      "**NOT MET**", // the peak counts
		"loopback: ratio zkcrawl / wget": "met",         // judged on forceSync=yes
		"writes per crawl log line":      "**NOT MET**",
		"pages zkcrawl of wget; missing": "met",
	} {
		row := tableRow(t, table, measure)
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(row), "|"), "|")
		if got := strings.TrimSpace(cells[len(cells)-1]); got != want {
			t.Errorf("row %q: verdict %q, want %q:\n%s", measure, got, want, row)
		}
	}
	if row := tableRow(t, table, "loopback: ratio"); !strings.Contains(row, "0.50 (forceSync=no: 1.50)") {
		t.Errorf("ratio row does not show forceSync=no beside yes: %s", row)
	}
	if row := tableRow(t, table, "subdomain: ZooKeeper data"); !strings.Contains(row, "bytes 5") {
		t.Errorf("trap row lacks the dropped counts: %s", row)
	}
}
