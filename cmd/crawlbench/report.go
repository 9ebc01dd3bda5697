package main

// The report: one table of every figure against its target, and
// BENCHMARKS.md around it (machine, date, load, commands to rerun, how each
// figure was measured, per-run details).

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"sort"
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
	WarmupS           float64 // ZooKeeper warm-up before parts 1 and 2
	WarmupItems       int
	SharedZKJavaOpts  []string // JVM flags added for the ZooKeeper of parts 1 and 2
	Synth             *synthResult
	Real              *realResult
	Scale             *scaleResult
	Takeover          *takeoverResult
	Errors            []string
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

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**NO**"
}

// joinRuns formats one figure of every part 1 run, "a / b / c".
func joinRuns(runs []synthRun, f func(r synthRun) string) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, f(r))
	}
	return strings.Join(parts, " / ")
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

// table renders the one results table (GitHub markdown).
func (r *report) table() string {
	var b strings.Builder
	row := func(part, measure, result, target, met string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", part, measure, result, target, met)
	}
	b.WriteString("| part | measure | result | target | met |\n|---|---|---|---|---|\n")
	if s := r.Synth; s != nil && len(s.Runs) > 0 {
		counts := joinRuns(s.Runs, func(x synthRun) string { return fmt.Sprint(x.Workers) })
		p := fmt.Sprintf("1 synthetic web (%d hosts × %d pages, %s links/page, scope %s)", s.Hosts, s.PagesPerHost, f0(float64(s.LinksPerPage)), s.Scope)
		row(p, "workers", counts, "", "")
		row("1", "pages/s", joinRuns(s.Runs, func(x synthRun) string { return f0(x.PagesPerS) }),
			"≥ 800 with 3 workers", targetPages(s.Runs))
		row("1", "wall time, s (first worker start to last page)", joinRuns(s.Runs, func(x synthRun) string { return f2(x.WallS) }), "", "")
		row("1", "worker CPU per page, ms (all workers)", joinRuns(s.Runs, func(x synthRun) string { return f2(x.WorkerCPUMsPerPage) }), "", "")
		row("1", "ZooKeeper CPU per page, ms (the JVM)", joinRuns(s.Runs, func(x synthRun) string { return f2(x.ZKCPUMsPerPage) }), "", "")
		worst := 0.0
		for _, x := range s.Runs {
			worst = math.Max(worst, x.ZKWritesPerPage)
		}
		row("1", "ZooKeeper writes per page (zxid delta / pages)", joinRuns(s.Runs, func(x synthRun) string { return f2(x.ZKWritesPerPage) }), "≤ 5", yesNo(worst <= 5))
		row("1", "claim latency p50 / p99, ms (queue_claim histograms, merged)",
			joinRuns(s.Runs, func(x synthRun) string { return f1(x.ClaimP50Ms) + " · " + f1(x.ClaimP99Ms) }), "", "")
		peak := 0.0
		for _, x := range s.Runs {
			peak = math.Max(peak, maxOf(x.PeakRSSMB))
		}
		row("1", "peak RSS per worker, MB (largest VmHWM)", joinRuns(s.Runs, func(x synthRun) string { return f0(maxOf(x.PeakRSSMB)) }), "< 150", yesNo(peak < 150))
		ok := true
		for _, x := range s.Attempts {
			ok = ok && x.Missing == 0 && x.Dups == 0 && x.Extra == 0 && x.WrongStatus == 0 && x.URLs == s.Expected
		}
		// Identical outcomes are shown once with their count.
		var outcomes []string
		seen := map[string]int{}
		for _, x := range s.Attempts {
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
			strings.Join(outcomes, " / "), "each page once", yesNo(ok))
	}
	if rr := r.Real; rr != nil {
		for i, x := range rr.Runs {
			where := "loopback"
			if x.LatencyMS > 0 {
				where = fmt.Sprintf("+%s ms per response", f0(x.LatencyMS))
			}
			p := "2"
			if i == 0 {
				p = fmt.Sprintf("2 PostgreSQL 15 manual via nginx (per_host_max_in_flight %d)", rr.MaxInFlight)
			}
			row(p, fmt.Sprintf("%s: wall time wget -r / zkcrawl (seed to last page), s", where), f2(x.WgetS)+" / "+f2(x.ZKS), "", "")
			target, met := "", ""
			if i == 0 {
				target, met = "≤ 1 (no slower than wget)", yesNo(x.Ratio <= 1)
			}
			row("2", fmt.Sprintf("%s: ratio zkcrawl / wget", where), f2(x.Ratio), target, met)
			row("2", fmt.Sprintf("%s: pages zkcrawl of wget; missing, duplicate", where),
				fmt.Sprintf("%s of %s; %d, %d", f0(float64(x.ZKPages)), f0(float64(x.WgetPages)), x.Missing, x.Dups), "each page once", yesNo(x.Missing == 0 && x.Dups == 0))
		}
	}
	if s := r.Scale; s != nil {
		row(fmt.Sprintf("3 frontier at scale (%s URLs, %d shards, host spread %d)", f0(float64(s.URLs)), s.Shards, s.Spread),
			"seeding rate, URLs/s (in-process frontier.Enqueue)", fmt.Sprintf("%s (%s s)", f0(s.SeedPerS), f1(s.SeedS)), "", "")
		row("3", "largest queue parent, children", fmt.Sprintf("%s (%s; smallest %s)", f0(float64(s.MaxQueueChildren)), s.MaxQueueShard, f0(float64(s.MinQueueChildren))), "≤ 10,000", yesNo(s.MaxQueueChildren <= 10000))
		row("3", "largest seen-set parent, children", f0(float64(s.MaxSeenChildren)), "≤ 10,000", yesNo(s.MaxSeenChildren <= 10000))
		row("3", "ZooKeeper data (mntr zk_approximate_data_size) / JVM RSS, MB", f0(s.ApproxDataSizeMB)+" / "+f0(s.JVMRSSMB), "", "")
		row("3", "largest snapshot file, MB", f0(s.LargestSnapshotMB), "", "")
		row("3", fmt.Sprintf("claim latency p50 / p99, ms (%d claims, 8 in flight)", s.Claims), f2(s.ClaimP50Ms)+" / "+f2(s.ClaimP99Ms), "", "")
		row("3", "ZooKeeper restart with this data, s", f1(s.RestartS), "", "")
	}
	if t := r.Takeover; t != nil {
		row(fmt.Sprintf("4 kill-to-takeover (tickTime %d ms, 3 workers, %s req/s per host)", t.TickMS, f1(t.RatePerS)),
			"session timeout asked / granted, s", f1(t.SessionTimeoutS)+" / "+f1(t.NegotiatedS), "", "")
		row("4", "killed worker's claims; its session expired after, s", fmt.Sprintf("%d; %s", t.VictimClaims, f2(t.ExpiredS)), "", "")
		row("4", fmt.Sprintf("kill to host claimed by another worker, s: min / median / max (%d of %d hosts)", t.HostsTakenOver, t.VictimHosts),
			f2(t.HostMinS)+" / "+f2(t.HostMedianS)+" / "+f2(t.HostMaxS),
			"every host taken over, ≈ session timeout", yesNo(t.VictimHosts > 0 && t.HostsTakenOver == t.VictimHosts && t.HostMaxS <= t.SessionTimeoutS+2))
		row("4", fmt.Sprintf("kill to shard claimed by another worker, s: min / median / max (%d of %d shards)", t.ShardsTakenOver, t.Shards),
			f2(t.ShardMinS)+" / "+f2(t.ShardMedianS)+" / "+f2(t.ShardMaxS), "", "")
		row("4", fmt.Sprintf("kill to item claimed elsewhere or done, s: min / median / max (%d of %d items; the rest still queued after %s s)",
			t.Items, t.Items+t.Unresolved, f0(t.DeadlineS)), f2(t.MinS)+" / "+f2(t.MedianS)+" / "+f2(t.MaxS), "", "")
	}
	return b.String()
}

