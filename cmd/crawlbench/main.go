// Command crawlbench is zkcrawl's benchmark driver (`make bench` runs it
// through scripts/bench.sh). It measures, on this machine, against the
// benchmark targets (every ZooKeeper runs with forceSync=yes, production's
// default; write and speed figures are also taken with forceSync=no):
//
//  1. the synthetic web crawled by 1, 2 and 3 bin/crawler processes with
//     rate limits off: pages/s, ZooKeeper writes per page (zxid delta),
//     group commit (fenced steps per multi), CPU, claim latency, RSS, and
//     exact correctness against the ground truth (synth.go);
//  2. the real-site comparison with wget -r --warc-file: the PostgreSQL
//     manual served by nginx (real.go);
//  3. the frontier's footprint: data and znodes per queued URL after
//     bin/seeder and after a paused worker drained the inboxes; data per
//     fetched URL (the seen chunks, from part 1); a big frontier in a 1 GiB
//     ZooKeeper, its snapshot and restart time (footprint.go);
//  4. crawler traps in three flavours, one worker, the default config
//     (trap.go);
//  5. the ZooKeeper's write ceiling and the cluster pages/s it implies
//     (ceiling.go);
//  6. kill-to-takeover: how long the items of a SIGKILLed worker wait
//     before another worker claims (or completes) them (takeover.go).
//
// Measurement and report are apart: the parts here fill the structs of
// package report (results.json), which renders the table and BENCHMARKS.md
// and measures nothing.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

const about = `Runs zkcrawl's benchmark against its targets, on ZooKeeper with
forceSync=yes (production's default) and, for every write and speed figure,
also forceSync=no: (1) the synthetic web crawled by 1, 2 and 3 worker
processes (pages/s, ZooKeeper writes per page, group commit, correctness);
(2) the PostgreSQL manual served by nginx, zkcrawl against
wget -r --warc-file; (3) the frontier's footprint: 300,000 URLs through
bin/seeder (seeding rate, bytes and znodes per queued URL), bytes per fetched
URL, and a 10,000,000-URL frontier in a 1 GiB ZooKeeper (snapshot, restart);
(4) crawler traps (ZooKeeper data growth, links dropped by reason);
(5) ZooKeeper's write ceiling and the cluster pages/s it implies;
(6) the takeover time after a worker is killed. It prints one table and
writes it to --md with the machine and the commands to rerun. Every process
it starts is stopped when it ends or is interrupted.`

const examples = `  crawlbench --bin ./bin --out ./out/bench --md BENCHMARKS.md
  crawlbench --skip-big --skip-takeover --md ''        # quick: no 10M frontier, no kill test
  crawlbench --only real                              # part 2 only
  crawlbench --only trap --trap-time 20s --md ''      # part 4, shorter`

func main() { cli.Main("crawlbench", run) }

// options are the command-line settings.
type options struct {
	binDir, outDir, mdPath, jsonPath string
	workers                          []int
	hosts, pagesPerHost, links       int
	cross                            float64
	scope                            string
	crawlTimeout                     time.Duration
	synthInFlight                    int
	repeat                           int
	only                             []string
	skip                             map[string]*bool // --skip-<part>
	queuedHosts, queuedPaths         int
	bigHosts, bigPaths               int
	bigTime                          time.Duration
	trapTime                         time.Duration
	trapAbortMB                      int
	ceilingClients, ceilingInFlight  int
	ceilingTime                      time.Duration
	killHosts, killPages             int
	killRate                         float64
	killTick, killSession            time.Duration
	realInFlight, realConcurrency    int
	realRepeat                       int
	realLatency                      time.Duration
	baselineBin, baselineName        string
	command                          string
	fromJSON                         string
}

// parts are the benchmark's parts, by the name --only and --skip-* use.
var parts = []string{"synth", "real", "queued", "big", "trap", "ceiling", "takeover"}

// partDesc says what each part is, for --help.
var partDesc = map[string]string{
	"synth":    "part 1 (synthetic web, 1/2/3 workers; also part 3b)",
	"real":     "part 2 (PostgreSQL manual, zkcrawl vs wget)",
	"queued":   "part 3a (300,000 URLs via bin/seeder)",
	"big":      "part 3c (the 10,000,000-URL frontier, up to --big-time)",
	"trap":     "part 4 (crawler traps)",
	"ceiling":  "part 5 (ZooKeeper write ceiling)",
	"takeover": "part 6 (kill-to-takeover)",
}

