// Command testweb serves the deterministic synthetic web of package testenv
// on loopback for demos and shell-driven end-to-end tests.
//
//	testweb [--hosts 5] [--pages 50] [--links 8] [--cross 0.2] [--seed 1]
//	        [--features] [--crawl-delay 0s] [--slow-delay 2s] [--large-bytes N]
//	        [--robots-disallow /private/,...] [--robots-status 3=500,...]
//	        [--truth-file F [--ground-truth-depth N] [--scope same_host]
//	        [--obey-robots=true]]
//	testweb --wide [--hosts 1000] [--pages 10] [--pages-spread 0]
//	        [--latency-median 150ms] [--latency-p99 1s] [--slow-hosts N]
//	        [--dead-hosts N] [--reset-hosts N] [--timeout-hosts N]
//	        [--crawl-delay-hosts N --crawl-delay 2s] [--rate 1]
//	        [--max-in-flight 1] [--bound-file F] [--truth-file F]
//	testweb ... --change-min 2s --change-max 20s [--changes-file F]
//	testweb --spa [--pages 20] [--truth-file F]
//	testweb ... [--arrivals-file F]
//
// In every mode --arrivals-file logs every request the site answers as
// "unix_seconds<TAB>host:port<TAB>path<TAB>status<TAB>user_agent" (the
// arrival time to the microsecond; status 0 when nothing was sent), the
// site's own view of a crawl's politeness: robots.txt and requests that
// left no crawl-log line count too.
//
// With --change-max every host's "/" and /p/<n> change over time
// (testenv.WebMutate): each page's mean change interval is drawn
// log-uniformly from [--change-min, --change-max] by (--seed, host, path),
// the intervals are exponential, and each version is served with ETag
// "v<N>", Last-Modified its change time and 304 to a matching
// If-None-Match or If-Modified-Since. On SIGINT or SIGTERM every version
// from the start until then is written to --changes-file, one
// "url<TAB>version<TAB>unix_seconds<TAB>mean_s<TAB>digest" line each
// (time to the microsecond; digest of the body as "sha1:" base32, as a
// crawl log line names it), sorted by URL then version.
//
// With --wide it serves the wide web of testenv.WebWide (each host's "/"
// links all its pages; latency lognormal; slow, dead, resetting and
// timing-out hosts; Crawl-delay on some) and logs the politeness bound of a
// crawl at --rate requests/s per host (testenv.Web.PolitenessBound), writing
// it to --bound-file as "bound_s<TAB>seconds" lines if given.
//
// With --spa it serves the single-page-app fixture of testenv.StartSPA
// instead (an HTML shell whose script renders content and links from JSON,
// images lazy-loaded on scroll, a history.pushState route, web fonts on a
// second host), --pages pages (default 20) reachable only through links
// the script renders. --truth-file (or --truth) then writes its ground
// truth as JSON (testenv.SPATruth), found by rendering the live fixture in
// Chromium (an error when none is installed: make deps); --arrivals-file
// then logs the requests made after that render. It prints the one seed.
//
// It starts the web, writes the ground truth to --truth-file if given (one
// "status<TAB>depth<TAB>url" line per URL, sorted by URL; status 0 means
// "must not be fetched"), then prints the seed URLs one per line on stdout
// and runs until SIGINT or SIGTERM. Every flag can also come from the
// environment as ZKCRAWL_<FLAG> (internal/cli); a flag on the command line
// wins.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/testenv"
)

const about = `Serves the deterministic synthetic web of package testenv on loopback (one
127.0.0.1 port per virtual host) for demos and shell-driven end-to-end tests.
It writes the ground truth to --truth-file if given (one
"status<TAB>depth<TAB>url" line per URL, sorted; status 0 means "must not be
fetched"), prints the seed URLs one per line on stdout, and runs until SIGINT
or SIGTERM. With --change-max its pages change over time and, at exit, every
version is written to --changes-file. With --spa it serves the single-page-app
fixture (content and links rendered by script from JSON) and --truth-file
writes its ground truth as JSON, rendered live in Chromium.`

