package main

// Part 1: the synthetic web with rate limits off, crawled by 1, 2 and 3
// bin/crawler processes, each count on a ZooKeeper with forceSync=yes and
// on one with forceSync=no. Each run gets a fresh crawl name and is
// measured from the first worker's start to the moment the frontier is
// empty (frontier.Pending: ready, claimed, backlog and posts all 0,
// confirmed twice), then checked against the web's ground truth. Then the
// driver waits until the crawl's backlog batches have retired into seen
// chunks (Backlog.Stats) and reads what the finished crawl left in
// ZooKeeper: the seen-set of every fetched URL (part 3b).

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// synthConfig is the crawl config of part 1.
func (b *bench) synthConfig() map[string]any {
	return map[string]any{
		"per_host_rate_per_s":    0,
		"per_host_max_in_flight": b.opts.synthInFlight,
		"worker_concurrency":     64,
		"allow_private_networks": true,
		"obey_robots":            true,
		"max_depth":              -1,
		"scope":                  b.opts.scope,
	}
}

// startSynthWeb starts part 1's synthetic web and computes its ground truth.
func (b *bench) startSynthWeb(ctx context.Context) (*testenv.Web, map[string]testenv.WebExpect, error) {
	o := b.opts
	web, err := testenv.StartWeb(ctx, testenv.WebConfig{
		Seed: 1, Hosts: o.hosts, PagesPerHost: o.pagesPerHost, LinksPerPage: o.links,
		CrossHostShare: o.cross, Logger: b.quiet,
	})
	if err != nil {
		return nil, nil, err
	}
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, Scope: o.scope, ObeyRobots: true})
	if err != nil {
		web.Close()
		return nil, nil, err
	}
	return web, truth, nil
}

// warmCrawl returns the warm-up of a shared server: one unrecorded
// 3-worker crawl of the synthetic web.
func (b *bench) warmCrawl(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect) func(z *benchZK) error {
	return func(z *benchZK) error {
		_, err := b.synthRun(ctx, web, truth, z, 3, 0, false)
		return err
	}
}

// runSynth runs part 1: every worker count on both shared servers,
// --repeat rounds, plus the baseline build when --baseline-bin is given.
func (b *bench) runSynth(ctx context.Context) (*report.Synth, error) {
	o := b.opts
	web, truth, err := b.startSynthWeb(ctx)
	if err != nil {
		return nil, err
	}
	defer web.Close()
	res := &report.Synth{Hosts: o.hosts, PagesPerHost: o.pagesPerHost, LinksPerPage: o.links,
		CrossHostShare: o.cross, Scope: o.scope, MaxInFlight: o.synthInFlight, BaselineName: o.baselineName}
	for _, e := range truth {
		if e.Status > 0 {
			res.Expected++
		}
	}
	b.log.Info("part 1: synthetic web", "hosts", o.hosts, "pages_per_host", o.pagesPerHost,
		"links", o.links, "cross", o.cross, "scope", o.scope, "expected_urls", res.Expected)

	// Rounds of 1, 2, 3 workers, each on forceSync=yes then no, --repeat
	// times; the table keeps the fastest run of each (other jobs on the
	// machine only slow a run down), results.json every attempt.
	type key struct {
		n    int
		sync bool
	}
	best := map[key]*report.SynthRun{}
	for a := 1; a <= max(o.repeat, 1); a++ {
		for _, n := range o.workers {
			for _, fsync := range []bool{true, false} {
				zk, err := b.sharedServer(ctx, fsync, b.warmCrawl(ctx, web, truth))
				if err != nil {
					return res, err
				}
				run, err := b.synthRun(ctx, web, truth, zk, n, a, false)
				if err != nil {
					return res, fmt.Errorf("part 1, %d workers, %s, attempt %d: %w", n, syncName(fsync), a, err)
				}
				if o.baselineBin != "" && n == 3 {
					if err := b.baselineRun(ctx, web, truth, zk, a, res); err != nil {
						return res, err
					}
				}
				res.Attempts = append(res.Attempts, *run)
				if k := (key{n, fsync}); best[k] == nil || run.PagesPerS > best[k].PagesPerS {
					best[k] = run
				}
				b.log.Info("part 1 run done", "workers", n, "fsync", fsync, "attempt", a, "pages", run.Pages, "wall_s", round(run.WallS, 2),
					"pages_per_s", round(run.PagesPerS, 0), "zk_writes_per_page", round(run.ZKWritesPerPage, 2),
					"steps_per_multi", round(run.StepsPerMulti, 2), "data_per_url", round(run.DataPerURL, 1),
					"missing", run.Missing, "dups", run.Dups, "load", run.LoadAfter)
			}
		}
	}
	for _, fsync := range []bool{true, false} {
		for _, n := range o.workers {
			res.Runs = append(res.Runs, *best[key{n, fsync}])
		}
	}
	return res, nil
}