// parseOptions defines the flags, parses args (and their environment
// variables, cli.Parse) and checks the values. It returns the options and
// the logger the --log-* flags ask for. Errors: cli.Usage naming the flag.
func parseOptions(args []string) (options, func(io.Writer) (*slog.Logger, error), error) {
	fs := cli.NewFlagSet("crawlbench", "crawlbench [flags]", about, examples)
	var o options
	stamp := time.Now().Format("20060102-150405")
	fs.StringVar(&o.binDir, "bin", "bin", "directory holding seeder and crawler (make build)")
	fs.StringVar(&o.outDir, "out", filepath.Join("out", "bench-"+stamp), "directory for logs, crawl output and results.json")
	fs.StringVar(&o.mdPath, "md", "BENCHMARKS.md", "write the report here ('' = do not write)")
	fs.StringVar(&o.jsonPath, "json", "", "write every figure as JSON here (default OUT/results.json)")
	fs.StringSliceVar(&o.only, "only", nil, "run only these parts: "+strings.Join(parts, ", "))
	o.skip = map[string]*bool{}
	for _, p := range parts {
		o.skip[p] = fs.Bool("skip-"+p, false, "skip "+partDesc[p])
	}
	fs.IntSliceVar(&o.workers, "workers", []int{1, 2, 3}, "part 1: worker counts to run")
	fs.IntVar(&o.hosts, "hosts", 100, "part 1: synthetic web hosts")
	fs.IntVar(&o.pagesPerHost, "pages-per-host", 200, "part 1: pages per host")
	fs.IntVar(&o.links, "links", 8, "part 1: random links per page")
	fs.Float64Var(&o.cross, "cross", 0.2, "part 1: share of links to another host")
	fs.StringVar(&o.scope, "scope", "any", "part 1: crawl scope: any or same_host")
	fs.IntVar(&o.synthInFlight, "in-flight", 8, "part 1: per_host_max_in_flight")
	fs.IntVar(&o.repeat, "repeat", 1, "part 1: rounds of the worker counts; the table keeps each count's fastest run")
	fs.DurationVar(&o.crawlTimeout, "crawl-timeout", 5*time.Minute, "part 1: give up on a crawl after this long")
	fs.IntVar(&o.realInFlight, "real-in-flight", 8, "part 2: per_host_max_in_flight")
	fs.IntVar(&o.realConcurrency, "real-concurrency", 16, "part 2: worker_concurrency")
	fs.IntVar(&o.realRepeat, "real-repeat", 5, "part 2: rounds of the loopback pair (wget, then zkcrawl on each ZooKeeper); the table shows the round of median ratio")
	fs.DurationVar(&o.realLatency, "real-latency", 5*time.Millisecond, "part 2: also run the pair through a proxy delaying every response by this much (0: skip)")
	fs.IntVar(&o.queuedHosts, "queued-hosts", 3000, "part 3a: hosts of the URLs given to bin/seeder")
	fs.IntVar(&o.queuedPaths, "queued-paths", 100, "part 3a: URLs per host")
	fs.IntVar(&o.bigHosts, "big-hosts", 100000, "part 3c: hosts of the big frontier")
	fs.IntVar(&o.bigPaths, "big-paths", 100, "part 3c: URLs per host")
	fs.DurationVar(&o.bigTime, "big-time", 5*time.Minute, "part 3c: stop seeding after this long (the report gives the count reached)")
	fs.DurationVar(&o.trapTime, "trap-time", 40*time.Second, "part 4: how long one worker crawls each trap")
	fs.IntVar(&o.trapAbortMB, "trap-abort-mb", 512, "part 4: stop a trap early once ZooKeeper's data grew by this many MB (its heap is 1 GiB)")
	fs.IntVar(&o.ceilingClients, "ceiling-clients", 8, "part 5: ZooKeeper sessions")
	fs.IntVar(&o.ceilingInFlight, "ceiling-inflight", 8, "part 5: multis in flight per session")
	fs.DurationVar(&o.ceilingTime, "ceiling-time", 5*time.Second, "part 5: how long each server is measured")
	fs.IntVar(&o.killHosts, "takeover-hosts", 30, "part 6: synthetic web hosts")
	fs.IntVar(&o.killPages, "takeover-pages", 200, "part 6: pages per host")
	fs.Float64Var(&o.killRate, "takeover-rate", 2, "part 6: per_host_rate_per_s (claims are held while items wait on it)")
	fs.DurationVar(&o.killTick, "takeover-tick", 500*time.Millisecond, "part 6: ZooKeeper tickTime (session timeouts must lie in 2..20 ticks)")
	fs.DurationVar(&o.killSession, "takeover-session-timeout", 4*time.Second, "part 6: the workers' --session-timeout")
	fs.StringVar(&o.baselineBin, "baseline-bin", "", "part 1: also run 3 workers with the seeder and crawler in this directory (the previous frontier layout, built by scripts/bench.sh), in the same rounds")
	fs.StringVar(&o.baselineName, "baseline-name", "layout 1", "part 1: how the report names the --baseline-bin build")
	fs.StringVar(&o.fromJSON, "from-json", "", "measure nothing: render --md (and the table) again from an earlier run's results.json")
	fs.StringVar(&o.command, "command", "", "the command that ran this benchmark, for the report (default: this command line)")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, os.LookupEnv); err != nil {
		return o, nil, err
	}
	if fs.NArg() > 0 {
		return o, nil, cli.Usage("unexpected arguments %q", fs.Args())
	}
	return o, newLogger, o.check()
}

