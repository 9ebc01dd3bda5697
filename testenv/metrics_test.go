package testenv

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestQuantileInterpolatesInsideABucket(t *testing.T) {
	// 10 observations <= 1, 10 more <= 2, 0 more <= 4, none above.
	h := Histogram{Bounds: []float64{1, 2, 4, math.Inf(1)}, Counts: []float64{10, 20, 20, 20}, Count: 20, Sum: 25}
	cases := []struct{ q, want float64 }{
		{0.25, 0.5}, // rank 5 in [0,1]
		{0.5, 1},    // rank 10: top of the first bucket
		{0.75, 1.5}, // rank 15 in (1,2]
		{1, 2},
	}
	for _, c := range cases {
		if got := h.Quantile(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := (Histogram{}).Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty histogram quantile = %v, want NaN", got)
	}
	// A rank in the +Inf bucket yields the largest finite bound.
	inf := Histogram{Bounds: []float64{1, math.Inf(1)}, Counts: []float64{1, 10}, Count: 10}
	if got := inf.Quantile(0.99); got != 1 {
		t.Errorf("quantile in +Inf bucket = %v, want 1", got)
	}
}

func TestMergeAddsBucketsAndRejectsOtherBounds(t *testing.T) {
	a := Histogram{Bounds: []float64{1, math.Inf(1)}, Counts: []float64{1, 2}, Count: 2, Sum: 3}
	m, err := Histogram{}.Merge(a)
	if err != nil {
		t.Fatal(err)
	}
	m, err = m.Merge(a)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts[0] != 2 || m.Counts[1] != 4 || m.Count != 4 || m.Sum != 6 {
		t.Errorf("merged = %+v", m)
	}
	if a.Counts[0] != 1 {
		t.Errorf("merge changed its input: %+v", a)
	}
	if _, err := m.Merge(Histogram{Bounds: []float64{2, math.Inf(1)}, Counts: []float64{1, 1}, Count: 1}); err == nil {
		t.Error("merge of different bounds: no error")
	}
}

func TestScrapeMetricsReadsHistogramsAndCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `# TYPE op_seconds histogram
op_seconds_bucket{op="a",le="1"} 3
op_seconds_bucket{op="a",le="+Inf"} 4
op_seconds_sum{op="a"} 5
op_seconds_count{op="a"} 4
op_seconds_bucket{op="b",le="1"} 1
op_seconds_bucket{op="b",le="+Inf"} 1
op_seconds_sum{op="b"} 0.5
op_seconds_count{op="b"} 1
# TYPE errs_total counter
errs_total{op="a"} 2
`)
	}))
	defer srv.Close()
	m, err := ScrapeMetrics(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if h := m.Histogram("op_seconds", "op", "a"); h.Count != 4 || h.Sum != 5 || len(h.Bounds) != 2 || h.Counts[0] != 3 {
		t.Errorf("histogram a = %+v", h)
	}
	counts := map[string]float64{}
	m.Counts(counts, "op_seconds", "op")
	m.Counts(counts, "errs_total", "op")
	if counts["a"] != 6 || counts["b"] != 1 {
		t.Errorf("counts = %v; want a 4+2, b 1", counts)
	}
	if _, err := ScrapeMetrics(context.Background(), srv.URL+"/nope\x00"); err == nil {
		t.Error("scrape of a bad URL: no error")
	}
}
