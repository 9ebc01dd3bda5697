package report

// The one results table (GitHub markdown): the benchmark targets first in
// each part, then the figures that explain them.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// table is the results table being written, a row at a time.
type table struct{ strings.Builder }

// row writes one row: the part (its full title on its first row), what is
// measured, the result, the target and the verdict.
func (t *table) row(part, measure, result, target, verdict string) {
	fmt.Fprintf(t, "| %s | %s | %s | %s | %s |\n", part, measure, result, target, verdict)
}

// Table renders the results table in GitHub markdown: a row per figure,
// the parts in the report's order (1, 2, 3a, 3b, 3c, 4, 5, 6), parts that
// did not run left out.
func (r *Results) Table() string {
	var t table
	t.WriteString("| part | measure | result: forceSync=yes (forceSync=no) | target | met |\n|---|---|---|---|---|\n")
	if s := r.Synth; s != nil && len(s.Runs) > 0 {
		t.synthSpeed(s)
		t.synthCost(s)
		t.synthCorrectness(s)
	}
	if rr := r.Real; rr != nil && len(rr.Runs) > 0 {
		t.real(rr)
	}
	if q := r.Queued; q != nil {
		t.queued(q)
	}
	if s := r.Synth; s != nil && len(s.Runs) > 0 {
		t.fetched(s)
	}
	if g := r.Big; g != nil {
		t.big(g)
	}
	if tr := r.Trap; tr != nil {
		t.trap(tr)
	}
	if c := r.Ceiling; c != nil && len(c.Runs) > 0 {
		t.ceiling(c)
	}
	if k := r.Takeover; k != nil {
		t.takeover(k)
	}
	return t.String()
}

// joinRuns formats one figure of the part 1 runs of one forceSync
// setting, "a / b / c" by worker count.
func joinRuns(runs []SynthRun, fsync bool, f func(r SynthRun) string) string {
	var parts []string
	for _, r := range runs {
		if r.ForceSync == fsync {
			parts = append(parts, f(r))
		}
	}
	return strings.Join(parts, " / ")
}

// bothRuns formats one figure of the part 1 runs, forceSync=yes then
// (forceSync=no ...).
func bothRuns(runs []SynthRun, f func(r SynthRun) string) string {
	return bothSyncs(joinRuns(runs, true, f), joinRuns(runs, false, f))
}

// bothSyncs formats a figure as "yes-figure (no: no-figure)".
func bothSyncs(yes, no string) string {
	if no == "" {
		return yes
	}
	return yes + " (forceSync=no: " + no + ")"
}

// pagesPerS3 returns the pages/s of the 3-worker run of a forceSync
// setting, 0 when there is none.
func pagesPerS3(runs []SynthRun, fsync bool) float64 {
	var v float64
	for _, x := range runs {
		if x.ForceSync == fsync && x.Workers == 3 {
			v = x.PagesPerS
		}
	}
	return v
}

// baselineRun returns the baseline run of a forceSync setting, or nil.
func baselineRun(runs []SynthRun, fsync bool) *SynthRun {
	for i := range runs {
		if runs[i].ForceSync == fsync {
			return &runs[i]
		}
	}
	return nil
}

