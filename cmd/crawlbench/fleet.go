package main

// A part's processes: bin/seeder and a fleet of bin/crawler workers (testenv.RunSeeder,
// StartCrawlers), the wait until their crawl is done, and their /metrics and /proc.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// seed runs bin/seeder (testenv.RunSeeder: cfg over the defaults; seeds
// nil: dir/seeds.txt is written) for at most timeout; it returns its output.
func (b *bench) seed(ctx context.Context, zkAddr, crawl, dir string, cfg map[string]any, seeds []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return testenv.RunSeeder(ctx, b.bin("seeder"), zkAddr, crawl, dir, cfg, seeds)
}

// fleet is the bin/crawler workers w1..wN of one crawl, output in dir/<id>, log in dir/<id>.log.
type fleet struct {
	dir     string
	workers []*testenv.Crawler
}

// startFleet starts n workers of crawl on zkAddr with extra flags (testenv.StartCrawlers; metrics on loopback).
func (b *bench) startFleet(ctx context.Context, zkAddr, crawl, dir string, n int, extra ...string) (*fleet, error) {
	ws, err := testenv.StartCrawlers(ctx, b.bin("crawler"), zkAddr, crawl, dir, n, b.log, extra...)
	return &fleet{dir: dir, workers: ws}, err
}

// kill sends SIGKILL to every worker (a crash; used on the way out).
func (f *fleet) kill() {
	for _, w := range f.workers {
		_ = w.Kill()
	}
}

// stopAndRead stops every worker still running (SIGTERM, then SIGKILL after 15 s) and
// reads their crawl logs in time order (testenv.ReadCrawlLogs).
func (f *fleet) stopAndRead() ([]storage.LogEntry, error) {
	for _, w := range f.workers {
		w.Stop(15 * time.Second)
	}
	return testenv.ReadCrawlLogs(f.dir)
}

// logSizes returns the size of each worker's crawl log (0 while missing),
// their sum, and the latest modification time: when the last page was logged.
func (f *fleet) logSizes() (sizes []int64, total int64, last time.Time) {
	for _, w := range f.workers {
		var n int64
		if st, err := os.Stat(w.CrawlLog()); err == nil {
			n = st.Size()
			if st.ModTime().After(last) {
				last = st.ModTime()
			}
		}
		sizes = append(sizes, n)
		total += n
	}
	return sizes, total, last
}

// waitDone polls every 50 ms until empty, asked once the crawl logs stopped growing for 100 ms, reports
// nothing left twice in a row with no log growing between. Errors: every worker exited, ctx, timeout.
func (f *fleet) waitDone(ctx context.Context, empty func(context.Context) (bool, error), timeout time.Duration) error {
	var last []int64
	stable, seenEmpty := 0, false
	done, err := poll(ctx, 50*time.Millisecond, timeout, func() (bool, error) {
		if !slices.ContainsFunc(f.workers, func(w *testenv.Crawler) bool { return !w.Exited() }) {
			return false, errors.New("every worker exited before the crawl was done:\n" + f.workers[0].LogTail(20))
		}
		sizes, total, _ := f.logSizes()
		if slices.Equal(sizes, last) && total > 0 {
			stable++
		} else {
			stable, seenEmpty = 0, false
		}
		last = sizes
		if stable < 2 {
			return false, nil
		}
		done, err := empty(ctx)
		done, seenEmpty = done && seenEmpty, done
		return done, err
	})
	if err == nil && !done {
		err = fmt.Errorf("crawl not done after %v", timeout)
	}
	return err
}