func targetPages(runs []synthRun) string {
	for _, x := range runs {
		if x.Workers == 3 {
			return yesNo(x.PagesPerS >= 800)
		}
	}
	return "—"
}

// markdown renders BENCHMARKS.md around the table.
func (r *report) markdown(table string) string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# zkcrawl benchmarks\n\n")
	fmt.Fprintf(&b, "Generated by `make bench` (`scripts/bench.sh` → `cmd/crawlbench`) on %s UTC, in %s. Do not edit by hand: rerun.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Finished.Sub(r.Started).Round(time.Second))
	b.WriteString(table)
	b.WriteString("\n")
	if len(r.Errors) > 0 {
		b.WriteString("**Parts that failed:**\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Machine\n\n")
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPUs (nproc) | %d |\n| memory | %.1f GiB |\n| CPU model | %s |\n| kernel | %s |\n", m.CPUs, m.MemoryGiB, m.CPUModel, m.Kernel)
	fmt.Fprintf(&b, "| Go | %s |\n| ZooKeeper | %s |\n| Java | %s |\n", m.Go, m.ZooKeeper, m.Java)
	fmt.Fprintf(&b, "| load average (1, 5, 15 min) at start / end | %s / %s |\n\n", m.LoadStart, m.LoadEnd)
	b.WriteString("The machine is shared: other jobs may run at the same time, and the load average counts the benchmark's own processes " +
		"(about 3 to 5 runnable during a crawl). Each part below gives the load before and after it; figures taken " +
		"while other jobs ran are slower than this machine can do.\n\n")

	b.WriteString("## Rerun\n\n```sh\nmake bench                          # everything, about 5 to 8 minutes\n" +
		"./scripts/bench.sh --skip-scale     # without the 1,000,000-URL part\n" +
		"go build -o bin/crawlbench ./cmd/crawlbench && bin/crawlbench --help   # the driver and its flags\n```\n\n")
	fmt.Fprintf(&b, "This report came from:\n\n```sh\n%s\n```\n\nEvery figure is also in `%s/results.json`; logs, crawl logs and WARC files of each run are under `%s/`.\n\n",
		r.Command, r.OutDir, r.OutDir)

	r.methodSynth(&b)
	r.methodReal(&b)
	r.methodScale(&b)
	r.methodTakeover(&b)
	return b.String()
}

func (r *report) methodSynth(b *strings.Builder) {
	s := r.Synth
	if s == nil {
		return
	}
	b.WriteString("## 1. Synthetic web, rate limits off\n\n")
	fmt.Fprintf(b, "`testenv.StartWeb` in the driver: %d hosts (one loopback port each) × %d pages, %d random links per page plus the chain link, "+
		"%.0f%% of the random links to another host, special pages off; ground truth from `Web.GroundTruth` (scope `%s`, robots.txt obeyed, no depth limit): "+
		"%s URLs. Crawl config: `per_host_rate_per_s 0, per_host_max_in_flight %d, worker_concurrency 64, allow_private_networks true, obey_robots true, "+
		"max_depth -1, scope %s`; default layout (256 shards, host spread 8).\n\n",
		s.Hosts, s.PagesPerHost, s.LinksPerPage, s.CrossHostShare*100, s.Scope, f0(float64(s.Expected)), s.MaxInFlight, s.Scope)
	fmt.Fprintf(b, "One ZooKeeper 3.8 standalone (tickTime 2 s, `forceSync=no` as in testenv, JVM `%s`) serves parts 1 and 2. "+
		"It is first warmed up in-process (%s items enqueued, claimed and completed, %s s): a fresh JVM spends seconds in its JIT "+
		"compilers, which a long-running server does not. Each run uses a fresh crawl name, is seeded with `bin/seeder`, "+
		"and starts N `bin/crawler` processes (`--metrics-addr 127.0.0.1:0`). The driver watches the crawl logs and, once they stop "+
		"growing, reads `coord.Queue.Pending` until the queue and the claims are empty twice in a row; then it scrapes each worker's "+
		"`/metrics`, reads `/proc/<pid>` (CPU `utime+stime`, `VmHWM`) and the ZooKeeper `srvr` zxid, and only then sends SIGTERM.\n\n",
		strings.Join(r.SharedZKJavaOpts, " "), f0(float64(r.WarmupItems)), f1(r.WarmupS))
	b.WriteString("- **pages/s** = crawl log lines / (last crawl log write − first worker start). The item is completed one ZooKeeper round " +
		"trip after its log line; the driver confirmed done that much later (see `DetectS` in results.json).\n" +
		"- **CPU per page**: the workers' CPU time summed, and separately the ZooKeeper JVM's (all threads, from `/proc`). " +
		"The driver (synthetic web and polling) is not counted.\n" +
		"- **ZooKeeper writes per page**: zxid delta over the run / pages. Every write transaction increments the zxid once, a " +
		"multi counting once, and so does a failed write (a duplicate link's enqueue multi that hits the existing seen marker); session " +
		"creation and closing, heartbeats and membership count too. Reads do not.\n" +
		"- **claim latency**: the workers' `zkcrawl_zk_op_duration_seconds{op=\"queue_claim\"}` histograms (item read + claim multi), " +
		"merged bucket by bucket, quantiles interpolated inside a bucket as PromQL's `histogram_quantile` does. It includes the " +
		"time a request waits in the client and server queues while the machine is saturated.\n" +
		"- **correctness**: every ground-truth URL logged exactly once with its status; nothing else logged.\n\n")
	fmt.Fprintf(b, "Every worker count ran %d times, in rounds (1, 2, 3 workers, then again); the table above shows each count's fastest "+
		"run (marked ✓ below), since other jobs on the machine can only slow a run down.\n\n", len(s.Attempts)/max(len(s.Runs), 1))
	b.WriteString("| workers | run | pages | wall s | pages/s | pages per worker | worker CPU s | ZK CPU s | driver CPU s | ZK writes | links queued / duplicate | claims | claim mean ms | complete p50 ms | enqueue p50 ms | peak RSS MB | load before → after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range s.Attempts {
		var per []string
		for _, p := range x.PagesPerWorker {
			per = append(per, f0(float64(p)))
		}
		var rss []string
		for _, v := range x.PeakRSSMB {
			rss = append(rss, f0(v))
		}
		mark := ""
		for _, r := range s.Runs {
			if r.Crawl == x.Crawl {
				mark = " ✓"
			}
		}
		fmt.Fprintf(b, "| %d | %d%s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s → %s |\n",
			x.Workers, x.Attempt, mark, f0(float64(x.Pages)), f2(x.WallS), f0(x.PagesPerS), strings.Join(per, ", "), f1(x.WorkerCPUS), f1(x.ZKCPUS), f1(x.DriverCPUS),
			f0(float64(x.ZKWrites)), f0(x.LinksQueued), f0(x.LinksDuplicate), f0(x.Claims), f1(x.ClaimMeanMs), f1(x.CompleteP50Ms), f1(x.PutP50Ms),
			strings.Join(rss, ", "), x.LoadBefore, x.LoadAfter)
	}
	b.WriteString("\n")
	if len(s.Runs) > 0 {
		x := s.Runs[len(s.Runs)-1]
		fmt.Fprintf(b, "ZooKeeper requests of the %d-worker run, by op (errors in parentheses): %s.\n\n", x.Workers, opsLine(x.ZKOps, x.ZKOpErrors))
		if x.Pages > 0 {
			p := float64(x.Pages)
			fmt.Fprintf(b, "Its %s writes per page: a claim multi (%s per page) and a complete multi (%s), one enqueue multi per new URL "+
				"(%s), failed multis (%s per page: almost all enqueues of links that another page had already queued, which the "+
				"worker's local seen cache did not know yet; a link found on pages of several workers reaches ZooKeeper once per "+
				"worker), and the rest (%s: sessions, fence and membership znodes, heartbeats, seen-set bucket parents).\n\n",
				f2(x.ZKWritesPerPage), f2(x.ZKOps["queue_claim"]/p), f2(x.ZKOps["queue_complete"]/p), f2(x.LinksQueued/p),
				f2(x.ZKOpErrors["multi"]/p), f2(x.ZKWritesPerPage-(x.ZKOps["multi"]-x.ZKOpErrors["multi"])/p-x.ZKOpErrors["multi"]/p))
		}
		b.WriteString("Shard groups (32 of them: 256 shards / host spread 8) are owned by rendezvous hashing, so with 100 hosts the workers " +
			"get unequal shares of the pages (the \"pages per worker\" column); the busiest worker bounds the wall time.\n\n")
	}
}

func (r *report) methodReal(b *strings.Builder) {
	rr := r.Real
	if rr == nil || len(rr.Runs) == 0 {
		return
	}
	b.WriteString("## 2. Real site: the PostgreSQL 15 manual, zkcrawl vs wget -r\n\n")
	fmt.Fprintf(b, "`scripts/demo-real.sh`'s setup, timed like part 1: %s (%d worker processes, `sendfile on`, access log off) serves `%s` on loopback; "+
		"`wget -r -np -nv` (%s) mirrors it from `index.html`, one request at a time on one keep-alive connection; then `bin/seeder` "+
		"creates the crawl and 3 `bin/crawler` processes crawl it (`per_host_rate_per_s 0, per_host_max_in_flight %d, worker_concurrency %d, "+
		"max_depth -1, scope same_host`) on the warm ZooKeeper of part 1. zkcrawl's time runs from the seeder's start to the last crawl "+
		"log line (no `--exit-when-done` quiet period). The manual is one host, hence one shard group with one owner: one worker does "+
		"all the fetching, by design (politeness in one process). The pair is run again through a proxy in the driver that holds every "+
		"response back by the added latency, as a server a few milliseconds away would.\n\n",
		rr.Nginx, rr.NginxWorkers, rr.Docs, rr.Wget, rr.MaxInFlight, rr.Concurrency)
	b.WriteString("| added latency ms | wget s | zkcrawl s (seed to last page) | of which seeding s | pauses > 250 ms, s (longest) | ratio | ratio, crawl only | pages wget / zkcrawl | missing, dup | worker CPU s | ZK CPU s | ZK writes | claim p50 / p99 ms | load before → after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range rr.Runs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s (%s) | %s | %s | %d / %d | %d, %d | %s | %s | %s | %s / %s | %s → %s |\n",
			f0(x.LatencyMS), f2(x.WgetS), f2(x.ZKS), f2(x.SeedS), f2(x.IdleGapsS), f2(x.LongestGapS), f2(x.Ratio), f2(x.CrawlRatio), x.WgetPages, x.ZKPages, x.Missing, x.Dups,
			f2(x.WorkerCPUS), f2(x.ZKCPUS), f0(float64(x.ZKWrites)), f1(x.ClaimP50Ms), f1(x.ClaimP99Ms), x.LoadBefore, x.LoadAfter)
	}
	x := rr.Runs[0]
	if x.ZKPages > 0 && x.WgetPages > 0 {
		cpu := (x.WorkerCPUS + x.ZKCPUS) * 1000 / float64(x.ZKPages)
		floor := cpu * float64(x.ZKPages) / 1000 / float64(max(r.Machine.CPUs, 1))
		verdict := "so on this machine zkcrawl cannot match, on loopback, a sequential client that does little else, whatever per_host_max_in_flight is"
		if floor < x.WgetS {
			verdict = "so the CPU alone does not rule out matching wget on loopback here: the gap is latency (round trips to ZooKeeper per page) and load"
		}
		fmt.Fprintf(b, "\nOn loopback nginx answers a page in well under a millisecond: wget spends %.2f ms of wall time per page. "+
			"zkcrawl spends %.2f ms of CPU per page in the worker and ZooKeeper together (claim: a read and a multi; enqueue of the "+
			"new links; complete: a multi; %.1f ZooKeeper writes per page, the crawl's creation included). Even spread perfectly over "+
			"the %d CPUs that is at least %.2f s for %d pages against wget's %.2f s, %s. With a few milliseconds per response, wget "+
			"waits for each page in turn while zkcrawl keeps per_host_max_in_flight requests in flight.\n\n",
			x.WgetS*1000/float64(x.WgetPages), cpu, float64(x.ZKWrites)/float64(x.ZKPages), r.Machine.CPUs, floor, x.ZKPages, x.WgetS, verdict)
		if x.IdleGapsS > 0 {
			fmt.Fprintf(b, "The loopback crawl also stood still for %s s in pauses longer than 250 ms (longest %s s), in which no page "+
				"was logged at all: the host's %d claim slots (per_host_max_in_flight + 1) were free again, but the claim loops of "+
				"its other shards, having turned its items away while the slots were full, were waiting for coord's 1 s recheck "+
				"(a freed slot wakes only the shard of the item that freed it).\n\n", f2(x.IdleGapsS), f2(x.LongestGapS), rr.MaxInFlight+1)
		}
		fmt.Fprintf(b, "ZooKeeper requests of the loopback crawl, by op (errors in parentheses): %s.\n\n", opsLine(x.ZKOps, x.ZKOpErrors))
	}
}

