package main

// Prometheus scraping: the workers' /metrics in the text exposition format,
// parsed with the Prometheus library's parser; histograms of several workers
// merged bucket by bucket and quantiles interpolated inside a bucket the way
// PromQL's histogram_quantile does; and what the benchmark reads of a
// fleet: its metrics summed over the workers, CPU time and peak memory.

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
	Bounds []float64
	Counts []float64
	Sum    float64
	Count  float64
}

// histOf returns the histogram of family name whose label label=value
// (label "": the family's unlabelled histogram), or an empty hist when it
// is absent (a worker that never claimed).
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

// merge adds o into h bucket by bucket; both must have the same bounds
// (the workers run the same binary), or one must be empty.
func (h hist) merge(o hist) (hist, error) {
	if len(o.Bounds) == 0 {
		return h, nil
	}
	if len(h.Bounds) == 0 {
		return hist{Bounds: append([]float64(nil), o.Bounds...), Counts: append([]float64(nil), o.Counts...), Sum: o.Sum, Count: o.Count}, nil
	}
	if len(h.Bounds) != len(o.Bounds) {
		return h, fmt.Errorf("merge histograms: %d buckets vs %d", len(h.Bounds), len(o.Bounds))
	}
	out := hist{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Sum: h.Sum + o.Sum, Count: h.Count + o.Count}
	for i := range h.Bounds {
		if h.Bounds[i] != o.Bounds[i] {
			return h, fmt.Errorf("merge histograms: bucket %d bound %g vs %g", i, h.Bounds[i], o.Bounds[i])
		}
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
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= rank })
	if i >= len(h.Bounds) {
		i = len(h.Bounds) - 1
	}
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
	inBucket := h.Counts[i] - below
	if inBucket <= 0 {
		return h.Bounds[i]
	}
	return lower + (h.Bounds[i]-lower)*(rank-below)/inBucket
}

// mean returns Sum/Count, NaN when empty.
func (h hist) mean() float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	return h.Sum / h.Count
}

// exactQuantile returns the q-quantile of sorted durations by the nearest
// rank method; 0 when empty.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// addCounts adds b's counts into a (allocating a when nil) and returns it.
func addCounts(a, b map[string]float64) map[string]float64 {
	if a == nil {
		a = map[string]float64{}
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

// labelCounts sums family name by the value of label: a counter's value,
// a histogram's observation count.
func labelCounts(fams map[string]*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
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
	return out
}

// finite returns v, or 0 for NaN and ±Inf (which JSON cannot hold).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// workerMetrics is what a fleet's workers report, summed over them.
type workerMetrics struct {
	claim, complete, post hist               // zkcrawl_zk_op_duration_seconds of queue_claim, queue_complete, backlog_post
	fsync                 hist               // zkcrawl_output_fsync_duration_seconds: group fsync rounds
	ops, opErrors         map[string]float64 // requests and queue steps by op; of which failed
	dropped               map[string]float64 // zkcrawl_links_dropped_total by reason
	linksQueued, linksDup float64
	cpuS                  float64   // worker CPU seconds, summed
	peakRSSMB             []float64 // per worker, VmHWM
}

// metrics scrapes every worker's /metrics and reads its CPU time and peak
// RSS from /proc. Errors: a scrape, a /proc read, or histograms of
// different buckets.
func (f *fleet) metrics(ctx context.Context) (workerMetrics, error) {
	var m workerMetrics
	const opHist = "zkcrawl_zk_op_duration_seconds"
	for _, w := range f.workers {
		fams, err := scrape(ctx, w.Metrics)
		if err != nil {
			return m, err
		}
		for _, x := range []struct {
			h  *hist
			op string
		}{{&m.claim, "queue_claim"}, {&m.complete, "queue_complete"}, {&m.post, "backlog_post"}} {
			if *x.h, err = x.h.merge(histOf(fams, opHist, "op", x.op)); err != nil {
				return m, err
			}
		}
		if m.fsync, err = m.fsync.merge(histOf(fams, "zkcrawl_output_fsync_duration_seconds", "", "")); err != nil {
			return m, err
		}
		m.ops = addCounts(m.ops, labelCounts(fams, opHist, "op"))
		m.opErrors = addCounts(m.opErrors, labelCounts(fams, "zkcrawl_zk_op_errors_total", "op"))
		m.dropped = addCounts(m.dropped, labelCounts(fams, "zkcrawl_links_dropped_total", "reason"))
		links := labelCounts(fams, "zkcrawl_links_total", "result")
		m.linksQueued += links["queued"]
		m.linksDup += links["duplicate"]
		cpu, err := w.CPUTime()
		if err != nil {
			return m, err
		}
		m.cpuS += cpu.Seconds()
		peak, err := w.RSSPeakKB()
		if err != nil {
			return m, err
		}
		m.peakRSSMB = append(m.peakRSSMB, float64(peak)/1024)
	}
	return m, nil
}

// ms converts seconds to milliseconds; 0 for NaN (a histogram without
// observations has no quantile), since JSON has no NaN.
func ms(s float64) float64 { return finite(s * 1000) }
