package main

// What the benchmark reads of a fleet's workers: their /metrics
// (testenv.ScrapeMetrics) summed over the workers, and their CPU time and
// peak memory from /proc.

import (
	"context"
	"math"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// workerMetrics is what a fleet's workers report, summed over them.
type workerMetrics struct {
	claim, complete, post testenv.Histogram  // zkcrawl_zk_op_duration_seconds of queue_claim, queue_complete, backlog_post
	fsync                 testenv.Histogram  // zkcrawl_output_fsync_duration_seconds: group fsync rounds
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
		fams, err := testenv.ScrapeMetrics(ctx, w.Metrics)
		if err != nil {
			return m, err
		}
		for _, x := range []struct {
			h                  *testenv.Histogram
			name, label, value string
		}{{&m.claim, opHist, "op", "queue_claim"}, {&m.complete, opHist, "op", "queue_complete"}, {&m.post, opHist, "op", "backlog_post"},
			{&m.fsync, "zkcrawl_output_fsync_duration_seconds", "", ""}} {
			if *x.h, err = x.h.Merge(fams.Histogram(x.name, x.label, x.value)); err != nil {
				return m, err
			}
		}
		fams.Counts(m.ops, opHist, "op")
		fams.Counts(m.opErrors, "zkcrawl_zk_op_errors_total", "op")
		fams.Counts(m.dropped, "zkcrawl_links_dropped_total", "reason")
		fams.Counts(m.links, "zkcrawl_links_total", "result")
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
