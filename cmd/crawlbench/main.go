// Command crawlbench is zkcrawl's benchmark driver (`make bench` runs it
// through scripts/bench.sh). It measures, on this machine:
//
//  1. the synthetic web crawled by 1, 2 and 3 bin/crawler processes with
//     rate limits off: pages/s, CPU per page, ZooKeeper writes per page
//     (zxid delta), claim latency (the workers' queue_claim histograms),
//     peak RSS per worker, and correctness against the ground truth;
//  2. the real-site comparison with wget -r: scripts/demo-real.sh's setup
//     (the PostgreSQL manual served by nginx), timed like part 1, on
//     loopback and through a proxy that adds latency per response;
//  3. the frontier at scale: 1,000,000 URLs seeded, the largest queue
//     parent, ZooKeeper memory and snapshot size, claim latency;
//  4. kill-to-takeover: how long the items of a SIGKILLed worker wait
//     before another worker claims (or completes) them.
//
// It prints one table and writes it, with the machine and the commands to
// rerun, to BENCHMARKS.md.
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
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/internal/cli"
)

const about = `Runs zkcrawl's benchmark: the synthetic web crawled by 1, 2 and 3 worker
processes (pages/s, CPU and ZooKeeper writes per page, claim latency, RSS,
correctness), the real-site comparison with wget -r (the PostgreSQL manual
served by nginx, as scripts/demo-real.sh does, on loopback and with added
latency), the frontier with 1,000,000 URLs (seeding rate,
largest queue parent, ZooKeeper memory and snapshot, claim latency), and the
takeover time after a worker is killed. It prints one table and writes it to
--md with the machine and the commands to rerun. Every process it starts is
stopped when it ends or is interrupted.`

const examples = `  crawlbench --bin ./bin --out ./out/bench --md BENCHMARKS.md
  crawlbench --skip-scale --workers 3 --repeat 1 --md ''   # quick: parts 1 (3 workers), 2 and 4
  crawlbench --skip-synth --skip-scale --skip-takeover # part 2 only`

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
	skipSynth, skipScale, skipKill   bool
	scaleHosts, scalePaths           int
	scaleClaims                      int
	scaleHeap                        string
	killHosts, killPages             int
	killRate                         float64
	killTick, killSession            time.Duration
	skipReal                         bool
	realInFlight, realConcurrency    int
	realLatency                      time.Duration
	command                          string
	warmupItems                      int
}

// bench holds what every part shares.
type bench struct {
	opts   options
	outDir string
	log    *slog.Logger // progress, to stderr
	quiet  *slog.Logger // ZooKeeper, web and client chatter: warnings only
	zkVer  string
	shared *sharedZK // parts 1 and 2
}

func (b *bench) bin(name string) string { return filepath.Join(b.opts.binDir, name) }

// zkJavaOpts are the JVM flags added to testenv's: the full JIT (testenv
// stops at C1 to start test JVMs fast; a benchmark wants a server as
// deployed) and the heap.
func (b *bench) zkJavaOpts(heap string) []string {
	return []string{"-Xms256m", "-Xmx" + heap, "-XX:TieredStopAtLevel=4"}
}

// noteZK records the ZooKeeper version once.
func (b *bench) noteZK(ctx context.Context, addr string) {
	if b.zkVer != "" {
		return
	}
	if s, err := readSrvr(ctx, addr); err == nil {
		b.zkVer = s.Version
	}
}

