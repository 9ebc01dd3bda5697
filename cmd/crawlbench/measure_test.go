package main

import (
	"math"
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