// synthSpeed writes part 1's worker counts and pages/s, judged against
// the baseline build run in the same rounds (--baseline-bin); without one
// the pages/s are shown but not judged.
func (t *table) synthSpeed(s *Synth) {
	t.row(fmt.Sprintf("1 synthetic web (%d hosts × %d pages, scope %s)", s.Hosts, s.PagesPerHost, s.Scope), "workers",
		joinRuns(s.Runs, true, func(x SynthRun) string { return fmt.Sprint(x.Workers) }), "", "")
	pages := bothRuns(s.Runs, func(x SynthRun) string { return f0(x.PagesPerS) })
	base := baselineRun(s.Baseline, true)
	if base == nil {
		t.row("1", "pages/s", pages, "3 workers no slower than the baseline build in the same run (forceSync=yes)",
			"not judged (no --baseline-bin)")
		return
	}
	t.row("1", "pages/s", pages,
		fmt.Sprintf("3 workers no slower than %s in the same run (forceSync=yes)", s.BaselineName), met(pagesPerS3(s.Runs, true) >= base.PagesPerS))
	no, wno := "", ""
	if x := baselineRun(s.Baseline, false); x != nil {
		no, wno = f0(x.PagesPerS), f2(x.ZKWritesPerPage)
	}
	t.row("1", fmt.Sprintf("%s build, 3 workers, same rounds: pages/s", s.BaselineName), bothSyncs(f0(base.PagesPerS), no), "", "")
	t.row("1", fmt.Sprintf("%s build, 3 workers: ZooKeeper writes per page; CPU per page, ms: workers + ZooKeeper; URLs of expected, missing, duplicate", s.BaselineName),
		bothSyncs(f2(base.ZKWritesPerPage), wno)+fmt.Sprintf("; %s + %s; %s of %s, %d, %d", f2(base.WorkerCPUMsPerPage), f2(base.ZKCPUMsPerPage),
			f0(float64(base.URLs)), f0(float64(s.Expected)), base.Missing, base.Dups), "", "")
}

// synthCost writes part 1's ZooKeeper writes, group commit, CPU, claim
// latency and memory.
func (t *table) synthCost(s *Synth) {
	worst, peak := 0.0, 0.0
	for _, x := range s.Runs {
		worst = math.Max(worst, x.ZKWritesPerPage)
		peak = math.Max(peak, maxOf(x.PeakRSSMB))
	}
	t.row("1", "ZooKeeper writes per page (zxid delta / pages)", bothRuns(s.Runs, func(x SynthRun) string { return f2(x.ZKWritesPerPage) }), "≤ 1.0", met(worst <= 1.0))
	t.row("1", "group commit: fenced steps per ZooKeeper multi (worker metrics)", bothRuns(s.Runs, func(x SynthRun) string { return f2(x.StepsPerMulti) }), "", "")
	t.row("1", "group fsync of crawl.log + WARC before completing: pages per fsync round · fsync ms per page",
		bothRuns(s.Runs, func(x SynthRun) string { return fsyncCell(float64(x.Pages), x.FsyncRounds, x.FsyncS) }), "", "")
	t.row("1", "CPU per page, ms: workers + ZooKeeper", bothRuns(s.Runs, func(x SynthRun) string { return f2(x.WorkerCPUMsPerPage) + " + " + f2(x.ZKCPUMsPerPage) }), "", "")
	t.row("1", "claim latency p50 · p99, ms", bothRuns(s.Runs, func(x SynthRun) string { return f1(x.ClaimP50Ms) + " · " + f1(x.ClaimP99Ms) }), "", "")
	t.row("1", "peak RSS per worker, MB (largest VmHWM, any run)", f0(peak), "< 150", met(peak < 150))
}

// synthCorrectness writes the outcomes of every part 1 run against the
// ground truth, equal outcomes counted together.
func (t *table) synthCorrectness(s *Synth) {
	ok := true
	var outcomes []string
	seen := map[string]int{}
	for _, x := range s.Attempts {
		ok = ok && x.Missing == 0 && x.Dups == 0 && x.Extra == 0 && x.WrongStatus == 0 && x.URLs == s.Expected
		o := fmt.Sprintf("%s of %s; %d, %d, %d, %d", f0(float64(x.URLs)), f0(float64(s.Expected)), x.Missing, x.Dups, x.Extra, x.WrongStatus)
		if seen[o] == 0 {
			outcomes = append(outcomes, o)
		}
		seen[o]++
	}
	for i, o := range outcomes {
		outcomes[i] = fmt.Sprintf("%d runs: %s", seen[o], o)
	}
	t.row("1", "correctness (every run): URLs fetched of expected; missing, duplicate, extra, wrong status",
		strings.Join(outcomes, " / "), "every page exactly once", met(ok))
}

