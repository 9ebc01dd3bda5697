package main

// Part 1: the synthetic web, rate limits off, crawled by 1, 2 and 3 workers on each shared
// ZooKeeper, checked against its ground truth; then part 3b, what the crawl left in ZooKeeper.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Part 1's synthetic web beside --hosts and --pages-per-host; its crawl's scope and per_host_max_in_flight.
const (
	synthLinks, synthCross    = 8, 0.2
	synthScope, synthInFlight = "any", 8
)

// synthConfig is the crawl config of part 1.
var synthConfig = map[string]any{
	"per_host_rate_per_s":    0,
	"per_host_max_in_flight": synthInFlight,
	"worker_concurrency":     64,
	"allow_private_networks": true,
	"obey_robots":            true,
	"max_depth":              -1,
	"scope":                  synthScope,
}

// runSynth runs part 1: each worker count on the standalone servers, the most on the ensemble,
// --repeat rounds (the table keeps the fastest), and the --baseline-bin build's 3 workers.
func (b *bench) runSynth(ctx context.Context) (*report.Synth, error) {
	o := b.opts
	web, err := testenv.StartWeb(ctx, testenv.WebConfig{Seed: 1, Hosts: o.hosts, PagesPerHost: o.pagesPerHost,
		LinksPerPage: synthLinks, CrossHostShare: synthCross, Logger: b.quiet})
	if err != nil {
		return nil, err
	}
	defer web.Close()
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, Scope: synthScope, ObeyRobots: true})
	if err != nil {
		return nil, err
	}
	res := &report.Synth{Hosts: o.hosts, PagesPerHost: o.pagesPerHost, LinksPerPage: synthLinks, CrossHostShare: synthCross,
		Scope: synthScope, MaxInFlight: synthInFlight, BaselineName: o.baselineName}
	for _, e := range truth {
		if e.Status > 0 {
			res.Expected++
		}
	}
	warm := func(z *benchZK) error { _, err := b.synthRun(ctx, web, truth, z, 3, 0, false); return err }
	for a := 1; a <= max(o.repeat, 1); a++ {
		for _, n := range o.workers {
			for _, s := range b.servers {
				if s.Ensemble && n != slices.Max(o.workers) {
					continue // the quorum runs the most workers only: make bench stays short
				}
				zk, err := b.sharedServer(ctx, s, warm)
				if err != nil {
					return res, err
				}
				run, err := b.synthRun(ctx, web, truth, zk, n, a, false)
				if err != nil {
					return res, fmt.Errorf("part 1, %d workers, %s, attempt %d: %w", n, s.Label(), a, err)
				}
				res.Attempts, res.Runs = append(res.Attempts, run), keepFastest(res.Runs, run)
				if o.baselineBin != "" && n == 3 && !s.Ensemble {
					b.binDir = o.baselineBin
					run, err = b.synthRun(ctx, web, truth, zk, 3, a, true)
					b.binDir = ""
					if err != nil {
						return res, fmt.Errorf("part 1, %s baseline, %s, attempt %d: %w", o.baselineName, s.Label(), a, err)
					}
					res.BaselineAttempts, res.Baseline = append(res.BaselineAttempts, run), keepFastest(res.Baseline, run)
				}
			}
		}
	}
	return res, nil
}

// keepFastest returns runs with run in place of its worker count and server's slower run, or added.
func keepFastest(runs []report.SynthRun, run report.SynthRun) []report.SynthRun {
	i := slices.IndexFunc(runs, func(x report.SynthRun) bool { return x.Workers == run.Workers && x.Server == run.Server })
	if i < 0 {
		return append(runs, run)
	}
	if run.PagesPerS > runs[i].PagesPerS {
		runs[i] = run
	}
	return runs
}