func (r *report) methodScale(b *strings.Builder) {
	s := r.Scale
	if s == nil {
		return
	}
	b.WriteString("## 3. Frontier at scale\n\n")
	fmt.Fprintf(b, "A ZooKeeper of its own (JVM `%s`, tickTime 2 s). The driver creates a crawl with the default layout (%d shards, host spread %d) "+
		"and enqueues %s URLs, `http://hNNNNN.example/p/N` for %s hosts × %d paths, through `frontier.Enqueue` (the seeder's and the workers' "+
		"path: one multi of seen-marker create + sequential item create per URL, up to 256 pipelined per call, 3 calls at a time). Nothing is fetched. "+
		"Seeding took %s s (%s ZooKeeper writes). Then: `numChildren` of every queue shard and seen-set bucket; `mntr` "+
		"(zk_approximate_data_size, %s znodes) and the JVM's VmRSS (peak %s MB); the snapshot and transaction log files in the data dir "+
		"(%d snapshots, %s MB of logs; ZooKeeper snapshots every ~100,000 transactions by default); %d items (the first ones of every shard) "+
		"claimed with `coord.Queue.Claim` 8 at a time and then released (release p50 / p99: %s / %s ms); finally a restart, which reads the "+
		"latest snapshot and the log after it and writes a fresh snapshot (%s MB) before serving. Load before → after: %s → %s.\n\n",
		strings.Join(s.ZKJavaOpts, " "), s.Shards, s.Spread, f0(float64(s.URLs)), f0(float64(s.Hosts)), s.Paths, f1(s.SeedS), f0(float64(s.SeedZKWrites)),
		f0(float64(s.ZnodeCount)), f0(s.JVMPeakMB), s.Snapshots, f0(s.TxnLogMB), s.Claims, f2(s.ReleaseP50Ms), f2(s.ReleaseP99Ms),
		f0(s.RestartSnapshotMB), s.LoadBefore, s.LoadAfter)
}