const examples = `  testweb --hosts 10 --pages 100 > seeds.txt &
  testweb --wide --hosts 1000 --pages 10 --truth-file truth.tsv --bound-file bound.tsv > seeds.txt &
  testweb --features --truth-file truth.tsv --ground-truth-depth 6 > seeds.txt &
  testweb --hosts 5 --pages 20 --change-min 2s --change-max 20s --changes-file changes.tsv > seeds.txt &
  testweb --spa --pages 20 --truth spa-truth.json --arrivals-file arrivals.tsv > seeds.txt &`

func main() {
	cli.Main("testweb", func(ctx context.Context, args []string) error {
		return run(ctx, args, os.LookupEnv, os.Stdout, os.Stderr)
	})
}

// run parses args (and ZKCRAWL_* variables through lookupEnv), serves the
// web until ctx ends, and returns the first error.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("testweb", "testweb [--hosts 5] [--pages 50] [--features] [--truth-file F] [flags]", about, examples)
	fs.SetOutput(stderr)
	var cfg testenv.WebConfig
	fs.IntVar(&cfg.Hosts, "hosts", 5, "number of virtual hosts (one loopback port each)")
	fs.IntVar(&cfg.PagesPerHost, "pages", 50, "pages /p/<n> per host")
	fs.IntVar(&cfg.LinksPerPage, "links", 8, "random links per page, besides the chain link")
	fs.Float64Var(&cfg.CrossHostShare, "cross", 0.2, "share (0..1) of random links to another host")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the link graph")
	fs.BoolVar(&cfg.Features, "features", false, "serve the special pages (redirects, traps, errors, non-HTML...)")
	fs.DurationVar(&cfg.CrawlDelay, "crawl-delay", 0, "Crawl-delay written to robots.txt when > 0")
	fs.DurationVar(&cfg.SlowDelay, "slow-delay", testenv.WebDefaultSlowDelay, "delay of /slow.html")
	fs.IntVar(&cfg.LargeBytes, "large-bytes", testenv.WebDefaultLargeBytes, "size in bytes of /large.html")
	fs.StringSliceVar(&cfg.RobotsDisallow, "robots-disallow", nil, "Disallow path prefixes for every host's robots.txt")
	robotsStatus := fs.StringToInt("robots-status", nil, "robots.txt status per host index, e.g. 3=500,4=404")
	truthFile := fs.String("truth-file", "", "write the ground truth to this file")
	fs.StringVar(truthFile, "truth", "", "same as --truth-file")
	truthDepth := fs.Int("ground-truth-depth", -1, "MaxDepth of the ground truth (-1: no limit; needs --truth-file)")
	scope := fs.String("scope", testenv.WebScopeSameHost, "scope of the ground truth: same_host, same_domain or any")
	obeyRobots := fs.Bool("obey-robots", true, "the ground truth obeys robots.txt")
	ww := testenv.DefaultWebWide(0, 0, 0) // latency defaults; hosts, pages and seed set below
	wide := fs.Bool("wide", false, "serve the wide web (defaults --hosts 1000 --pages 10; flat hosts, lognormal latency, faulty hosts) and print its politeness bound")
	fs.Float64Var(&ww.PagesSpread, "pages-spread", 0, "--wide: page counts uniform in pages x (1 ± this), 0..1")
	fs.DurationVar(&ww.Latency.Median, "latency-median", ww.Latency.Median, "--wide: median response latency (lognormal)")
	fs.DurationVar(&ww.Latency.P99, "latency-p99", ww.Latency.P99, "--wide: 99th percentile response latency")
	fs.DurationVar(&ww.Latency.Max, "latency-max", ww.Latency.Max, "--wide: cap of any one latency draw")
	fs.IntVar(&ww.SlowHosts, "slow-hosts", 0, "--wide: hosts answering --host-slow-delay later")
	fs.DurationVar(&ww.SlowDelay, "host-slow-delay", 2*time.Second, "--wide: extra delay of a slow host")
	fs.IntVar(&ww.DeadHosts, "dead-hosts", 0, "--wide: hosts refusing connections")
	fs.IntVar(&ww.ResetHosts, "reset-hosts", 0, "--wide: hosts resetting every connection")
	fs.IntVar(&ww.TimeoutHosts, "timeout-hosts", 0, "--wide: hosts never answering")
	fs.IntVar(&ww.CrawlDelayHosts, "crawl-delay-hosts", 0, "--wide: hosts whose robots.txt has Crawl-delay: --crawl-delay")
	rate := fs.Float64("rate", 1, "--wide: per_host_rate_per_s of the crawl the bound is for (0: unlimited)")
	maxInFlight := fs.Int("max-in-flight", 1, "--wide: per_host_max_in_flight of the crawl the bound is for")
	boundFile := fs.String("bound-file", "", "--wide: write the politeness bound to this file")
	fs.DurationVar(&cfg.Mutate.ChangeMin, "change-min", 0, "pages change: shortest mean change interval per page (needs --change-max)")
	fs.DurationVar(&cfg.Mutate.ChangeMax, "change-max", 0, "pages change: longest mean change interval per page (0: pages never change)")
	changesFile := fs.String("changes-file", "", "at exit, write every page version to this file (needs --change-max)")
	spa := fs.Bool("spa", false, "serve the single-page-app fixture (default --pages 20); --truth-file renders its truth in Chromium")
	arrivals := fs.String("arrivals-file", "", "log every request's arrival time, host:port, path and status to this file (the site's view of politeness)")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, lookupEnv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usage("unexpected arguments %q", fs.Args())
	}
	log, err := newLogger(stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	cfg.Logger = log
	if len(*robotsStatus) > 0 {
		cfg.RobotsStatus = map[int]int{}
		for k, v := range *robotsStatus {
			h, err := strconv.Atoi(k)
			if err != nil {
				return cli.Usage("--robots-status: host index %q: %v", k, err)
			}
			cfg.RobotsStatus[h] = v
		}
	}
	if *spa {
		for _, f := range []string{"wide", "hosts", "links", "cross", "seed", "features", "crawl-delay", "slow-delay", "large-bytes",
			"robots-disallow", "robots-status", "ground-truth-depth", "scope", "obey-robots", "pages-spread", "latency-median",
			"latency-p99", "latency-max", "slow-hosts", "host-slow-delay", "dead-hosts", "reset-hosts", "timeout-hosts",
			"crawl-delay-hosts", "rate", "max-in-flight", "bound-file", "change-min", "change-max", "changes-file"} {
			if fs.Changed(f) {
				return cli.Usage("--%s does not apply to --spa", f)
			}
		}
		o := spaOptions{pages: testenv.SPADefaultPages, truthFile: *truthFile, arrivals: *arrivals}
		if fs.Changed("pages") {
			o.pages = cfg.PagesPerHost
		}
		return runSPA(ctx, o, log, stdout)
	}
	if (*changesFile != "" || cfg.Mutate.ChangeMin != 0) && cfg.Mutate.ChangeMax == 0 {
		return cli.Usage("--change-min and --changes-file need --change-max")
	}
	if cfg.Mutate.ChangeMax != 0 && cfg.Mutate.ChangeMin == 0 {
		return cli.Usage("--change-max needs --change-min")
	}
	if fs.Changed("ground-truth-depth") && *truthFile == "" {
		return cli.Usage("--ground-truth-depth needs --truth-file")
	}
	if *wide {
		ww.Seed, ww.Hosts, ww.Pages, ww.CrawlDelay = cfg.Seed, cfg.Hosts, cfg.PagesPerHost, cfg.CrawlDelay
		if !fs.Changed("hosts") {
			ww.Hosts = 1000
		}
		if !fs.Changed("pages") {
			ww.Pages = 10
		}
		if cfg.Features || len(cfg.RobotsDisallow) > 0 || len(cfg.RobotsStatus) > 0 || fs.Changed("links") || fs.Changed("cross") {
			return cli.Usage("--wide: --features, --links, --cross, --robots-disallow and --robots-status do not apply")
		}
		wcfg, err := ww.Config()
		if err != nil {
			return cli.Usage("%v", err)
		}
		wcfg.Logger = log
		wcfg.Mutate = cfg.Mutate
		cfg = wcfg
	} else {
		for _, f := range []string{"pages-spread", "latency-median", "latency-p99", "latency-max", "slow-hosts", "host-slow-delay",
			"dead-hosts", "reset-hosts", "timeout-hosts", "crawl-delay-hosts", "rate", "max-in-flight", "bound-file"} {
			if fs.Changed(f) {
				return cli.Usage("--%s needs --wide", f)
			}
		}
	}

	web, err := testenv.StartWeb(ctx, cfg)
	if err != nil {
		return err
	}
	defer web.Close()
	stopArrivals, err := logArrivals(*arrivals, web.LogArrivals)
	if err != nil {
		return err
	}
	defer stopArrivals()
	if *truthFile != "" || *wide {
		truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: *truthDepth, Scope: *scope, ObeyRobots: *obeyRobots})
		if err != nil {
			return err
		}
		if *truthFile != "" {
			if err := writeTruth(*truthFile, truth); err != nil {
				return err
			}
			log.Info("ground truth written", "file", *truthFile, "urls", len(truth), "max_depth", *truthDepth, "scope", *scope)
		}
		if *wide {
			if err := reportBound(web, truth, *rate, *maxInFlight, *boundFile, stderr); err != nil {
				return err
			}
		}
	}
	out := bufio.NewWriter(stdout)
	for _, s := range web.Seeds() {
		fmt.Fprintln(out, s)
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write seeds: %w", err)
	}
	log.Info("serving until SIGINT or SIGTERM", "hosts", len(web.Hosts()), "pages", web.Pages())
	<-ctx.Done()
	stop := time.Now()
	err = web.Close()
	if *changesFile != "" {
		changes := web.Changes(stop)
		err = errors.Join(err, writeChanges(*changesFile, changes))
		log.Info("page versions written", "file", *changesFile, "versions", len(changes))
	}
	return err
}