// synthRun crawls web (ground truth: truth) with n workers on zk; attempt 0 is a warm-up. A
// baseline run's crawl (the previous layout) is no frontier this code opens: it is done when
// coord.Queue.Pending shows no ready item or claim, and part 3b is not read.
func (b *bench) synthRun(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect, zk *benchZK, n, attempt int, baseline bool) (report.SynthRun, error) {
	tag := fmt.Sprintf("w%d-%s-a%d", n, serverTag(zk.Server), attempt)
	if baseline {
		tag = "baseline-" + tag
	}
	run := report.SynthRun{Workers: n, Server: zk.Server, Baseline: baseline, Attempt: attempt, Crawl: fmt.Sprintf("synth-%s-%d", tag, time.Now().Unix())}
	dir := filepath.Join(b.opts.outDir, "synth", tag)
	before, err := zk.footprint(ctx)
	if err != nil {
		return run, err
	}
	if _, err := b.seed(ctx, zk.addr, run.Crawl, dir, synthConfig, web.Seeds(), time.Minute); err != nil {
		return run, err
	}
	var pending func(context.Context) (bool, error) // nil: frontier.Pending
	if baseline {
		q, err := coord.OpenQueue(ctx, zk.client, crawlRoot(run.Crawl))
		if err != nil {
			return run, err
		}
		pending = func(ctx context.Context) (bool, error) {
			p, err := q.Pending(ctx)
			return p.Queued == 0 && p.Claimed == 0, err
		}
	}
	web.Reset()
	time.Sleep(500 * time.Millisecond) // let the seeder's session close and the machine settle
	mark, err := zk.mark(ctx)
	if err != nil {
		return run, err
	}
	f, r, err := b.runCrawl(ctx, zk, run.Crawl, dir, n, mark, pending)
	if err != nil {
		return run, err
	}
	defer f.kill()
	run.WallS, run.CrawlFigures = r.wall.Seconds(), r.CrawlFigures
	run.Dropped, run.PeakRSSMB = r.m.dropped, r.m.peakRSSMB
	run.LinksQueued, run.LinksDup = r.m.links["queued"], r.m.links["duplicate"]
	run.ClaimMeanMs = ms(r.m.claim.Sum / r.m.claim.Count)
	run.CompleteP50Ms, run.PostP50Ms = ms(r.m.complete.Quantile(0.5)), ms(r.m.post.Quantile(0.5))
	for i, h := range r.m.stages {
		run.Stages = append(run.Stages, report.Stage{Name: stageNames[i], P50Ms: ms(h.Quantile(0.5)), P90Ms: ms(h.Quantile(0.9)), MeanMs: ms(h.Sum / h.Count)})
	}
	for _, op := range []string{"queue_claim", "queue_complete", "queue_retry", "queue_fail", "queue_release", "group_step", "backlog_post"} {
		run.FencedSteps += run.ZKOps[op] // group commit: the fenced steps over the multis that carried them
	}
	if run.Multis = run.ZKOps["multi"]; run.Multis > 0 {
		run.StepsPerMulti = run.FencedSteps / run.Multis
	}
	if !baseline { // part 3b: wait while the workers, the groups' owners, still run
		if err := seenChunks(ctx, r.front, &run); err != nil {
			return run, err
		}
	}
	lines, err := f.stopAndRead()
	if err != nil {
		return run, err
	}
	after, err := zk.footprint(ctx)
	if err != nil {
		return run, err
	}
	run.DataDelta, run.ZnodeDelta = after.DataBytes-before.DataBytes, after.Znodes-before.Znodes
	b.judgeSynth(&run, f, lines, truth)
	b.log.Info("part 1 run done", "workers", n, "zk", zk.Label(), "attempt", attempt, "baseline", baseline,
		"pages", run.Pages, "pages_per_s", int(run.PagesPerS), "missing", run.Missing, "dups", run.Dups)
	return run, nil
}

// judgeSynth counts the crawl logs' differences from the ground truth (testenv.DiffTruth, by
// kind; URLs logged more than once) and derives run's per-page figures.
func (b *bench) judgeSynth(run *report.SynthRun, f *fleet, lines []storage.LogEntry, truth map[string]testenv.WebExpect) {
	final, count := testenv.FinalStatus(lines)
	diff := testenv.DiffTruth(truth, final)
	run.Pages, run.URLs = len(lines), len(count)
	for _, d := range diff {
		switch {
		case strings.HasPrefix(d, "missing "):
			run.Missing++
		case strings.HasPrefix(d, "status "):
			run.WrongStatus++
		default: // "unexpected" or "fetched ... must not be"
			run.Extra++
		}
	}
	for u, n := range count {
		if n > 1 {
			run.Dups++
			diff = append(diff, fmt.Sprintf("fetched %dx %s", n, u))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		b.log.Warn("part 1: crawl differs from the ground truth", "workers", run.Workers, "zk", run.Label(), "examples", testenv.FirstLines(diff, 6))
	}
	per := map[string]int{}
	for _, l := range lines {
		per[l.Worker]++
	}
	for _, w := range f.workers {
		run.PagesPerWorker = append(run.PagesPerWorker, per[w.ID])
	}
	if p := float64(run.Pages); p > 0 {
		run.PagesPerS = p / run.WallS
		run.SlotMs = float64(run.Workers*synthConfig["worker_concurrency"].(int)) * 1000 / run.PagesPerS
		if st := run.Stages; len(st) == len(stageNames) { // claim 1, fetch 4, total 10
			run.BeyondFetchMs, run.Held = st[10].P50Ms-st[4].P50Ms, run.PagesPerS*(st[1].MeanMs+st[10].MeanMs)/1000/float64(run.Workers)
		}
		run.WorkerCPUMsPerPage, run.ZKCPUMsPerPage = run.WorkerCPUS*1000/p, run.ZKCPUS*1000/p
		run.ZKWritesPerPage = float64(run.ZKWrites) / p
		run.DataPerURL = float64(run.DataDelta) / p
	}
	if run.SeenKeys > 0 {
		run.ChunkBytesPerKy = float64(run.SeenChunkBytes) / float64(run.SeenKeys)
	}
}

// seenChunks polls Backlog.Stats (up to 15 s) until no group has a live batch, records whether that
// happened, and fills in the seen-set's keys, chunks and bytes (Backlog.SeenBytes).
func seenChunks(ctx context.Context, front *frontier.Frontier, run *report.SynthRun) error {
	if _, err := poll(ctx, 200*time.Millisecond, 15*time.Second, func() (bool, error) {
		st, err := front.Backlog().Stats(ctx)
		run.Retired, run.SeenKeys, run.SeenChunks = err == nil, 0, 0
		for _, g := range st {
			run.Retired = run.Retired && g.Batches == 0
			run.SeenKeys += g.Seen
			run.SeenChunks += g.SeenChunks
		}
		return run.Retired, err
	}); err != nil {
		return err
	}
	n, err := front.Backlog().SeenBytes(ctx)
	run.SeenChunkBytes = n
	return err
}