// realRuns returns part 2's runs on the ZooKeeper of one forceSync
// setting, in round order: the loopback rounds, or (latency) the runs
// through the delaying proxy.
func realRuns(runs []RealRun, latency, fsync bool) []*RealRun {
	var of []*RealRun
	for i := range runs {
		if x := &runs[i]; (x.LatencyMS > 0) == latency && x.ForceSync == fsync {
			of = append(of, x)
		}
	}
	return of
}

// loopback returns part 2's loopback runs of one forceSync setting, in
// round order.
func loopback(runs []RealRun, fsync bool) []*RealRun { return realRuns(runs, false, fsync) }

// realPick returns the run of median ratio of runs (the lower middle of
// an even count), nil for none.
func realPick(runs []*RealRun) *RealRun {
	if len(runs) == 0 {
		return nil
	}
	of := slices.Clone(runs)
	slices.SortStableFunc(of, func(a, b *RealRun) int { return cmp.Compare(a.Ratio, b.Ratio) })
	return of[(len(of)-1)/2]
}

// sameRuns joins the runs' outcomes with " / ", or gives "N runs: x" when
// all are x.
func sameRuns(outcomes []string) string {
	for _, o := range outcomes {
		if o != outcomes[0] {
			return strings.Join(outcomes, " / ")
		}
	}
	if len(outcomes) < 2 {
		return strings.Join(outcomes, "")
	}
	return fmt.Sprintf("%d runs: %s", len(outcomes), outcomes[0])
}

// realRounds counts the loopback rounds of part 2.
func realRounds(runs []RealRun) int { return len(loopback(runs, true)) }

// realRatios lists the loopback ratios of one forceSync setting in round
// order, as " (a, b, c)"; "" for a single round.
func realRatios(runs []RealRun, fsync bool) string {
	var r []string
	for _, x := range loopback(runs, fsync) {
		r = append(r, f2(x.Ratio))
	}
	if len(r) < 2 {
		return ""
	}
	return " (" + strings.Join(r, ", ") + ")"
}

// realFig formats a figure of run, "" when run is nil.
func realFig(run *RealRun, f func(*RealRun) string) string {
	if run == nil {
		return ""
	}
	return f(run)
}

// realBoth formats one figure of part 2's forceSync=yes run and, when
// there is one, its forceSync=no run: "yes-figure (forceSync=no: ...)".
func realBoth(yes, no *RealRun, f func(*RealRun) string) string {
	return bothSyncs(f(yes), realFig(no, f))
}

// real writes part 2: wget against zkcrawl on loopback, then with added
// latency.
func (t *table) real(rr *Real) {
	if yes, no := realPick(loopback(rr.Runs, true)), realPick(loopback(rr.Runs, false)); yes != nil {
		p := fmt.Sprintf("2 PostgreSQL 15 manual via nginx, 3 workers (per_host_max_in_flight %d)", rr.MaxInFlight)
		t.row(p, "loopback: wall time wget -r --warc-file / zkcrawl (seed to last page), s",
			bothSyncs(f2(yes.WgetS)+" / "+f2(yes.ZKS), realFig(no, func(x *RealRun) string { return f2(x.ZKS) })), "", "")
		t.row("2", fmt.Sprintf("loopback: ratio zkcrawl / wget, median of %d round(s) (every round)", realRounds(rr.Runs)),
			realBoth(yes, no, func(x *RealRun) string { return f2(x.Ratio) + realRatios(rr.Runs, x.ForceSync) }),
			"≤ 1.0, same run", met(yes.Ratio <= 1))
		t.row("2", "ZooKeeper writes per crawl log line (zxid delta, seeding included)",
			realBoth(yes, no, func(x *RealRun) string { return f2(x.WritesPerLine) }), "≤ 1.25", met(yes.WritesPerLine <= 1.25))
		t.row("2", "group fsync of crawl.log + WARC before completing: pages per fsync round · fsync ms per page",
			realBoth(yes, no, func(x *RealRun) string { return fsyncCell(float64(x.ZKLines), x.FsyncRounds, x.FsyncS) }), "", "")
		all := true
		var res []string
		for _, x := range rr.Runs {
			all = all && x.Missing == 0 && x.Dups == 0
			res = append(res, fmt.Sprintf("%s of %s (+%d not in wget's mirror); %d, %d", f0(float64(x.ZKPages-x.Extra)), f0(float64(x.WgetPages)), x.Extra, x.Missing, x.Dups))
		}
		t.row("2", "pages zkcrawl of wget; missing, duplicate (every run)", sameRuns(res), "each page once", met(all))
	}
	if lat := realPick(realRuns(rr.Runs, true, true)); lat != nil {
		t.row("2", fmt.Sprintf("+%s ms per response: wget / zkcrawl, s (ratio)", f0(lat.LatencyMS)), fmt.Sprintf("%s / %s (%s)", f2(lat.WgetS), f2(lat.ZKS), f2(lat.Ratio)), "", "")
	}
}

