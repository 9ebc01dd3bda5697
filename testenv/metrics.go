package testenv

// Prometheus metrics of a process under test: a /metrics page scraped and
// parsed with the Prometheus library, histograms of several processes
// merged bucket by bucket, and quantiles interpolated inside a bucket as
// PromQL's histogram_quantile does (hand-written: that function lives in
// the Prometheus server, not in a client library).

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a Prometheus /metrics page: its metric
// families by name.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics fetches url (bounded by ctx and 5 s) and parses it in the
// Prometheus text exposition format with the Prometheus library's parser.
// Errors: the request failed, the answer was not 200, or it does not
// parse; each names url.
func ScrapeMetrics(ctx context.Context, url string) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("testenv: scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("testenv: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("testenv: scrape %s: HTTP %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("testenv: scrape %s: parse: %w", url, err)
	}
	return fams, nil
}

// Histogram is a cumulative histogram: Bounds[i] is the upper bound of
// bucket i (the last is +Inf) and Counts[i] the observations <= Bounds[i];
// Sum and Count are the observations' sum and number.
type Histogram struct {
	Bounds, Counts []float64
	Sum, Count     float64
}

// Histogram returns the histogram of family name whose label has value
// (label "": the family's unlabelled histogram); empty when absent.
func (ms Metrics) Histogram(name, label, value string) Histogram {
	var h Histogram
	for _, m := range ms[name].GetMetric() {
		ph := m.GetHistogram()
		if ph == nil || (label != "" && !slices.ContainsFunc(m.GetLabel(), func(lp *dto.LabelPair) bool { return lp.GetName() == label && lp.GetValue() == value })) {
			continue
		}
		for _, b := range ph.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue // the text format lists it; it is added below in any case
			}
			h.Bounds = append(h.Bounds, b.GetUpperBound())
			h.Counts = append(h.Counts, float64(b.GetCumulativeCount()))
		}
		h.Bounds = append(h.Bounds, math.Inf(1))
		h.Counts = append(h.Counts, float64(ph.GetSampleCount()))
		h.Sum, h.Count = ph.GetSampleSum(), float64(ph.GetSampleCount())
	}
	return h
}

// Merge returns h plus o bucket by bucket (several processes' histograms
// of one metric). Errors: both non-empty with different bounds.
func (h Histogram) Merge(o Histogram) (Histogram, error) {
	switch {
	case len(o.Bounds) == 0:
		return h, nil
	case len(h.Bounds) == 0:
		return Histogram{Bounds: slices.Clone(o.Bounds), Counts: slices.Clone(o.Counts), Sum: o.Sum, Count: o.Count}, nil
	case !slices.Equal(h.Bounds, o.Bounds):
		return h, fmt.Errorf("testenv: merge histograms: bounds %v vs %v", h.Bounds, o.Bounds)
	}
	out := Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Sum: h.Sum + o.Sum, Count: h.Count + o.Count}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i] + o.Counts[i]
	}
	return out, nil
}

// Quantile estimates the q-quantile (0..1) like PromQL's
// histogram_quantile: find the bucket holding rank q*Count and interpolate
// linearly between its lower bound (the previous bucket's upper bound, 0
// for the first) and its upper bound. A rank in the +Inf bucket yields the
// largest finite bound. NaN when there are no observations.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	i := min(sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= rank }), len(h.Bounds)-1)
	if math.IsInf(h.Bounds[i], 1) {
		if i == 0 {
			return math.NaN()
		}
		return h.Bounds[i-1]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.Bounds[i-1], h.Counts[i-1]
	}
	if h.Counts[i] <= below {
		return h.Bounds[i]
	}
	return lower + (h.Bounds[i]-lower)*(rank-below)/(h.Counts[i]-below)
}

// Counts adds family name into out by the value of label: a counter's
// value, a histogram's observation count.
func (ms Metrics) Counts(out map[string]float64, name, label string) {
	for _, m := range ms[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			switch {
			case lp.GetName() != label:
			case m.GetCounter() != nil:
				out[lp.GetValue()] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[lp.GetValue()] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
}