// poll calls cond every interval until it reports done or fails, ctx ends or timeout passes;
// it returns cond's last report (false at the timeout) or ctx's error.
func poll(ctx context.Context, interval, timeout time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		if done, err := cond(); done || err != nil || time.Now().After(deadline) {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// crawlReading is what runCrawl reads of one crawl while its workers still run.
type crawlReading struct {
	report.CrawlFigures           // LoadBefore: of the caller's mark
	end                 time.Time // the last crawl log write
	wall                time.Duration
	m                   workerMetrics
	front               *frontier.Frontier // opened when the caller gave no pending
}

// runCrawl starts n workers of the seeded crawl on zk, waits (up to 5 minutes) until pending
// reports it done (nil: frontier.Pending.Empty, opened once the workers run), and takes the
// readings since mark before anything stops. The caller stops the fleet; on error it is killed.
func (b *bench) runCrawl(ctx context.Context, zk *benchZK, crawl, dir string, n int, mark zkMark,
	pending func(context.Context) (bool, error)) (*fleet, crawlReading, error) {
	r := crawlReading{CrawlFigures: report.CrawlFigures{LoadBefore: mark.load}}
	if pending == nil {
		pending = func(ctx context.Context) (bool, error) {
			var err error
			if r.front == nil {
				if r.front, err = frontier.Open(ctx, zk.client, crawlRoot(crawl)); err != nil {
					return false, err
				}
			}
			p, err := r.front.Pending(ctx)
			return p.Empty(), err
		}
	}
	t0 := time.Now()
	f, err := b.startFleet(ctx, zk.addr, crawl, dir, n)
	if err != nil {
		return nil, r, err
	}
	err = f.waitDone(ctx, pending, 5*time.Minute)
	if err == nil {
		_, _, r.end = f.logSizes()
		r.wall = r.end.Sub(t0)
		r.m, err = f.metrics(ctx)
	}
	if err == nil {
		r.ZKWrites, r.ZKCPUS, err = zk.since(ctx, mark)
	}
	if err != nil {
		f.kill()
		return nil, r, err
	}
	m := r.m
	r.ZKOps, r.ZKOpErrors, r.WorkerCPUS = m.ops, m.opErrors, m.cpuS
	r.FsyncRounds, r.FsyncS = m.fsync.Count, m.fsync.Sum
	r.ClaimP50Ms, r.ClaimP99Ms = ms(m.claim.Quantile(0.5)), ms(m.claim.Quantile(0.99))
	r.LoadAfter = loadavg()
	return f, r, nil
}

// crawlRoot is crawl name's znode root (coord.Root); the driver's names are valid, so an error is a bug.
func crawlRoot(name string) string {
	root, err := coord.Root(name)
	if err != nil {
		panic(err)
	}
	return root
}

// workerMetrics is what a fleet's workers report, summed over them.
type workerMetrics struct {
	claim, complete, post testenv.Histogram   // zkcrawl_zk_op_duration_seconds of queue_claim, queue_complete, backlog_post
	fsync                 testenv.Histogram   // zkcrawl_output_fsync_duration_seconds: group fsync rounds
	stages                []testenv.Histogram // zkcrawl_item_stage_seconds by stageNames
	ops, opErrors         map[string]float64  // requests and queue steps by op; of which failed
	dropped, links        map[string]float64  // zkcrawl_links_dropped_total by reason, zkcrawl_links_total by result
	cpuS                  float64             // worker CPU seconds, summed
	peakRSSMB             []float64           // per worker, VmHWM
}

// metrics scrapes every worker's /metrics and reads its CPU time and peak
// RSS. Errors: a scrape, a /proc read, histograms of different buckets.
func (f *fleet) metrics(ctx context.Context) (workerMetrics, error) {
	m := workerMetrics{ops: map[string]float64{}, opErrors: map[string]float64{}, dropped: map[string]float64{}, links: map[string]float64{},
		stages: make([]testenv.Histogram, len(stageNames))}
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
		for i, name := range stageNames {
			if m.stages[i], err = m.stages[i].Merge(fams.Histogram("zkcrawl_item_stage_seconds", "stage", name)); err != nil {
				return m, err
			}
		}
		fams.Counts(m.ops, opHist, "op")
		fams.Counts(m.opErrors, "zkcrawl_zk_op_errors_total", "op")
		fams.Counts(m.dropped, "zkcrawl_links_dropped_total", "reason")
		fams.Counts(m.links, "zkcrawl_links_total", "result")
		cpu, err := w.CPUTime()
		peak, err2 := w.RSSPeakKB()
		if err = errors.Join(err, err2); err != nil {
			return m, err
		}
		m.cpuS += cpu.Seconds()
		m.peakRSSMB = append(m.peakRSSMB, float64(peak)/1024)
	}
	return m, nil
}

// stageNames are the stages of zkcrawl_item_stage_seconds (worker/stages.go), in the path's order.
var stageNames = strings.Fields("ready claim robots politeness fetch store parse links fsync complete total")

// ms converts seconds to milliseconds; 0 for NaN and ±Inf (no observations), which JSON lacks.
func ms(s float64) float64 {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return s * 1000
}
