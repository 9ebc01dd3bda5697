// Command crawlbench is zkcrawl's benchmark driver (`make bench` runs it
// through scripts/bench.sh): six parts, one file each, listed by --help.
// It reads zkcrawl's state only through the packages' own APIs (frontier,
// coord's Queue, Backlog and Members) and ZooKeeper's only through its four
// letter words (testenv). The parts fill the structs of package report
// (results.json), which renders the table and BENCHMARKS.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

const about = `Runs zkcrawl's benchmark parts (see --only) against their targets, on
ZooKeeper with forceSync=yes (production's default) and, for every write
and speed figure, also forceSync=no; parts 1, 2 and 5 also on a 3-node
ensemble on loopback. It prints one table and writes it to
--md with the machine and the commands to rerun. Every process it starts
is stopped when it ends or is interrupted.`

const examples = `  crawlbench --bin ./bin --out ./out/bench --md BENCHMARKS.md
  crawlbench --skip-big --skip-takeover --skip-ensemble --md ''   # quick: no 10M frontier, kill test, quorum
  crawlbench --only real                              # part 2 only
  crawlbench --only trap --trap-time 20s --md ''      # part 4, shorter`

func main() { cli.Main("crawlbench", run) }

// options are the command-line settings.
type options struct {
	binDir, outDir, mdPath    string
	only                      []string
	skip                      map[string]*bool // --skip-<part>, --skip-ensemble
	workers                   []int
	hosts, pagesPerHost       int
	bigURLs, bigWave          int
	repeat, realRepeat        int
	recrawlPairs              int
	bigTime, trapTime         time.Duration
	bigNoSync, recrawlAB      bool
	baselineBin, baselineName string
	command, bigHeap          string
}

// parts are the benchmark's parts, by the name --only and --skip-* use,
// and what each is, for --help.
var parts = []struct{ name, desc string }{
	{"synth", "part 1 (synthetic web, 1/2/3 workers; also part 3b)"},
	{"real", "part 2 (PostgreSQL manual, zkcrawl vs wget)"},
	{"queued", "part 3a (300,000 URLs via bin/seeder)"},
	{"big", "part 3c (the --big-urls frontier, seeded and drained, each up to --big-time)"},
	{"trap", "part 4 (crawler traps)"},
	{"ceiling", "part 5 (ZooKeeper write ceiling)"},
	{"takeover", "part 6 (kill-to-takeover)"},
}

