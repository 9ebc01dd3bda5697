package main

// What the benchmark reads of a fleet's workers: their /metrics in the
// Prometheus text format (parsed with the Prometheus library's parser),
// summed over the workers, and their CPU time and peak memory from /proc.
// Histograms of several workers are merged bucket by bucket and quantiles
// interpolated inside a bucket as PromQL's histogram_quantile does
// (hand-written: the function lives in the Prometheus server, not in a
// client library).

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

// scrape fetches and parses one /metrics page.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: HTTP %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: parse: %w", url, err)
	}
	return fams, nil
}

// hist is a cumulative histogram: Bounds[i] is the upper bound of bucket i
// (the last is +Inf) and Counts[i] the observations <= Bounds[i].
type hist struct {
	Bounds, Counts []float64
	Sum, Count     float64
}

// histOf returns the histogram of family name whose label has value
// (label "": the family's unlabelled histogram); empty when absent (a
// worker that never claimed).
func histOf(fams map[string]*dto.MetricFamily, name, label, value string) hist {
	var h hist
	for _, m := range fams[name].GetMetric() {
		ph := m.GetHistogram()
		if ph == nil || (label != "" && !slices.ContainsFunc(m.GetLabel(), func(lp *dto.LabelPair) bool { return lp.GetName() == label && lp.GetValue() == value })) {
			continue
		}
		for _, b := range ph.GetBucket() {
			h.Bounds = append(h.Bounds, b.GetUpperBound())
			h.Counts = append(h.Counts, float64(b.GetCumulativeCount()))
		}
		h.Bounds = append(h.Bounds, math.Inf(1))
		h.Counts = append(h.Counts, float64(ph.GetSampleCount()))
		h.Sum, h.Count = ph.GetSampleSum(), float64(ph.GetSampleCount())
	}
	return h
}

// merge returns h plus o bucket by bucket; both must have the same bounds
// (the workers run the same binary), or one must be empty.
func (h hist) merge(o hist) (hist, error) {
	switch {
	case len(o.Bounds) == 0:
		return h, nil
	case len(h.Bounds) == 0:
		return hist{Bounds: slices.Clone(o.Bounds), Counts: slices.Clone(o.Counts), Sum: o.Sum, Count: o.Count}, nil
	case !slices.Equal(h.Bounds, o.Bounds):
		return h, fmt.Errorf("merge histograms: bounds %v vs %v", h.Bounds, o.Bounds)
	}
	out := hist{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Sum: h.Sum + o.Sum, Count: h.Count + o.Count}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i] + o.Counts[i]
	}
	return out, nil
}

// quantile estimates the q-quantile (0..1) like PromQL's
// histogram_quantile: find the bucket holding rank q*Count and interpolate
// linearly between its lower bound (the previous bucket's upper bound, 0
// for the first) and its upper bound. A rank in the +Inf bucket yields the
// largest finite bound. NaN when there are no observations.
func (h hist) quantile(q float64) float64 {
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

// labelCounts adds family name into out by the value of label: a
// counter's value, a histogram's observation count.
func labelCounts(out map[string]float64, fams map[string]*dto.MetricFamily, name, label string) {
	for _, m := range fams[name].GetMetric() {
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

// workerMetrics is what a fleet's workers report, summed over them.
type workerMetrics struct {
	claim, complete, post hist               // zkcrawl_zk_op_duration_seconds of queue_claim, queue_complete, backlog_post
	fsync                 hist               // zkcrawl_output_fsync_duration_seconds: group fsync rounds
	ops, opErrors         map[string]float64 // requests and queue steps by op; of which failed
	dropped, links        map[string]float64 // zkcrawl_links_dropped_total by reason, zkcrawl_links_total by result
	cpuS                  float64            // worker CPU seconds, summed
	peakRSSMB             []float64          // per worker, VmHWM
}

// metrics scrapes every worker's /metrics and reads its CPU time and peak
// RSS from /proc. Errors: a scrape, a /proc read, or histograms of
// different buckets.
func (f *fleet) metrics(ctx context.Context) (workerMetrics, error) {
	m := workerMetrics{ops: map[string]float64{}, opErrors: map[string]float64{}, dropped: map[string]float64{}, links: map[string]float64{}}
	const opHist = "zkcrawl_zk_op_duration_seconds"
	for _, w := range f.workers {
		fams, err := scrape(ctx, w.metrics)
		if err != nil {
			return m, err
		}
		for _, x := range []struct {
			h                  *hist
			name, label, value string
		}{{&m.claim, opHist, "op", "queue_claim"}, {&m.complete, opHist, "op", "queue_complete"}, {&m.post, opHist, "op", "backlog_post"},
			{&m.fsync, "zkcrawl_output_fsync_duration_seconds", "", ""}} {
			if *x.h, err = x.h.merge(histOf(fams, x.name, x.label, x.value)); err != nil {
				return m, err
			}
		}
		labelCounts(m.ops, fams, opHist, "op")
		labelCounts(m.opErrors, fams, "zkcrawl_zk_op_errors_total", "op")
		labelCounts(m.dropped, fams, "zkcrawl_links_dropped_total", "reason")
		labelCounts(m.links, fams, "zkcrawl_links_total", "result")
		cpu, err := w.CPUTime()
		if err != nil {
			return m, err
		}
		peak, err := w.RSSPeakKB()
		if err != nil {
			return m, err
		}
		m.cpuS += cpu.Seconds()
		m.peakRSSMB = append(m.peakRSSMB, float64(peak)/1024)
	}
	return m, nil
}

// ms converts seconds to milliseconds; 0 for NaN (a histogram without
// observations has no quantile), since JSON has no NaN.
func ms(s float64) float64 {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return s * 1000
}