// baselineRun runs 3 workers of the --baseline-bin build on zk and keeps
// the fastest run per forceSync in res.Baseline.
func (b *bench) baselineRun(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect, zk *benchZK, attempt int, res *report.Synth) error {
	b.binDir = b.opts.baselineBin
	run, err := b.synthRun(ctx, web, truth, zk, 3, attempt, true)
	b.binDir = ""
	if err != nil {
		return fmt.Errorf("part 1, %s baseline, %s, attempt %d: %w", b.opts.baselineName, syncName(zk.forceSync), attempt, err)
	}
	res.BaselineAttempts = append(res.BaselineAttempts, *run)
	i := slices.IndexFunc(res.Baseline, func(x report.SynthRun) bool { return x.ForceSync == run.ForceSync })
	switch {
	case i < 0:
		res.Baseline = append(res.Baseline, *run)
	case run.PagesPerS > res.Baseline[i].PagesPerS:
		res.Baseline[i] = *run
	}
	b.log.Info("part 1 baseline run done", "build", b.opts.baselineName, "fsync", run.ForceSync, "attempt", attempt, "pages_per_s", round(run.PagesPerS, 0),
		"zk_writes_per_page", round(run.ZKWritesPerPage, 2), "data_per_url", round(run.DataPerURL, 1), "missing", run.Missing, "dups", run.Dups)
	return nil
}

// synthRun crawls the web with n workers on zk. attempt 0 is a warm-up.
// A baseline run uses the previous layout's binaries (b.bin), whose crawl
// this code cannot open as a frontier: it is found done by the queue alone
// (ready items and claims), and part 3b's seen chunks are not read.
func (b *bench) synthRun(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect, zk *benchZK, n, attempt int, baseline bool) (*report.SynthRun, error) {
	tag := fmt.Sprintf("w%d-%s-a%d", n, syncTag(zk.forceSync), attempt)
	if baseline {
		tag = "baseline-" + tag
	}
	run := &report.SynthRun{Workers: n, ForceSync: zk.forceSync, Baseline: baseline, Attempt: attempt, Crawl: fmt.Sprintf("synth-%s-%d", tag, time.Now().Unix())}
	dir := filepath.Join(b.opts.outDir, "synth", tag) // attempt 0: the warm-up
	before, err := zk.footprint(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.seed(ctx, zk.srv.Addr(), run.Crawl, dir, b.synthConfig(), web.Seeds()); err != nil {
		return nil, err
	}
	root := crawlRoot(run.Crawl)
	pending, front, err := synthPending(ctx, zk.client, root, baseline)
	if err != nil {
		return nil, err
	}
	web.Reset()
	// Let the seeder's session close and the machine settle.
	time.Sleep(500 * time.Millisecond)

	run.LoadBefore = loadavg()
	mark, err := zk.mark(ctx)
	if err != nil {
		return nil, err
	}
	f, r, err := b.runCrawl(ctx, zk, run.Crawl, dir, n, mark, pending, b.opts.crawlTimeout)
	if err != nil {
		return nil, err
	}
	defer f.kill()
	run.FirstWorkerReadyS, run.WallS, run.DetectS = r.ready.Seconds(), r.wall.Seconds(), r.detect.Seconds()
	run.ZKWrites, run.ZKCPUS, run.DriverCPUS, run.LoadAfter = r.zkWrites, r.zkCPUS, r.driverCPUS, r.loadAfter
	recordSynthMetrics(run, r.m)
	// Part 3b: wait (bounded) until every backlog batch has retired into
	// the seen chunks, while the workers (the groups' owners) still run.
	if !baseline {
		t1 := time.Now()
		if run.Retired, err = waitRetired(ctx, front, 15*time.Second); err != nil {
			return nil, err
		}
		run.RetireWaitS = time.Since(t1).Seconds()
	}
	lines, err := f.stopAndRead()
	if err != nil {
		return nil, err
	}
	after, err := zk.footprint(ctx)
	if err != nil {
		return nil, err
	}
	run.DataDelta, run.ZnodeDelta = after.DataBytes-before.DataBytes, after.Znodes-before.Znodes
	if !baseline {
		if run.SeenKeys, run.SeenChunks, run.SeenChunkBytes, err = seenChunks(ctx, front); err != nil {
			return nil, err
		}
	}
	b.judgeSynth(run, f, lines, truth)
	return run, nil
}

// synthPending returns how part 1 finds a crawl done, and its frontier:
// frontier.Pending empty, or for a baseline run (nil frontier) the queue's
// ready items and claims alone.
func synthPending(ctx context.Context, c *coord.Client, root string, baseline bool) (func(context.Context) (bool, error), *frontier.Frontier, error) {
	if baseline {
		q, err := coord.OpenQueue(ctx, c, root)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) (bool, error) {
			p, err := q.Pending(ctx)
			return p.Queued == 0 && p.Claimed == 0, err
		}, nil, nil
	}
	front, err := frontier.Open(ctx, c, root)
	if err != nil {
		return nil, nil, err
	}
	return frontierEmpty(front), front, nil
}

// frontierEmpty reports whether front holds nothing: no item ready,
// claimed, in a backlog or in an inbox (frontier.Pending).
func frontierEmpty(front *frontier.Frontier) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		p, err := front.Pending(ctx)
		return p.Empty(), err
	}
}

