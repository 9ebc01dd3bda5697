package main

import (
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
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

func TestSpreadNearestRank(t *testing.T) {
	d := map[int]time.Duration{}
	for i := 1; i <= 100; i++ {
		d[i] = time.Duration(i) * time.Millisecond
	}
	if n, lo, mid, hi := spread(d); n != 100 || lo != 0.001 || mid != 0.05 || hi != 0.1 {
		t.Errorf("spread = %d, %v, %v, %v; want 100, 0.001, 0.05, 0.1", n, lo, mid, hi)
	}
	if n, _, mid, _ := spread(map[int]time.Duration{}); n != 0 || mid != 0 {
		t.Errorf("empty spread = %d, median %v", n, mid)
	}
}

func TestJudgeSynthCountsMissingDuplicateExtraAndWrongStatus(t *testing.T) {
	truth := map[string]testenv.WebExpect{
		"http://a/1": {Status: 200},
		"http://a/2": {Status: 200},
		"http://a/3": {Status: 404},
		"http://a/x": {Status: 0}, // must not be fetched
	}
	t0 := time.Now()
	lines := []storage.LogEntry{ // in time order, as testenv.ReadCrawlLogs returns them
		{URL: "http://a/1", Status: 200, TS: t0, Worker: "w1"},
		{URL: "http://a/3", Status: 200, TS: t0, Worker: "w1"},
		{URL: "http://a/x", Status: 200, TS: t0, Worker: "w2"},
		{URL: "http://a/1", Status: 200, TS: t0.Add(time.Second), Worker: "w2"},
	}
	b := &bench{log: slog.New(slog.DiscardHandler)}
	f := &fleet{workers: []*workerProc{{id: "w1"}, {id: "w2"}}}
	run := report.SynthRun{WallS: 2}
	b.judgeSynth(&run, f, lines, truth)
	if run.URLs != 3 || run.Missing != 1 || run.Dups != 1 || run.Extra != 1 || run.WrongStatus != 1 {
		t.Errorf("judgeSynth: urls %d, missing %d, dups %d, extra %d, wrong %d; want 3, 1, 1, 1, 1", run.URLs, run.Missing, run.Dups, run.Extra, run.WrongStatus)
	}
	if run.Pages != 4 || run.PagesPerS != 2 || len(run.PagesPerWorker) != 2 || run.PagesPerWorker[0] != 2 {
		t.Errorf("judgeSynth: pages %d, pages/s %v, per worker %v", run.Pages, run.PagesPerS, run.PagesPerWorker)
	}
}
