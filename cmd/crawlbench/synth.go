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
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// synthResult is part 1.
type synthResult struct {
	Hosts, PagesPerHost, LinksPerPage int
	CrossHostShare                    float64
	Scope                             string
	MaxInFlight                       int
	Expected                          int        // ground-truth URLs a correct crawl fetches
	Runs                              []synthRun // the fastest attempt of each worker count and forceSync
	Attempts                          []synthRun // every run, in order
	// The previous frontier layout's build (--baseline-bin), 3 workers,
	// run in the same rounds: the fastest per forceSync, and every attempt.
	BaselineName               string
	Baseline, BaselineAttempts []synthRun
}

// synthRun is one crawl with Workers processes.
type synthRun struct {
	Workers     int
	ForceSync   bool
	Baseline    bool // run with --baseline-bin
	Attempt     int
	Crawl       string
	Pages       int     // crawl log lines (fetch attempts)
	URLs        int     // distinct URLs logged
	Missing     int     // ground-truth URLs never logged
	Dups        int     // URLs logged more than once
	Extra       int     // URLs logged that a correct crawl does not fetch
	WrongStatus int     // URLs whose last status differs from the truth
	WallS       float64 // first worker start to the last crawl log line (the crawl then found done)
	PagesPerS   float64
	// CPU seconds over the run: the workers (sum), the ZooKeeper JVM, and
	// this driver (which serves the synthetic web and polls).
	WorkerCPUS, ZKCPUS, DriverCPUS float64
	WorkerCPUMsPerPage             float64
	ZKCPUMsPerPage                 float64
	ZKWrites                       int64 // zxid delta over the run
	ZKWritesPerPage                float64
	// Group commit, from the workers' metrics: fenced steps (claims,
	// completions, group steps, posts) and the ZooKeeper multis that
	// carried them (coord's Client.CommitStats is not exported by the
	// worker, so this is the ratio of the two counters).
	FencedSteps, Multis      float64
	StepsPerMulti            float64
	Claims                   float64 // queue_claim observations, all workers
	ClaimP50Ms, ClaimP99Ms   float64
	ClaimMeanMs              float64
	CompleteP50Ms, PostP50Ms float64
	LinksQueued, LinksDup    float64
	Dropped                  map[string]float64 // zkcrawl_links_dropped_total by reason
	ZKOps                    map[string]float64 // requests and queue steps by op, all workers
	ZKOpErrors               map[string]float64 // of which returned an error
	PeakRSSMB                []float64          // per worker, VmHWM
	PagesPerWorker           []int
	LoadBefore, LoadAfter    string
	FirstWorkerReadyS        float64 // until every worker served metrics
	DetectS                  float64 // the last crawl log write to done confirmed
	LongestGapS              float64 // longest pause between two crawl log lines
	IdleGapsS                float64 // summed pauses over 250 ms: nothing fetched at all
	// What the finished crawl left in ZooKeeper (part 3b), once its
	// batches retired: mntr data size and znode count delta from before
	// seeding to after the workers stopped, the seen chunks' data and keys.
	Retired                     bool // every batch retired within the wait
	RetireWaitS                 float64
	DataDelta, ZnodeDelta       int64
	SeenKeys, SeenChunks        int
	SeenChunkBytes              int64
	DataPerURL, ChunkBytesPerKy float64
}

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