func (r *report) methodTakeover(b *strings.Builder) {
	t := r.Takeover
	if t == nil {
		return
	}
	b.WriteString("## 4. Kill-to-takeover\n\n")
	var owners []string
	for k := range t.ClaimsBefore {
		owners = append(owners, k)
	}
	sort.Strings(owners)
	var claims []string
	for _, k := range owners {
		claims = append(claims, fmt.Sprintf("%s %d", k, t.ClaimsBefore[k]))
	}
	fmt.Fprintf(b, "A ZooKeeper with tickTime %d ms (so session timeouts from %s to %s s are granted), a synthetic web of %d hosts × %d pages, "+
		"3 workers with `--session-timeout %ss` and `per_host_rate_per_s %s, per_host_max_in_flight 1`, so items wait for their politeness "+
		"turn while claimed. 5 s into the crawl the claims were: %s. The driver sent SIGKILL to %s and then recorded the claims it still "+
		"held (%d, from `coord.Queue.Stats`; they stay until its session expires). Its membership znode vanished %s s after the kill "+
		"(session expiry). Every 50 ms the driver read the claims and children of those items' shards.\n\n",
		t.TickMS, f1(2*float64(t.TickMS)/1000), f1(20*float64(t.TickMS)/1000), t.Hosts, t.PagesPerHost,
		f1(t.SessionTimeoutS), f1(t.RatePerS), strings.Join(claims, ", "), t.Victim, t.VictimClaims, f2(t.ExpiredS))
	fmt.Fprintf(b, "- A **host** (%d of them) counts as taken over when another worker holds a claim on one of its items. That is failover: "+
		"session expiry, then the handoff (the new owner of a shard group waits until its shards hold no foreign claim, then one "+
		"politeness interval), then the claim.\n"+
		"- A **shard** (%d) counts when another worker holds a claim in it, an **item** when another worker holds its claim (%d items) "+
		"or it is gone, i.e. completed (%d). These also wait for their politeness turn: a host's items are fetched %s per second across "+
		"its 8 shards, in FIFO order per shard, and the killed worker had claimed items anywhere in that order (its claim loops walk "+
		"past items of a busy host and take later ones when a slot frees), so the last of them come long after failover. The driver "+
		"stops watching %s s after the kill; %d items were still queued then.\n"+
		"- At the kill %d hosts had claims, at most %d on one host, although the worker's accept filter aims at per_host_max_in_flight "+
		"+ 1 = 2: it checks a host's claim count before the claim multi and raises it after, so the claim loops of a host's 8 shards "+
		"can pass it together. %d hosts had claims held by two workers at once.\n\nLoad after: %s.\n\n",
		t.VictimHosts, t.Shards, t.ByOtherClaim, t.ByGone, f1(t.RatePerS), f0(t.DeadlineS), t.Unresolved,
		t.HostsClaimed, t.MaxClaimsPerHost, t.HostsWithTwoOwners, t.LoadAfter)
}

// opsLine formats request counts by op, most frequent first.
func opsLine(ops, errs map[string]float64) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range ops {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	var parts []string
	for _, e := range list {
		s := e.k + " " + f0(e.v)
		if errs[e.k] > 0 {
			s += " (" + f0(errs[e.k]) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