// parseOptions defines the flags, parses args (and their environment
// variables, cli.Parse) and checks them. It returns the options and the
// logger the --log-* flags ask for. Errors: cli.Usage naming the flag.
func parseOptions(args []string) (options, func(io.Writer) (*slog.Logger, error), error) {
	fs := cli.NewFlagSet("crawlbench", "crawlbench [flags]", about, examples)
	o := options{skip: map[string]*bool{}}
	var names []string
	for _, p := range parts {
		names = append(names, p.name)
		o.skip[p.name] = fs.Bool("skip-"+p.name, false, "skip "+p.desc)
	}
	o.skip["ensemble"] = fs.Bool("skip-ensemble", false, "parts 1, 2 and 5: no runs on the 3-node ensemble")
	fs.StringVar(&o.binDir, "bin", "bin", "directory holding seeder and crawler (make build)")
	fs.StringVar(&o.outDir, "out", filepath.Join("out", "bench-"+time.Now().Format("20060102-150405")), "directory for logs, crawl output and results.json")
	fs.StringVar(&o.mdPath, "md", "BENCHMARKS.md", "write the report here ('' = do not write)")
	fs.StringSliceVar(&o.only, "only", nil, "run only these parts: "+strings.Join(names, ", "))
	fs.IntSliceVar(&o.workers, "workers", []int{1, 2, 3}, "part 1: worker counts to run")
	fs.IntVar(&o.hosts, "hosts", 100, "part 1: synthetic web hosts")
	fs.IntVar(&o.pagesPerHost, "pages-per-host", 200, "part 1: pages per host")
	fs.IntVar(&o.repeat, "repeat", 1, "part 1: rounds of the worker counts; the table keeps each count's fastest run")
	fs.IntVar(&o.realRepeat, "real-repeat", 5, "part 2: rounds of the loopback pair (wget, then zkcrawl on each ZooKeeper); the table shows the round of median ratio")
	fs.DurationVar(&o.bigTime, "big-time", 5*time.Minute, "part 3c: stop seeding, and the drain, after this long each (the report gives the count reached)")
	fs.IntVar(&o.bigURLs, "big-urls", 10_000_000, "part 3c: URLs to seed (100 per host)")
	fs.IntVar(&o.bigWave, "big-wave", 64, "part 3c: groups whose owners drain at once (64: all, as one worker owning them)")
	fs.StringVar(&o.bigHeap, "big-heap", "1g", "part 3c: the ZooKeeper JVM's -Xms and -Xmx")
	fs.BoolVar(&o.bigNoSync, "big-nosync", false, "part 3c: seed and drain again on forceSync=no, for its rates")
	fs.DurationVar(&o.trapTime, "trap-time", 40*time.Second, "part 4: how long one worker crawls each trap")
	fs.StringVar(&o.baselineBin, "baseline-bin", "", "part 1: also run 3 workers with the seeder and crawler in this directory (the previous frontier layout, built by scripts/bench.sh), in the same rounds")
	fs.BoolVar(&o.recrawlAB, "recrawl-ab", false, "part 1: also run 3 workers with config recrawl on (a continuous crawl's first pass), in the same rounds, before or after the plain run by turns")
	fs.IntVar(&o.recrawlPairs, "recrawl-pairs", 1, "part 1 with --recrawl-ab: on/off pairs of 3-worker runs per round and standalone server, each pair's order the other way; the pairs past the first add their own plain run, compared only with recrawl on")
	fs.StringVar(&o.baselineName, "baseline-name", "layout 1", "part 1: how the report names the --baseline-bin build")
	fs.StringVar(&o.command, "command", "", "the command that ran this benchmark, for the report (default: this command line)")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, os.LookupEnv); err != nil {
		return o, nil, err
	}
	if fs.NArg() > 0 {
		return o, nil, cli.Usage("unexpected arguments %q", fs.Args())
	}
	for _, p := range o.only {
		if !slices.Contains(names, p) {
			return o, nil, cli.Usage("--only %q: want some of %s", p, strings.Join(names, ", "))
		}
	}
	for _, n := range o.workers {
		if n < 1 || n > 16 {
			return o, nil, cli.Usage("--workers %d: want 1..16", n)
		}
	}
	if o.hosts < 1 || o.pagesPerHost < 1 || o.bigTime <= 0 || o.trapTime <= 0 || o.bigURLs < 1 || o.bigWave < 1 {
		return o, nil, cli.Usage("--hosts, --pages-per-host, --big-time, --big-urls, --big-wave and --trap-time must be positive")
	}
	return o, newLogger, nil
}

// prepare checks that --bin (and --baseline-bin) hold the seeder and the
// crawler, makes those paths absolute and creates --out. Errors name the
// flag.
func (o *options) prepare() error {
	for flag, dir := range map[string]*string{"--bin": &o.binDir, "--baseline-bin": &o.baselineBin} {
		if *dir == "" {
			continue
		}
		for _, name := range []string{"seeder", "crawler"} {
			if st, err := os.Stat(filepath.Join(*dir, name)); err != nil || st.IsDir() {
				return fmt.Errorf("%s %s: no %s there (make build, or scripts/bench.sh, builds it)", flag, *dir, name)
			}
		}
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return err
		}
		*dir = abs
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", o.outDir, err)
	}
	return nil
}

// bench holds what every part shares.
type bench struct {
	opts    options
	log     *slog.Logger               // progress, to stderr
	quiet   *slog.Logger               // ZooKeeper, web and client chatter: none
	zkVer   string                     // of the first server started
	shared  map[report.Server]*benchZK // parts 1, 2 and 5
	servers []report.Server            // theirs, in the order they run (--skip-ensemble: no Quorum)
	warmS   []float64                  // warm-up of each shared server, seconds
	binDir  string                     // replaces --bin while a baseline run of part 1 runs
}