func (b *bench) runSynth(ctx context.Context) (*synthResult, error) {
	o := b.opts
	web, truth, err := b.startSynthWeb(ctx)
	if err != nil {
		return nil, err
	}
	defer web.Close()
	res := &synthResult{Hosts: o.hosts, PagesPerHost: o.pagesPerHost, LinksPerPage: o.links,
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
	best := map[key]*synthRun{}
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
func (b *bench) baselineRun(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect, zk *benchZK, attempt int, res *synthResult) error {
	b.binDir = b.opts.baselineBin
	run, err := b.synthRun(ctx, web, truth, zk, 3, attempt, true)
	b.binDir = ""
	if err != nil {
		return fmt.Errorf("part 1, %s baseline, %s, attempt %d: %w", b.opts.baselineName, syncName(zk.forceSync), attempt, err)
	}
	res.BaselineAttempts = append(res.BaselineAttempts, *run)
	i := slices.IndexFunc(res.Baseline, func(x synthRun) bool { return x.ForceSync == run.ForceSync })
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
func (b *bench) synthRun(ctx context.Context, web *testenv.Web, truth map[string]testenv.WebExpect, zk *benchZK, n, attempt int, baseline bool) (*synthRun, error) {
	zkAddr, client := zk.srv.Addr(), zk.client
	tag := fmt.Sprintf("w%d-%s-a%d", n, map[bool]string{true: "fsync", false: "nosync"}[zk.forceSync], attempt)
	if baseline {
		tag = "baseline-" + tag
	}
	run := &synthRun{Workers: n, ForceSync: zk.forceSync, Baseline: baseline, Attempt: attempt, Crawl: fmt.Sprintf("synth-%s-%d", tag, time.Now().Unix())}
	dir := filepath.Join(b.outDir, "synth", tag) // attempt 0: the warm-up
	before, err := zk.footprint(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.seed(ctx, zkAddr, run.Crawl, dir, b.synthConfig(), web.Seeds()); err != nil {
		return nil, err
	}
	root := "/zkcrawl/" + run.Crawl
	var front *frontier.Frontier
	pending := func(ctx context.Context) (bool, error) {
		p, err := front.Pending(ctx)
		return p.Empty(), err
	}
	if baseline {
		q, err := coord.OpenQueue(ctx, client, root)
		if err != nil {
			return nil, err
		}
		pending = func(ctx context.Context) (bool, error) {
			p, err := q.Pending(ctx)
			return p.Queued == 0 && p.Claimed == 0, err
		}
	} else if front, err = frontier.Open(ctx, client, root); err != nil {
		return nil, err
	}
	web.Reset()
	// Let the seeder's session close and the machine settle.
	time.Sleep(500 * time.Millisecond)

	run.LoadBefore = loadavg()
	s0, err := readSrvr(ctx, zkAddr)
	if err != nil {
		return nil, err
	}
	z0, err := readProc(zk.pid)
	if err != nil {
		return nil, err
	}
	self0 := selfCPU()
	t0 := time.Now()
	var workers []*workerProc
	defer func() {
		for _, w := range workers {
			_ = w.Kill()
		}
	}()
	for i := 1; i <= n; i++ {
		w, err := b.startWorker(ctx, zkAddr, run.Crawl, dir, fmt.Sprintf("w%d", i))
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}
	for _, w := range workers {
		if err := w.awaitMetrics(ctx); err != nil {
			return nil, err
		}
	}
	run.FirstWorkerReadyS = time.Since(t0).Seconds()
	done, err := waitDone(ctx, pending, workers, b.opts.crawlTimeout)
	if err != nil {
		return nil, err
	}
	run.WallS = lastWrite(workers).Sub(t0).Seconds()
	run.DetectS = time.Since(done).Seconds()

	// Measure before stopping anything: metrics, /proc, zxid.
	var claim, complete, post hist
	for _, w := range workers {
		fams, err := scrape(ctx, w.Metrics)
		if err != nil {
			return nil, err
		}
		if claim, err = claim.merge(histOf(fams, "zkcrawl_zk_op_duration_seconds", "op", "queue_claim")); err != nil {
			return nil, err
		}
		complete, _ = complete.merge(histOf(fams, "zkcrawl_zk_op_duration_seconds", "op", "queue_complete"))
		post, _ = post.merge(histOf(fams, "zkcrawl_zk_op_duration_seconds", "op", "backlog_post"))
		run.ZKOps = addCounts(run.ZKOps, opCounts(fams))
		run.ZKOpErrors = addCounts(run.ZKOpErrors, labelCounts(fams, "zkcrawl_zk_op_errors_total", "op"))
		run.Dropped = addCounts(run.Dropped, labelCounts(fams, "zkcrawl_links_dropped_total", "reason"))
		run.LinksQueued += counterOf(fams, "zkcrawl_links_total", map[string]string{"result": "queued"})
		run.LinksDup += counterOf(fams, "zkcrawl_links_total", map[string]string{"result": "duplicate"})
		cpu, err := w.CPUTime()
		if err != nil {
			return nil, err
		}
		run.WorkerCPUS += cpu.Seconds()
		peak, err := w.RSSPeakKB()
		if err != nil {
			return nil, err
		}
		run.PeakRSSMB = append(run.PeakRSSMB, float64(peak)/1024)
	}
	z1, err := readProc(zk.pid)
	if err != nil {
		return nil, err
	}
	s1, err := readSrvr(ctx, zkAddr)
	if err != nil {
		return nil, err
	}
	run.DriverCPUS = (selfCPU() - self0).Seconds()
	run.LoadAfter = loadavg()
	run.ZKCPUS = (z1.CPU - z0.CPU).Seconds()
	run.ZKWrites = s1.Zxid - s0.Zxid
	run.Claims = claim.Count
	// A histogram without observations (the baseline posts nothing) has
	// no quantile: 0, since JSON has no NaN.
	run.ClaimP50Ms = finite(claim.quantile(0.5) * 1000)
	run.ClaimP99Ms = finite(claim.quantile(0.99) * 1000)
	run.ClaimMeanMs = finite(claim.mean() * 1000)
	run.CompleteP50Ms = finite(complete.quantile(0.5) * 1000)
	run.PostP50Ms = finite(post.quantile(0.5) * 1000)
	for _, op := range []string{"queue_claim", "queue_complete", "queue_retry", "queue_fail", "queue_release", "group_step", "backlog_post"} {
		run.FencedSteps += run.ZKOps[op]
	}
	run.Multis = run.ZKOps["multi"]
	if run.Multis > 0 {
		run.StepsPerMulti = run.FencedSteps / run.Multis
	}

	// Part 3b: wait (bounded) until every backlog batch has retired into
	// the seen chunks, while the workers (the groups' owners) still run.
	if !baseline {
		t1 := time.Now()
		if run.Retired, err = waitRetired(ctx, front, 15*time.Second); err != nil {
			return nil, err
		}
		run.RetireWaitS = time.Since(t1).Seconds()
	}

	lines, err := stopAll(workers, dir)
	if err != nil {
		return nil, err
	}
	after, err := zk.footprint(ctx)
	if err != nil {
		return nil, err
	}
	run.DataDelta, run.ZnodeDelta = after.DataBytes-before.DataBytes, after.Znodes-before.Znodes
	if !baseline {
		if run.SeenKeys, run.SeenChunks, run.SeenChunkBytes, err = seenChunks(ctx, client, front); err != nil {
			return nil, err
		}
	}

	c := checkTruth(lines, truth)
	longest, idle := gaps(lines, 250*time.Millisecond)
	run.LongestGapS, run.IdleGapsS = longest.Seconds(), idle.Seconds()
	run.Pages, run.URLs, run.Missing, run.Dups, run.Extra, run.WrongStatus = len(lines), c.urls, c.missing, c.dups, c.extra, c.wrong
	per := map[string]int{}
	for _, l := range lines {
		per[l.Worker]++
	}
	for _, w := range workers {
		run.PagesPerWorker = append(run.PagesPerWorker, per[w.ID])
	}
	if c.examples != "" {
		b.log.Warn("part 1: crawl differs from the ground truth", "workers", n, "fsync", zk.forceSync, "examples", c.examples)
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
	return run, nil
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

// seenChunks sums the keys (Backlog.Stats) and the data bytes (a stat of
// every R/backlog/<g>/s-N) of a crawl's seen chunks.
func seenChunks(ctx context.Context, c *coord.Client, front *frontier.Frontier) (keys, chunks int, bytes int64, err error) {
	st, err := front.Backlog().Stats(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	root := front.Queue().Root()
	conn := c.Conn()
	for _, g := range st {
		keys += g.Seen
		dir := path.Join(root, "backlog", g.Name)
		names, _, err := conn.Children(dir)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("list %s: %w", dir, err)
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "s-") {
				continue
			}
			_, zs, err := conn.Exists(dir + "/" + n)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("stat %s/%s: %w", dir, n, err)
			}
			if zs != nil {
				chunks++
				bytes += int64(zs.DataLength)
			}
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
	}
	return keys, chunks, bytes, nil
}

// waitDone returns the moment the crawl was first seen done: empty
// reports nothing left (frontier.Pending: nothing ready, claimed, in the
// backlog or in an inbox), confirmed by a second reading 50 ms later with
// no crawl log growing in between. It reads every shard's and group's
// counts, so it is only asked once the crawl logs have stopped growing for
// 100 ms. Errors: every worker exited, ctx ended, or timeout.
func waitDone(ctx context.Context, empty func(context.Context) (bool, error), workers []*workerProc, timeout time.Duration) (time.Time, error) {
	var logs []string
	for _, w := range workers {
		logs = append(logs, w.CrawlLog())
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last []int64
	stable := 0
	var firstZero time.Time
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("crawl not done after %v", timeout)
		}
		alive := 0
		for _, w := range workers {
			if !w.Exited() {
				alive++
			}
		}
		if alive == 0 {
			return time.Time{}, errors.New("every worker exited before the crawl was done:\n" + workers[0].LogTail(20))
		}
		sizes := fileSizes(logs)
		if equalInts(sizes, last) && sum(sizes) > 0 {
			stable++
		} else {
			stable, firstZero = 0, time.Time{}
		}
		last = sizes
		if stable < 2 {
			continue
		}
		now := time.Now()
		done, err := empty(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if !done {
			firstZero = time.Time{}
			continue
		}
		if firstZero.IsZero() {
			firstZero = now
			continue
		}
		return firstZero, nil
	}
}

// lastWrite returns the latest modification time of the workers' crawl
// logs: when the last page was logged. Its item was completed one
// ZooKeeper round trip later.
func lastWrite(workers []*workerProc) time.Time {
	var t time.Time
	for _, w := range workers {
		if t1 := fileModTime(w.CrawlLog()); t1.After(t) {
			t = t1
		}
	}
	return t
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sum(a []int64) int64 {
	var s int64
	for _, v := range a {
		s += v
	}
	return s
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