// logArrivals opens path (none when "") and hands it to set, the web's
// LogArrivals, for --arrivals-file; stop hands nil and closes the file.
// Errors: the file's creation, naming the flag.
func logArrivals(path string, set func(io.Writer)) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--arrivals-file: %w", err)
	}
	set(f)
	return func() {
		set(nil)
		_ = f.Close()
	}, nil
}

// writeChanges writes "url\tversion\tunix_seconds\tmean_s\tdigest" lines
// (as Web.Changes orders them) atomically.
func writeChanges(path string, changes []testenv.WebChange) error {
	return writeAtomic(path, "--changes-file", func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for _, c := range changes {
			fmt.Fprintf(bw, "%s\t%d\t%.6f\t%.3f\t%s\n", c.URL, c.Version,
				float64(c.Time.UnixMicro())/1e6, c.Mean.Seconds(), c.Digest)
		}
		return bw.Flush()
	})
}

// reportBound prints the politeness bound of crawling truth to stderr and,
// when path is not "", writes it there as "key<TAB>value" lines (bound_s,
// host, requests, rate_per_s, max_in_flight), atomically.
func reportBound(web *testenv.Web, truth map[string]testenv.WebExpect, rate float64, maxInFlight int, path string, stderr io.Writer) error {
	b, err := web.PolitenessBound(truth, rate, maxInFlight)
	if err != nil {
		return cli.Usage("%v", err)
	}
	text := fmt.Sprintf("bound_s\t%.3f\nhost\t%s\nrequests\t%d\nrate_per_s\t%g\nmax_in_flight\t%d\n",
		b.Bound.Seconds(), web.Hosts()[b.Host], b.Requests, rate, maxInFlight)
	fmt.Fprintf(stderr, "testweb: politeness bound %.3f s (host %s; %d requests at %g/s per host, %d in flight per host)\n",
		b.Bound.Seconds(), web.Hosts()[b.Host], b.Requests, rate, maxInFlight)
	if path == "" {
		return nil
	}
	return writeAtomic(path, "--bound-file", func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}

// writeTruth writes "status\tdepth\turl" lines sorted by URL, atomically
// (temporary file then rename), so a script never reads half a file.
func writeTruth(path string, truth map[string]testenv.WebExpect) error {
	urls := make([]string, 0, len(truth))
	for u := range truth {
		urls = append(urls, u)
	}
	slices.Sort(urls)
	return writeAtomic(path, "--truth-file", func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for _, u := range urls {
			e := truth[u]
			fmt.Fprintf(bw, "%d\t%d\t%s\n", e.Status, e.Depth, u)
		}
		return bw.Flush()
	})
}

// writeAtomic writes path through write, by a temporary file then rename,
// so a script never reads half a file; errors name flag and path.
func writeAtomic(path, flag string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("%s %q: %w", flag, path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("%s %q: %w", flag, path, err)
	}
	if err := errors.Join(write(tmp), tmp.Close()); err != nil {
		return fmt.Errorf("%s %q: %w", flag, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s %q: %w", flag, path, err)
	}
	return nil
}