// check validates the options. Errors: cli.Usage naming the flag.
func (o *options) check() error {
	for _, p := range o.only {
		if !slices.Contains(parts, p) {
			return cli.Usage("--only %q: want some of %s", p, strings.Join(parts, ", "))
		}
	}
	if o.scope != "any" && o.scope != "same_host" {
		return cli.Usage("--scope %q: want any or same_host", o.scope)
	}
	for _, n := range o.workers {
		if n < 1 || n > 16 {
			return cli.Usage("--workers %d: want 1..16", n)
		}
	}
	switch {
	case o.queuedHosts < 1 || o.queuedPaths < 1:
		return cli.Usage("--queued-hosts %d, --queued-paths %d: want at least 1 each", o.queuedHosts, o.queuedPaths)
	case o.bigHosts < 1 || o.bigPaths < 1 || o.bigHosts > 999999:
		return cli.Usage("--big-hosts %d, --big-paths %d: want 1..999999 hosts and at least 1 path", o.bigHosts, o.bigPaths)
	case o.bigTime <= 0 || o.trapTime <= 0 || o.ceilingTime <= 0:
		return cli.Usage("--big-time, --trap-time and --ceiling-time must be positive")
	case o.ceilingClients < 1 || o.ceilingInFlight < 1:
		return cli.Usage("--ceiling-clients %d, --ceiling-inflight %d: want at least 1 each", o.ceilingClients, o.ceilingInFlight)
	case o.trapAbortMB < 1:
		return cli.Usage("--trap-abort-mb %d: want at least 1", o.trapAbortMB)
	}
	return nil
}

// prepare checks that --bin (and --baseline-bin) hold the seeder and the
// crawler, makes those paths absolute, creates --out and fills in --json's
// default. Errors name the flag.
func (o *options) prepare() error {
	for _, d := range []struct{ flag, dir, fix string }{{"--bin", o.binDir, "run make build"}, {"--baseline-bin", o.baselineBin, "scripts/bench.sh builds it"}} {
		if d.dir == "" {
			continue
		}
		for _, name := range []string{"seeder", "crawler"} {
			if st, err := os.Stat(filepath.Join(d.dir, name)); err != nil || st.IsDir() {
				return fmt.Errorf("%s %s: no %s there (%s)", d.flag, d.dir, name, d.fix)
			}
		}
	}
	var err error
	if o.binDir, err = filepath.Abs(o.binDir); err != nil {
		return err
	}
	if o.baselineBin != "" {
		if o.baselineBin, err = filepath.Abs(o.baselineBin); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", o.outDir, err)
	}
	if o.jsonPath == "" {
		o.jsonPath = filepath.Join(o.outDir, "results.json")
	}
	return nil
}

// bench holds what every part shares.
type bench struct {
	opts   options
	log    *slog.Logger // progress, to stderr
	quiet  *slog.Logger // ZooKeeper, web and client chatter: none
	zkVer  string
	shared map[bool]*benchZK // parts 1, 2 and 5, by forceSync
	warmS  []float64         // warm-up crawl of each shared server
	// binDir, when set, replaces --bin while a baseline run of part 1
	// runs (runs are sequential).
	binDir string
}

// bin returns the path of bin/name (or of the baseline's, during a
// baseline run).
func (b *bench) bin(name string) string {
	if b.binDir != "" {
		return filepath.Join(b.binDir, name)
	}
	return filepath.Join(b.opts.binDir, name)
}