// queued writes part 3a: seeding rate and footprint per queued URL.
func (t *table) queued(q *Queued) {
	p := fmt.Sprintf("3a %s URLs over %s hosts via bin/seeder --seeds", f0(float64(q.URLs)), f0(float64(q.Hosts)))
	t.row(p, "seeding rate, URLs/s (seeder process start to exit)", fmt.Sprintf("%s (%s s)", f0(q.SeedPerS), f2(q.SeederS)), "≥ 50,000", met(q.SeedPerS >= 50000))
	t.row("3a", "ZooKeeper data per queued URL, B: after seeding (inbox posts) / after the paused worker's drain (backlog + ready windows)",
		f1(q.PostedDataPerURL)+" / "+f1(q.DrainedDataPerURL), "≤ 48", met(q.PostedDataPerURL <= 48 && q.DrainedDataPerURL <= 48))
	t.row("3a", "znodes per queued URL: after seeding / after the drain", f2(q.PostedZnodesPerURL)+" / "+f2(q.DrainedZnodesPerURL),
		"≤ 0.1", met(q.PostedZnodesPerURL <= 0.1 && q.DrainedZnodesPerURL <= 0.1))
	t.row("3a", "ZooKeeper JVM RSS, MB: after seeding / after the drain", kbMB(q.Posted.RSSKB)+" / "+kbMB(q.Drained.RSSKB), "", "")
}

// fetched writes part 3b: what part 1's crawls left per fetched URL.
func (t *table) fetched(s *Synth) {
	worst, worstChunk := 0.0, 0.0
	for _, x := range s.Runs {
		worst = math.Max(worst, x.DataPerURL)
		worstChunk = math.Max(worstChunk, x.ChunkBytesPerKy)
	}
	retired := true // every run: batches retired and seen keys = pages
	for _, x := range s.Attempts {
		retired = retired && x.Retired && x.SeenKeys == x.Pages
	}
	t.row("3b data per fetched URL (part 1's crawls, after their batches retired)", "mntr data size delta of the crawl / pages, B, by worker count",
		bothRuns(s.Runs, func(x SynthRun) string { return f1(x.DataPerURL) }), "≤ 16", met(worst <= 16 && retired))
	t.row("3b", "seen chunk bytes per key (the chunks alone, largest of all runs); every run retired with seen keys = pages",
		f2(worstChunk)+"; "+map[bool]string{true: "yes", false: "NO"}[retired], "", "")
}

// big writes part 3c: the big frontier, its snapshot and restart.
func (t *table) big(g *Big) {
	p := fmt.Sprintf("3c big frontier: %s of %s URLs (frontier.Enqueue in-process, ≤ %s s) in one ZooKeeper, -Xmx%s", f0(float64(g.URLs)), f0(float64(g.Target)), f0(g.TimeLimitS), g.Heap)
	t.row(p, "runs with -Xmx1g: URLs enqueued, rate URLs/s", fmt.Sprintf("%s (%s/s)", f0(float64(g.URLs)), f0(g.SeedPerS)), "10,000,000 run", met(g.URLs >= 10_000_000))
	t.row("3c", "ZooKeeper data (mntr) / JVM RSS, MB", mb(g.After.DataBytes)+" / "+kbMB(g.After.RSSKB), "", "")
	t.row("3c", "largest snapshot, MB", f1(g.LargestSnapshotMB), "", "")
	t.row("3c", "restart with this data, s", f2(g.RestartS), "≤ 10", met(g.RestartS <= 10))
}

