package main

// The report: one table of every figure against its target (issue 9's
// targets table), and BENCHMARKS.md around it (machine, date, load,
// commands to rerun, how each figure was measured, per-run details in
// report_parts.go). Nothing here measures.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the benchmark ran.
type machine struct {
	CPUs      int
	MemoryGiB float64
	CPUModel  string
	Kernel    string
	Go        string
	ZooKeeper string
	Java      string
	LoadStart string // /proc/loadavg: 1, 5 and 15 minute averages
	LoadEnd   string
}

// report is everything the benchmark measured (also written as JSON).
type report struct {
	Started, Finished time.Time
	Machine           machine
	Command           string
	OutDir            string
	WarmupS           []float64 // warm-up crawl of each shared ZooKeeper
	SharedZKJavaOpts  []string  // JVM flags added for the ZooKeeper of parts 1, 2 and 5
	PartS             []partTime
	Synth             *synthResult
	Real              *realResult
	Queued            *queuedResult
	Big               *bigResult
	Trap              *trapResult
	Ceiling           *ceilingResult
	Takeover          *takeoverResult
	Errors            []string
}

// partTime is how long one part took.
type partTime struct {
	Part string
	S    float64
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb float64
			if n, _ := fmt.Sscanf(sc.Text(), "MemTotal: %f kB", &kb); n == 1 {
				m.MemoryGiB = kb / (1 << 20)
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		m.Java = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	return m
}

// Formatting helpers: "—" for a missing figure.
func f0(v float64) string { return num(v, 0) }
func f1(v float64) string { return num(v, 1) }
func f2(v float64) string { return num(v, 2) }

func num(v float64, d int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	s := fmt.Sprintf("%.*f", d, v)
	// Thousands separators for the integer part.
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// met renders a target's verdict.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**NOT MET**"
}

// signed formats a change in MB with its sign.
func signed(v float64) string {
	if v < 0.05 && v > -0.05 {
		return "±0.0"
	}
	if v > 0 {
		return "+" + f1(v)
	}
	return f1(v)
}

// mb formats bytes as MB with one decimal.
func mb(bytes int64) string { return f1(float64(bytes) / (1 << 20)) }

// joinRuns formats one figure of the part 1 runs of one forceSync
// setting, "a / b / c" by worker count.
func joinRuns(runs []synthRun, fsync bool, f func(r synthRun) string) string {
	var parts []string
	for _, r := range runs {
		if r.ForceSync == fsync {
			parts = append(parts, f(r))
		}
	}
	return strings.Join(parts, " / ")
}

// bothSyncs formats a figure as "yes-figure (no: no-figure)".
func bothSyncs(yes, no string) string {
	if no == "" {
		return yes
	}
	return yes + " (forceSync=no: " + no + ")"
}

func maxOf(v []float64) float64 {
	m := math.NaN()
	for _, x := range v {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}

// layout1PagesPerS is part 1's 3-worker figure of layout 1 (BENCHMARKS.md
// of 2026-11-21, forceSync=no), the "today" of issue 9's targets table:
// layout 1 crawls are refused now, so it cannot run in the same run.
const layout1PagesPerS = 2609

// table renders the one results table (GitHub markdown): issue 9's
// targets first in each part, then the figures that explain them.
func (r *report) table() string {
	var b strings.Builder
	row := func(part, measure, result, target, verdict string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", part, measure, result, target, verdict)
	}
	b.WriteString("| part | measure | result: forceSync=yes (forceSync=no) | target | met |\n|---|---|---|---|---|\n")
	if s := r.Synth; s != nil && len(s.Runs) > 0 {
		row(fmt.Sprintf("1 synthetic web (%d hosts × %d pages, scope %s)", s.Hosts, s.PagesPerHost, s.Scope), "workers",
			joinRuns(s.Runs, true, func(x synthRun) string { return fmt.Sprint(x.Workers) }), "", "")
		pages := func(x synthRun) string { return f0(x.PagesPerS) }
		var no3 float64
		worst := 0.0
		for _, x := range s.Runs {
			if !x.ForceSync && x.Workers == 3 {
				no3 = x.PagesPerS
			}
			worst = math.Max(worst, x.ZKWritesPerPage)
		}
		if base := baselineFig(s.Baseline, true); base != nil {
			var yes3 float64
			for _, x := range s.Runs {
				if x.ForceSync && x.Workers == 3 {
					yes3 = x.PagesPerS
				}
			}
			row("1", "pages/s", bothSyncs(joinRuns(s.Runs, true, pages), joinRuns(s.Runs, false, pages)),
				fmt.Sprintf("3 workers no slower than %s in the same run (forceSync=yes)", s.BaselineName), met(yes3 >= base.PagesPerS))
			no := ""
			if x := baselineFig(s.Baseline, false); x != nil {
				no = f0(x.PagesPerS)
			}
			row("1", fmt.Sprintf("%s build, 3 workers, same rounds: pages/s", s.BaselineName), bothSyncs(f0(base.PagesPerS), no), "", "")
			wno := ""
			if x := baselineFig(s.Baseline, false); x != nil {
				wno = f2(x.ZKWritesPerPage)
			}
			row("1", fmt.Sprintf("%s build, 3 workers: ZooKeeper writes per page; CPU per page, ms: workers + ZooKeeper; URLs of expected, missing, duplicate", s.BaselineName),
				bothSyncs(f2(base.ZKWritesPerPage), wno)+fmt.Sprintf("; %s + %s; %s of %s, %d, %d", f2(base.WorkerCPUMsPerPage), f2(base.ZKCPUMsPerPage),
					f0(float64(base.URLs)), f0(float64(s.Expected)), base.Missing, base.Dups), "", "")
		} else {
			row("1", "pages/s", bothSyncs(joinRuns(s.Runs, true, pages), joinRuns(s.Runs, false, pages)),
				fmt.Sprintf("3 workers no slower than layout 1 (%s pages/s, forceSync=no, 2026-11-21; no --baseline-bin in this run)", f0(layout1PagesPerS)),
				met(no3 >= layout1PagesPerS))
		}
		wpp := func(x synthRun) string { return f2(x.ZKWritesPerPage) }
		row("1", "ZooKeeper writes per page (zxid delta / pages)", bothSyncs(joinRuns(s.Runs, true, wpp), joinRuns(s.Runs, false, wpp)), "≤ 1.0", met(worst <= 1.0))
		spm := func(x synthRun) string { return f2(x.StepsPerMulti) }
		row("1", "group commit: fenced steps per ZooKeeper multi (worker metrics)", bothSyncs(joinRuns(s.Runs, true, spm), joinRuns(s.Runs, false, spm)), "", "")
		cpu := func(x synthRun) string { return f2(x.WorkerCPUMsPerPage) + " + " + f2(x.ZKCPUMsPerPage) }
		row("1", "CPU per page, ms: workers + ZooKeeper", bothSyncs(joinRuns(s.Runs, true, cpu), joinRuns(s.Runs, false, cpu)), "", "")
		lat := func(x synthRun) string { return f1(x.ClaimP50Ms) + " · " + f1(x.ClaimP99Ms) }
		row("1", "claim latency p50 · p99, ms", bothSyncs(joinRuns(s.Runs, true, lat), joinRuns(s.Runs, false, lat)), "", "")
		peak := 0.0
		for _, x := range s.Runs {
			peak = math.Max(peak, maxOf(x.PeakRSSMB))
		}
		row("1", "peak RSS per worker, MB (largest VmHWM, any run)", f0(peak), "< 150", met(peak < 150))
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
		row("1", "correctness (every run): URLs fetched of expected; missing, duplicate, extra, wrong status",
			strings.Join(outcomes, " / "), "every page exactly once", met(ok))
	}
	if rr := r.Real; rr != nil && len(rr.Runs) > 0 {
		yes, no := realPick(rr.Runs, 0, true), realPick(rr.Runs, 0, false)
		if yes != nil {
			p := fmt.Sprintf("2 PostgreSQL 15 manual via nginx, 3 workers (per_host_max_in_flight %d)", rr.MaxInFlight)
			row(p, "loopback: wall time wget -r --warc-file / zkcrawl (seed to last page), s",
				bothSyncs(f2(yes.WgetS)+" / "+f2(yes.ZKS), realFig(no, func(x *realRun) string { return f2(x.ZKS) })), "", "")
			row("2", "loopback: ratio zkcrawl / wget", bothSyncs(f2(yes.Ratio), realFig(no, func(x *realRun) string { return f2(x.Ratio) })), "≤ 1.0, same run", met(yes.Ratio <= 1))
			row("2", "ZooKeeper writes per crawl log line (zxid delta, seeding included)",
				bothSyncs(f2(yes.WritesPerLine), realFig(no, func(x *realRun) string { return f2(x.WritesPerLine) })), "≤ 1.25", met(yes.WritesPerLine <= 1.25))
			all := true
			var res []string
			for _, x := range rr.Runs {
				all = all && x.Missing == 0 && x.Dups == 0
				res = append(res, fmt.Sprintf("%s of %s (+%d not in wget's mirror); %d, %d", f0(float64(x.ZKPages-x.Extra)), f0(float64(x.WgetPages)), x.Extra, x.Missing, x.Dups))
			}
			row("2", "pages zkcrawl of wget; missing, duplicate (every run)", strings.Join(res, " / "), "each page once", met(all))
		}
		if lat := realPick(rr.Runs, 1, true); lat != nil {
			row("2", fmt.Sprintf("+%s ms per response: wget / zkcrawl, s (ratio)", f0(lat.LatencyMS)), fmt.Sprintf("%s / %s (%s)", f2(lat.WgetS), f2(lat.ZKS), f2(lat.Ratio)), "", "")
		}
	}
	if q := r.Queued; q != nil {
		p := fmt.Sprintf("3a %s URLs over %s hosts via bin/seeder --seeds", f0(float64(q.URLs)), f0(float64(q.Hosts)))
		row(p, "seeding rate, URLs/s (seeder process start to exit)", fmt.Sprintf("%s (%s s)", f0(q.SeedPerS), f2(q.SeederS)), "≥ 50,000", met(q.SeedPerS >= 50000))
		row("3a", "ZooKeeper data per queued URL, B: after seeding (inbox posts) / after the paused worker's drain (backlog + ready windows)",
			f1(q.PostedDataPerURL)+" / "+f1(q.DrainedDataPerURL), "≤ 48", met(q.PostedDataPerURL <= 48 && q.DrainedDataPerURL <= 48))
		row("3a", "znodes per queued URL: after seeding / after the drain", f2(q.PostedZnodesPerURL)+" / "+f2(q.DrainedZnodesPerURL),
			"≤ 0.1", met(q.PostedZnodesPerURL <= 0.1 && q.DrainedZnodesPerURL <= 0.1))
		row("3a", "ZooKeeper JVM RSS, MB: after seeding / after the drain", f0(float64(q.Posted.RSSKB)/1024)+" / "+f0(float64(q.Drained.RSSKB)/1024), "", "")
	}
	if s := r.Synth; s != nil && len(s.Runs) > 0 {
		worst, worstChunk := 0.0, 0.0
		var figs []string
		for _, x := range s.Runs {
			worst = math.Max(worst, x.DataPerURL)
			worstChunk = math.Max(worstChunk, x.ChunkBytesPerKy)
		}
		retired := true // every run: batches retired and seen keys = pages
		for _, x := range s.Attempts {
			retired = retired && x.Retired && x.SeenKeys == x.Pages
		}
		for _, fsync := range []bool{true, false} {
			figs = append(figs, joinRuns(s.Runs, fsync, func(x synthRun) string { return f1(x.DataPerURL) }))
		}
		row("3b data per fetched URL (part 1's crawls, after their batches retired)", "mntr data size delta of the crawl / pages, B, by worker count",
			bothSyncs(figs[0], figs[1]), "≤ 16", met(worst <= 16 && retired))
		row("3b", "seen chunk bytes per key (the chunks alone, largest of all runs); every run retired with seen keys = pages",
			f2(worstChunk)+"; "+map[bool]string{true: "yes", false: "NO"}[retired], "", "")
	}
	if g := r.Big; g != nil {
		p := fmt.Sprintf("3c big frontier: %s of %s URLs (frontier.Enqueue in-process, ≤ %s s) in one ZooKeeper, -Xmx%s", f0(float64(g.URLs)), f0(float64(g.Target)), f0(g.TimeLimitS), g.Heap)
		row(p, "runs with -Xmx1g: URLs enqueued, rate URLs/s", fmt.Sprintf("%s (%s/s)", f0(float64(g.URLs)), f0(g.SeedPerS)), "10,000,000 run", met(g.URLs >= 10_000_000))
		row("3c", "ZooKeeper data (mntr) / JVM RSS, MB", mb(g.After.DataBytes)+" / "+f0(float64(g.After.RSSKB)/1024), "", "")
		row("3c", "largest snapshot, MB", f1(g.LargestSnapshotMB), "", "")
		row("3c", "restart with this data, s", f2(g.RestartS), "≤ 10", met(g.RestartS <= 10))
	}
	if t := r.Trap; t != nil {
		for i, x := range t.Runs {
			p := "4"
			if i == 0 {
				p = fmt.Sprintf("4 trap sites (%s links/page, ~%s characters, gzipped), default config, 1 worker, %s s", f0(float64(t.Links)), f0(float64(t.URLLength)), f0(t.TimeS))
			}
			res := fmt.Sprintf("+%s MB (peak +%s; last 10 s %s); %s pages (%s of the trap host); dropped %s; dead letters %s",
				f1(x.GrowthMB), f1(x.PeakGrowthMB), signed(x.LastTenSMB), f0(float64(x.Pages)), f0(float64(x.TrapPages)), dropLine(x.Dropped), f0(float64(x.DeadLetters)))
			if x.GroupFailures > 0 {
				res += fmt.Sprintf("; %d failed group steps, %d connection losses (%s)", x.GroupFailures, x.ConnLosses, x.GroupErrorHint)
			}
			if x.Aborted {
				res += fmt.Sprintf("; stopped after %s s at the %s MB abort limit", f0(x.RanS), f0(t.AbortMB))
			}
			// A trap that stalled the frontier (failed group steps) is not
			// bounded by a quota, only stopped: not met.
			row(p, x.Flavour+": ZooKeeper data growth", res, "≤ +32 MB, by the quotas", met(!x.Aborted && x.PeakGrowthMB <= 32 && x.GroupFailures == 0))
		}
	}
	if c := r.Ceiling; c != nil && len(c.Runs) > 0 {
		var tx, pages []string
		for _, x := range c.Runs {
			tx = append(tx, f0(x.TxPerS))
			pages = append(pages, f0(x.ImpliedPagesS)+" at "+f2(x.WritesPerPage)+" writes/page")
		}
		tx = append(tx, "")
		pages = append(pages, "")
		row(fmt.Sprintf("5 write ceiling (standalone, %d sessions × %d multis in flight)", c.Clients, c.InFlight), "create+delete multis committed per second", bothSyncs(tx[0], tx[1]), "", "")
		row("5", "cluster pages/s it implies (ceiling / part 1's 3-worker writes per page)", bothSyncs(pages[0], pages[1]), "", "")
	}
	if t := r.Takeover; t != nil {
		row(fmt.Sprintf("6 kill-to-takeover (tickTime %d ms, 3 workers, %s req/s per host)", t.TickMS, f1(t.RatePerS)),
			"session timeout asked / granted, s", f1(t.SessionTimeoutS)+" / "+f1(t.NegotiatedS), "", "")
		row("6", "killed worker's claims; its session expired after, s", fmt.Sprintf("%d; %s", t.VictimClaims, f2(t.ExpiredS)), "", "")
		row("6", fmt.Sprintf("kill to host claimed by another worker, s: min / median / max (%d of %d hosts)", t.HostsTakenOver, t.VictimHosts),
			f2(t.HostMinS)+" / "+f2(t.HostMedianS)+" / "+f2(t.HostMaxS),
			"every host taken over, ≈ session timeout", met(t.VictimHosts > 0 && t.HostsTakenOver == t.VictimHosts && t.HostMaxS <= t.SessionTimeoutS+2))
		row("6", fmt.Sprintf("kill to item claimed elsewhere or done, s: min / median / max (%d of %d items; the rest still queued after %s s)",
			t.Items, t.Items+t.Unresolved, f0(t.DeadlineS)), f2(t.MinS)+" / "+f2(t.MedianS)+" / "+f2(t.MaxS), "", "")
	}
	return b.String()
}

// baselineFig returns the baseline run of a forceSync setting, or nil.
func baselineFig(runs []synthRun, fsync bool) *synthRun {
	for i := range runs {
		if runs[i].ForceSync == fsync {
			return &runs[i]
		}
	}
	return nil
}

// realPick returns part 2's run with the latency index (0: loopback, 1:
// added latency) and forceSync setting, or nil.
func realPick(runs []realRun, latency int, fsync bool) *realRun {
	for i := range runs {
		x := &runs[i]
		if (x.LatencyMS > 0) == (latency == 1) && x.ForceSync == fsync {
			return x
		}
	}
	return nil
}

// realFig formats a figure of run, "" when run is nil.
func realFig(run *realRun, f func(*realRun) string) string {
	if run == nil {
		return ""
	}
	return f(run)
}

// dropLine formats dropped-link counts by reason, largest first.
func dropLine(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	f := map[string]float64{}
	for k, v := range m {
		f[k] = float64(v)
	}
	return opsLine(f, nil)
}

// markdown renders BENCHMARKS.md around the table.
func (r *report) markdown(table string) string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# zkcrawl benchmarks\n\n")
	fmt.Fprintf(&b, "Generated by `make bench` (`scripts/bench.sh` → `cmd/crawlbench`) on %s UTC, in %s. Do not edit by hand: rerun.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Finished.Sub(r.Started).Round(time.Second))
	b.WriteString("Every ZooKeeper runs with `forceSync=yes` (ZooKeeper's default, what production runs); every write and speed figure " +
		"was also taken on a ZooKeeper with `forceSync=no`, shown in parentheses. Targets are issue 9's.\n\n")
	b.WriteString(table)
	b.WriteString("\n")
	if len(r.Errors) > 0 {
		b.WriteString("**Parts that failed:**\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
		b.WriteString("\n")
	}
	if len(r.PartS) > 0 {
		var ps []string
		for _, p := range r.PartS {
			ps = append(ps, fmt.Sprintf("%s %s s", p.Part, f0(p.S)))
		}
		fmt.Fprintf(&b, "Time per part: %s.\n\n", strings.Join(ps, ", "))
	}
	b.WriteString("## Machine\n\n")
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPUs (nproc) | %d |\n| memory | %.1f GiB |\n| CPU model | %s |\n| kernel | %s |\n", m.CPUs, m.MemoryGiB, m.CPUModel, m.Kernel)
	fmt.Fprintf(&b, "| Go | %s |\n| ZooKeeper | %s |\n| Java | %s |\n", m.Go, m.ZooKeeper, m.Java)
	fmt.Fprintf(&b, "| load average (1, 5, 15 min) at start / end | %s / %s |\n\n", m.LoadStart, m.LoadEnd)
	b.WriteString("The machine is shared: other jobs may run at the same time, and the load average counts the benchmark's own processes " +
		"(about 3 to 5 runnable during a crawl). Each part below gives the load before and after it; figures taken " +
		"while other jobs ran are slower than this machine can do. The transaction log of every ZooKeeper is on the same disk.\n\n")

	b.WriteString("## Rerun\n\n```sh\nmake bench                          # everything, about 10 minutes on 2 shared cores\n" +
		"./scripts/bench.sh --skip-big       # without the 10,000,000-URL frontier (1.5 minutes of it)\n" +
		"BASELINE_REV=none make bench        # without the layout 1 baseline of part 1\n" +
		"./scripts/bench.sh --only trap      # one part: synth, real, queued, big, trap, ceiling, takeover\n" +
		"go build -o bin/crawlbench ./cmd/crawlbench && bin/crawlbench --help   # the driver and its flags\n```\n\n")
	fmt.Fprintf(&b, "This report came from:\n\n```sh\n%s\n```\n\nEvery figure is also in `%s/results.json`; logs, crawl logs and WARC files of each run are under `%s/`.\n\n",
		r.Command, r.OutDir, r.OutDir)

	r.methodSynth(&b)
	r.methodReal(&b)
	r.methodFootprint(&b)
	r.methodTrap(&b)
	r.methodCeiling(&b)
	r.methodTakeover(&b)
	return b.String()
}