func run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet("crawlbench", "crawlbench [flags]", about, examples)
	var o options
	stamp := time.Now().Format("20060102-150405")
	fs.StringVar(&o.binDir, "bin", "bin", "directory holding seeder and crawler (make build)")
	fs.StringVar(&o.outDir, "out", filepath.Join("out", "bench-"+stamp), "directory for logs, crawl output and results.json")
	fs.StringVar(&o.mdPath, "md", "BENCHMARKS.md", "write the report here ('' = do not write)")
	fs.StringVar(&o.jsonPath, "json", "", "write every figure as JSON here (default OUT/results.json)")
	fs.IntSliceVar(&o.workers, "workers", []int{1, 2, 3}, "part 1: worker counts to run")
	fs.IntVar(&o.hosts, "hosts", 100, "part 1: synthetic web hosts")
	fs.IntVar(&o.pagesPerHost, "pages-per-host", 200, "part 1: pages per host")
	fs.IntVar(&o.links, "links", 8, "part 1: random links per page")
	fs.Float64Var(&o.cross, "cross", 0.2, "part 1: share of links to another host")
	fs.StringVar(&o.scope, "scope", "any", "part 1: crawl scope: any or same_host")
	fs.IntVar(&o.synthInFlight, "in-flight", 8, "part 1: per_host_max_in_flight")
	fs.IntVar(&o.repeat, "repeat", 2, "part 1: rounds of the worker counts; the table keeps each count's fastest run")
	fs.DurationVar(&o.crawlTimeout, "crawl-timeout", 5*time.Minute, "part 1: give up on a crawl after this long")
	fs.BoolVar(&o.skipSynth, "skip-synth", false, "skip part 1")
	fs.BoolVar(&o.skipScale, "skip-scale", false, "skip part 3 (the 1,000,000-URL frontier, a few minutes)")
	fs.BoolVar(&o.skipKill, "skip-takeover", false, "skip part 4")
	fs.IntVar(&o.scaleHosts, "scale-hosts", 10000, "part 3: hosts")
	fs.IntVar(&o.scalePaths, "scale-paths", 100, "part 3: paths per host")
	fs.IntVar(&o.scaleClaims, "scale-claims", 2000, "part 3: claims (each released) for the latency figures")
	fs.StringVar(&o.scaleHeap, "scale-heap", "2g", "part 3: ZooKeeper JVM -Xmx")
	fs.IntVar(&o.killHosts, "takeover-hosts", 30, "part 4: synthetic web hosts")
	fs.IntVar(&o.killPages, "takeover-pages", 200, "part 4: pages per host")
	fs.Float64Var(&o.killRate, "takeover-rate", 2, "part 4: per_host_rate_per_s (claims are held while items wait on it)")
	fs.DurationVar(&o.killTick, "takeover-tick", 500*time.Millisecond, "part 4: ZooKeeper tickTime (session timeouts must lie in 2..20 ticks)")
	fs.DurationVar(&o.killSession, "takeover-session-timeout", 4*time.Second, "part 4: the workers' --session-timeout")
	fs.BoolVar(&o.skipReal, "skip-real", false, "skip part 2 (the PostgreSQL manual served by nginx, zkcrawl vs wget -r)")
	fs.IntVar(&o.realInFlight, "real-in-flight", 8, "part 2: per_host_max_in_flight")
	fs.IntVar(&o.realConcurrency, "real-concurrency", 16, "part 2: worker_concurrency")
	fs.DurationVar(&o.realLatency, "real-latency", 5*time.Millisecond, "part 2: also run the pair through a proxy delaying every response by this much (0: skip)")
	fs.StringVar(&o.command, "command", "", "the command that ran this benchmark, for the report (default: this command line)")
	fs.IntVar(&o.warmupItems, "warmup-items", 20000, "parts 1 and 2: items enqueued, claimed and completed to warm the ZooKeeper JVM up first")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usage("unexpected arguments %q", fs.Args())
	}
	if o.scope != "any" && o.scope != "same_host" {
		return cli.Usage("--scope %q: want any or same_host", o.scope)
	}
	for _, n := range o.workers {
		if n < 1 || n > 16 {
			return cli.Usage("--workers %d: want 1..16", n)
		}
	}
	if o.command == "" {
		o.command = "crawlbench " + strings.Join(args, " ")
	}
	log, err := newLogger(os.Stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	for _, name := range []string{"seeder", "crawler"} {
		if st, err := os.Stat(filepath.Join(o.binDir, name)); err != nil || st.IsDir() {
			return fmt.Errorf("--bin %s: no %s there (run make build)", o.binDir, name)
		}
	}
	abs, err := filepath.Abs(o.binDir)
	if err != nil {
		return err
	}
	o.binDir = abs
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", o.outDir, err)
	}
	if o.jsonPath == "" {
		o.jsonPath = filepath.Join(o.outDir, "results.json")
	}
	b := &bench{
		opts:   o,
		outDir: o.outDir,
		log:    log,
		quiet:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	defer func() {
		if b.shared != nil {
			b.shared.close()
		}
	}()
	rep := &report{Started: time.Now(), Machine: machineInfo(), Command: o.command, OutDir: o.outDir,
		WarmupItems: o.warmupItems, SharedZKJavaOpts: b.zkJavaOpts("1g")}
	rep.Machine.LoadStart = loadavg()

	var errs []string
	fail := func(part string, err error) {
		b.log.Error(part+" failed", "error", err)
		errs = append(errs, part+": "+err.Error())
	}
	if !o.skipSynth {
		if rep.Synth, err = b.runSynth(ctx); err != nil {
			fail("part 1", err)
		}
	}
	if !o.skipReal && ctx.Err() == nil {
		if rep.Real, err = b.runReal(ctx); err != nil {
			fail("part 2", err)
		}
	}
	if b.shared != nil {
		rep.WarmupS = b.shared.warmS
		b.shared.close()
		b.shared = nil
	}
	if !o.skipScale && ctx.Err() == nil {
		if rep.Scale, err = b.runScale(ctx); err != nil {
			fail("part 3", err)
		}
	}
	if !o.skipKill && ctx.Err() == nil {
		if rep.Takeover, err = b.runTakeover(ctx); err != nil {
			fail("part 4", err)
		}
	}
	rep.Finished = time.Now()
	rep.Machine.LoadEnd = loadavg()
	rep.Machine.ZooKeeper = b.zkVer
	rep.Errors = errs

	data, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(o.jsonPath, data, 0o644); err != nil {
		return err
	}
	table := rep.table()
	fmt.Println(table)
	if o.mdPath != "" {
		if err := os.WriteFile(o.mdPath, []byte(rep.markdown(table)), 0o644); err != nil {
			return fmt.Errorf("--md %s: %w", o.mdPath, err)
		}
		b.log.Info("report written", "md", o.mdPath, "json", o.jsonPath)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d part(s) failed: %s", len(errs), strings.Join(errs, "; "))
	}
	return nil
}

// loadavg returns the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// round rounds v to d decimals (for logs).
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}