// trap writes part 4: one row per trap flavour.
func (t *table) trap(tr *Trap) {
	for i, x := range tr.Runs {
		p := "4"
		if i == 0 {
			p = fmt.Sprintf("4 trap sites (%s links/page, ~%s characters, gzipped), default config, 1 worker, %s s", f0(float64(tr.Links)), f0(float64(tr.URLLength)), f0(tr.TimeS))
		}
		res := fmt.Sprintf("+%s MB (peak +%s; last 10 s %s); %s pages (%s of the trap host); dropped %s; dead letters %s",
			f1(x.GrowthMB), f1(x.PeakGrowthMB), signed(x.LastTenSMB), f0(float64(x.Pages)), f0(float64(x.TrapPages)), dropLine(x.Dropped), f0(float64(x.DeadLetters)))
		if x.GroupFailures > 0 {
			res += fmt.Sprintf("; %d failed group steps, %d connection losses (%s)", x.GroupFailures, x.ConnLosses, x.GroupErrorHint)
		}
		if x.Aborted {
			res += fmt.Sprintf("; stopped after %s s at the %s MB abort limit", f0(x.RanS), f0(tr.AbortMB))
		}
		// A trap that stalled the frontier (failed group steps) is not
		// bounded by a quota, only stopped: not met.
		t.row(p, x.Flavour+": ZooKeeper data growth", res, "≤ +32 MB, by the quotas", met(!x.Aborted && x.PeakGrowthMB <= 32 && x.GroupFailures == 0))
	}
}

// ceiling writes part 5: the write ceiling and the pages/s it implies.
func (t *table) ceiling(c *Ceiling) {
	var tx, pages []string
	for _, x := range c.Runs {
		tx = append(tx, f0(x.TxPerS))
		pages = append(pages, f0(x.ImpliedPagesS)+" at "+f2(x.WritesPerPage)+" writes/page")
	}
	tx = append(tx, "")
	pages = append(pages, "")
	t.row(fmt.Sprintf("5 write ceiling (standalone, %d sessions × %d multis in flight)", c.Clients, c.InFlight), "create+delete multis committed per second", bothSyncs(tx[0], tx[1]), "", "")
	t.row("5", "cluster pages/s it implies (ceiling / part 1's writes per page with the most workers)", bothSyncs(pages[0], pages[1]), "", "")
}

// takeover writes part 6: session expiry and takeover times.
func (t *table) takeover(k *Takeover) {
	t.row(fmt.Sprintf("6 kill-to-takeover (tickTime %d ms, 3 workers, %s req/s per host)", k.TickMS, f1(k.RatePerS)),
		"session timeout asked / granted, s", f1(k.SessionTimeoutS)+" / "+f1(k.NegotiatedS), "", "")
	t.row("6", "killed worker's claims; its session expired after, s", fmt.Sprintf("%d; %s", k.VictimClaims, f2(k.ExpiredS)), "", "")
	t.row("6", fmt.Sprintf("kill to host claimed by another worker, s: min / median / max (%d of %d hosts)", k.HostsTakenOver, k.VictimHosts),
		f2(k.HostMinS)+" / "+f2(k.HostMedianS)+" / "+f2(k.HostMaxS),
		"every host taken over, ≈ session timeout", met(k.VictimHosts > 0 && k.HostsTakenOver == k.VictimHosts && k.HostMaxS <= k.SessionTimeoutS+2))
	t.row("6", fmt.Sprintf("kill to item claimed elsewhere or done, s: min / median / max (%d of %d items; the rest still queued after %s s)",
		k.Items, k.Items+k.Unresolved, f0(k.DeadlineS)), f2(k.MinS)+" / "+f2(k.MedianS)+" / "+f2(k.MaxS), "", "")
}