// runs reports whether part name is to run.
func (b *bench) runs(name string) bool {
	if len(b.opts.only) > 0 {
		return slices.Contains(b.opts.only, name)
	}
	return !*b.opts.skip[name]
}

func run(ctx context.Context, args []string) error {
	o, newLogger, err := parseOptions(args)
	if err != nil {
		return err
	}
	if o.fromJSON != "" {
		return render(o.fromJSON, o.mdPath)
	}
	if o.command == "" {
		o.command = "crawlbench " + strings.Join(args, " ")
	}
	log, err := newLogger(os.Stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	if err := o.prepare(); err != nil {
		return err
	}
	b := &bench{opts: o, log: log, quiet: slog.New(slog.NewTextHandler(io.Discard, nil)), shared: map[bool]*benchZK{}}
	defer b.closeShared()
	rep := b.runParts(ctx)
	if err := b.write(rep); err != nil {
		return err
	}
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d part(s) failed: %s", len(rep.Errors), strings.Join(rep.Errors, "; "))
	}
	return nil
}

// runParts runs the parts asked for, in the order that lets parts 1, 2
// and 5 share their warm servers, and returns what they measured; a part
// that fails is named in Errors and the others still run.
func (b *bench) runParts(ctx context.Context) *report.Results {
	o := b.opts
	rep := &report.Results{Started: time.Now(), Machine: machineInfo(), Command: o.command, OutDir: o.outDir,
		SharedZKJavaOpts: zkJavaOpts()}
	rep.Machine.LoadStart = loadavg()
	step := func(name, title string, fn func() error) {
		if !b.runs(name) || ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		if err := fn(); err != nil {
			b.log.Error(title+" failed", "error", err)
			rep.Errors = append(rep.Errors, title+": "+err.Error())
		}
		rep.PartS = append(rep.PartS, report.PartTime{Part: name, S: time.Since(t0).Seconds()})
	}
	step("synth", "part 1", func() (err error) { rep.Synth, err = b.runSynth(ctx); return })
	step("real", "part 2", func() (err error) { rep.Real, err = b.runReal(ctx); return })
	step("ceiling", "part 5", func() (err error) { rep.Ceiling, err = b.runCeiling(ctx, rep.Synth); return })
	rep.WarmupS = b.warmS
	b.closeShared()
	step("queued", "part 3a", func() (err error) { rep.Queued, err = b.runQueued(ctx); return })
	step("big", "part 3c", func() (err error) { rep.Big, err = b.runBig(ctx); return })
	step("trap", "part 4", func() (err error) { rep.Trap, err = b.runTraps(ctx); return })
	step("takeover", "part 6", func() (err error) { rep.Takeover, err = b.runTakeover(ctx); return })
	rep.Finished = time.Now()
	rep.Machine.LoadEnd = loadavg()
	rep.Machine.ZooKeeper = b.zkVer
	return rep
}

// write writes rep as JSON to --json, prints its table and writes the
// report to --md (empty: none). Errors name the file.
func (b *bench) write(rep *report.Results) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("results as JSON: %w", err)
	}
	if err := os.WriteFile(b.opts.jsonPath, data, 0o644); err != nil {
		return err
	}
	if err := writeReport(rep, b.opts.mdPath); err != nil {
		return err
	}
	if b.opts.mdPath != "" {
		b.log.Info("report written", "md", b.opts.mdPath, "json", b.opts.jsonPath)
	}
	return nil
}

// render reads a results.json and writes its table to stdout and its
// report to mdPath (empty: none). Errors name the file.
func render(jsonPath, mdPath string) error {
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return fmt.Errorf("--from-json: %w", err)
	}
	var rep report.Results
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("--from-json %s: not a crawlbench results.json: %w", jsonPath, err)
	}
	return writeReport(&rep, mdPath)
}

// writeReport prints rep's table to stdout and writes BENCHMARKS.md to
// mdPath (empty: none).
func writeReport(rep *report.Results, mdPath string) error {
	table := rep.Table()
	fmt.Println(table)
	if mdPath == "" {
		return nil
	}
	if err := os.WriteFile(mdPath, []byte(rep.Markdown(table)), 0o644); err != nil {
		return fmt.Errorf("--md %s: %w", mdPath, err)
	}
	return nil
}

// round rounds v to d decimals (for logs).
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}