// recordSynthMetrics fills run's figures from the workers' metrics: claim,
// completion and post latency, requests by op, group commit, links, CPU
// and peak memory.
func recordSynthMetrics(run *report.SynthRun, m workerMetrics) {
	run.ZKOps, run.ZKOpErrors, run.Dropped = m.ops, m.opErrors, m.dropped
	run.LinksQueued, run.LinksDup = m.linksQueued, m.linksDup
	run.WorkerCPUS, run.PeakRSSMB = m.cpuS, m.peakRSSMB
	run.Claims = m.claim.Count
	run.FsyncRounds, run.FsyncS = m.fsync.Count, m.fsync.Sum
	run.ClaimP50Ms, run.ClaimP99Ms, run.ClaimMeanMs = ms(m.claim.quantile(0.5)), ms(m.claim.quantile(0.99)), ms(m.claim.mean())
	run.CompleteP50Ms, run.PostP50Ms = ms(m.complete.quantile(0.5)), ms(m.post.quantile(0.5))
	for _, op := range []string{"queue_claim", "queue_complete", "queue_retry", "queue_fail", "queue_release", "group_step", "backlog_post"} {
		run.FencedSteps += run.ZKOps[op]
	}
	run.Multis = run.ZKOps["multi"]
	if run.Multis > 0 {
		run.StepsPerMulti = run.FencedSteps / run.Multis
	}
}

// judgeSynth checks the crawl logs against the ground truth and derives
// the per-page figures of run.
func (b *bench) judgeSynth(run *report.SynthRun, f *fleet, lines []storage.LogEntry, truth map[string]testenv.WebExpect) {
	c := checkTruth(lines, truth)
	longest, idle := gaps(lines, 250*time.Millisecond)
	run.LongestGapS, run.IdleGapsS = longest.Seconds(), idle.Seconds()
	run.Pages, run.URLs, run.Missing, run.Dups, run.Extra, run.WrongStatus = len(lines), c.urls, c.missing, c.dups, c.extra, c.wrong
	per := map[string]int{}
	for _, l := range lines {
		per[l.Worker]++
	}
	for _, w := range f.workers {
		run.PagesPerWorker = append(run.PagesPerWorker, per[w.ID])
	}
	if c.examples != "" {
		b.log.Warn("part 1: crawl differs from the ground truth", "workers", run.Workers, "fsync", run.ForceSync, "examples", c.examples)
	}
	if run.Pages > 0 {
		p := float64(run.Pages)
		run.PagesPerS = p / run.WallS
		run.WorkerCPUMsPerPage = run.WorkerCPUS * 1000 / p
		run.ZKCPUMsPerPage = run.ZKCPUS * 1000 / p
		run.ZKWritesPerPage = float64(run.ZKWrites) / p
		run.DataPerURL = float64(run.DataDelta) / p
	}
	if run.SeenKeys > 0 {
		run.ChunkBytesPerKy = float64(run.SeenChunkBytes) / float64(run.SeenKeys)
	}
}

// waitRetired polls Backlog.Stats until no group has a live batch (every
// accepted URL moved to the ready window and folded into the seen chunks)
// or timeout; it reports whether that happened.
func waitRetired(ctx context.Context, front *frontier.Frontier, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := front.Backlog().Stats(ctx)
		if err != nil {
			return false, err
		}
		live := 0
		for _, g := range st {
			live += g.Batches
		}
		if live == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// seenChunks sums the keys and chunks (Backlog.Stats, from the groups'
// cursors) and the data bytes (Backlog.SeenBytes: a stat of every seen
// chunk) of a crawl's seen chunks: what this benchmark measures of
// ZooKeeper's own storage for the seen-sets.
func seenChunks(ctx context.Context, front *frontier.Frontier) (keys, chunks int, bytes int64, err error) {
	st, err := front.Backlog().Stats(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, g := range st {
		keys += g.Seen
		chunks += g.SeenChunks
	}
	bytes, err = front.Backlog().SeenBytes(ctx)
	return keys, chunks, bytes, err
}

// correctness compares crawl log lines with the ground truth.
type correctness struct {
	urls, missing, dups, extra, wrong int
	examples                          string
}

// checkTruth counts the differences testenv.DiffTruth reports by kind,
// and the URLs logged more than once.
func checkTruth(lines []storage.LogEntry, truth map[string]testenv.WebExpect) correctness {
	final, count := testenv.FinalStatus(lines)
	diff := testenv.DiffTruth(truth, final)
	c := correctness{urls: len(count)}
	for _, d := range diff {
		switch {
		case strings.HasPrefix(d, "missing "):
			c.missing++
		case strings.HasPrefix(d, "status "):
			c.wrong++
		default: // "unexpected" or "fetched ... must not be"
			c.extra++
		}
	}
	var dups []string
	for u, n := range count {
		if n > 1 {
			c.dups++
			dups = append(dups, fmt.Sprintf("fetched %dx %s", n, u))
		}
	}
	sort.Strings(dups)
	c.examples = testenv.FirstLines(append(diff, dups...), 6)
	return c
}
