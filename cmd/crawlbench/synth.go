package main

// Part 1: the synthetic web, rate limits off, crawled by 1, 2 and 3 workers on each shared
// ZooKeeper, checked against its ground truth; then part 3b, what the crawl left in ZooKeeper.

import (
	"context"
	"fmt"
	"maps"
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
// --repeat rounds (the table keeps the fastest), and 3 workers with recrawl on (--recrawl-ab) and
// with the --baseline-bin build.
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
	warm := func(z *benchZK) (err error) {
		_, err = b.synthRun(ctx, web, truth, z, report.SynthRun{Workers: 3})
		return
	}
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
				// 3 workers on a standalone server: --recrawl-pairs pairs, recrawl on after off in the odd
				// rounds' first pair, each pair's order the other way; the baseline last.
				kinds := []report.SynthRun{{}}
				if n == 3 && !s.Ensemble && o.recrawlAB {
					kinds = nil
					for p := range max(o.recrawlPairs, 1) {
						pair := []report.SynthRun{{Pair: p}, {Recrawl: true, Pair: p}}
						kinds = append(kinds, pair[(a+p+1)%2], pair[(a+p)%2])
					}
				}
				if n == 3 && !s.Ensemble && o.baselineBin != "" {
					kinds = append(kinds, report.SynthRun{Baseline: true})
				}
				for _, run := range kinds {
					run.Workers, run.Server, run.Attempt = n, s, a
					if run, err = b.synthRun(ctx, web, truth, zk, run); err != nil {
						return res, fmt.Errorf("part 1, %s: %w", synthTag(run), err)
					}
					res.Add(run)
				}
			}
		}
	}
	return res, nil
}

// synthTag names a part 1 run in directories, crawl names and errors: [baseline-|recrawl-]w<N>-<server>-a<attempt>[-p<pair>].
func synthTag(r report.SynthRun) string {
	kind := map[bool]string{true: "baseline-"}[r.Baseline] + map[bool]string{true: "recrawl-"}[r.Recrawl]
	pair := map[bool]string{true: fmt.Sprintf("-p%d", r.Pair)}[r.Pair > 0]
	return fmt.Sprintf("%sw%d-%s-a%d%s", kind, r.Workers, serverTag(r.Server), r.Attempt, pair)
}

// synthRun crawls web (ground truth: truth) on zk with run's Workers, Attempt (0: a warm-up) and kind:
// Recrawl adds config recrawl; a Baseline run's crawl (the previous layout, --baseline-bin) is no
// frontier this code opens: it is done when coord.Queue.Pending shows no ready item or claim. Part 3b
// is read of plain runs only (a recrawl's schedule entries keep their batches live).
func (b *bench) synthRun(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect, zk *benchZK, run report.SynthRun) (report.SynthRun, error) {
	run.Server = zk.Server
	tag, cfg := synthTag(run), synthConfig
	run.Crawl = fmt.Sprintf("synth-%s-%d", tag, time.Now().Unix())
	dir := filepath.Join(b.opts.outDir, "synth", tag)
	if run.Recrawl {
		cfg = maps.Clone(synthConfig)
		cfg["recrawl"] = true
	}
	before, err := zk.footprint(ctx)
	if err != nil {
		return run, err
	}
	if run.Baseline {
		b.binDir = b.opts.baselineBin
		defer func() { b.binDir = "" }()
	}
	if _, err := b.seed(ctx, zk.addr, run.Crawl, dir, cfg, web.Seeds(), time.Minute); err != nil {
		return run, err
	}
	var pending func(context.Context) (bool, error) // nil: frontier.Pending; below: a layout 1 baseline (no backlogs)
	if _, err := frontier.Open(ctx, zk.client, crawlRoot(run.Crawl)); run.Baseline && err != nil {
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
	f, r, err := b.runCrawl(ctx, zk, run.Crawl, dir, run.Workers, mark, pending)
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
	run.Multis = run.ZKOps["multi"]
	run.StepsPerMulti = run.FencedSteps / max(run.Multis, 1)
	if !run.Baseline && !run.Recrawl { // part 3b: wait while the workers, the groups' owners, still run
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
	b.log.Info("part 1 run done", "run", tag, "zk", zk.Label(),
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
		run.ZKWritesPerPage, run.DataPerURL = float64(run.ZKWrites)/p, float64(run.DataDelta)/p
	}
	run.ChunkBytesPerKy = float64(run.SeenChunkBytes) / float64(max(run.SeenKeys, 1))
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