// bin returns the path of bin/name (the baseline's during a baseline run).
func (b *bench) bin(name string) string { return filepath.Join(cmp.Or(b.binDir, b.opts.binDir), name) }

func run(ctx context.Context, args []string) error {
	o, newLogger, err := parseOptions(args)
	if err != nil {
		return err
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
	b := &bench{opts: o, log: log, quiet: slog.New(slog.DiscardHandler), shared: map[report.Server]*benchZK{}}
	if b.servers = []report.Server{report.Fsync, report.NoFsync, report.Quorum}; *o.skip["ensemble"] {
		b.servers = b.servers[:2]
	}
	defer b.closeShared()
	rep := b.runParts(ctx)
	jsonPath := filepath.Join(o.outDir, "results.json")
	data, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(jsonPath, data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	table := rep.Table()
	fmt.Println(table)
	if o.mdPath != "" {
		if err := os.WriteFile(o.mdPath, []byte(rep.Markdown(table)), 0o644); err != nil {
			return fmt.Errorf("--md %s: %w", o.mdPath, err)
		}
		b.log.Info("report written", "md", o.mdPath, "json", jsonPath)
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
	rep := &report.Results{Started: time.Now(), Machine: machineInfo(), Command: o.command, OutDir: o.outDir, SharedZKJavaOpts: zkJavaOpts}
	step := func(name, title string, fn func() error) {
		if (len(o.only) > 0 && !slices.Contains(o.only, name)) || (len(o.only) == 0 && *o.skip[name]) || ctx.Err() != nil {
			return
		}
		b.log.Info(title + " started")
		t0 := time.Now()
		if err := fn(); err != nil {
			b.log.Error(title+" failed", "error", err)
			rep.Errors = append(rep.Errors, title+": "+err.Error())
		}
		rep.PartS = append(rep.PartS, report.PartTime{Part: name, S: time.Since(t0).Seconds()})
		b.log.Info(title+" done", "took", time.Since(t0).Round(time.Second))
	}
	step("synth", "part 1", func() (err error) { rep.Synth, err = b.runSynth(ctx); return })
	step("real", "part 2", func() (err error) { rep.Real, err = b.runReal(ctx); return })
	step("ceiling", "part 5", func() (err error) { rep.Ceiling, err = b.runCeiling(ctx, rep.Synth); return })
	rep.WarmupS = b.warmS
	b.closeShared()
	step("queued", "part 3a", func() (err error) { rep.Queued, err = b.runQueued(ctx); return })
	step("big", "part 3c", func() (err error) { rep.Big, err = b.runBig(ctx, true); return })
	step("trap", "part 4", func() (err error) { rep.Trap, err = b.runTraps(ctx); return })
	step("takeover", "part 6", func() (err error) { rep.Takeover, err = b.runTakeover(ctx); return })
	rep.Finished = time.Now()
	rep.Machine.LoadEnd = loadavg()
	rep.Machine.ZooKeeper = b.zkVer
	return rep
}

// machineInfo reads the memory, the CPU model and the load average from
// /proc (the Prometheus procfs library), the kernel release and
// `java -version`; a figure it cannot read stays empty.
func machineInfo() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), LoadStart: loadavg()}
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if mi, err := fs.Meminfo(); err == nil && mi.MemTotal != nil {
			m.MemoryGiB = float64(*mi.MemTotal) / (1 << 20)
		}
		if cpus, err := fs.CPUInfo(); err == nil && len(cpus) > 0 {
			m.CPUModel = cpus[0].ModelName
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		m.Java, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	return m
}

// loadavg returns the 1, 5 and 15 minute load averages, "?" when
// /proc/loadavg cannot be read.
func loadavg() string {
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if l, err := fs.LoadAvg(); err == nil {
			return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
		}
	}
	return "?"
}
