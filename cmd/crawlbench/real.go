package main

// Part 2: the PostgreSQL manual served by nginx, mirrored by `wget -r --warc-file` and crawled
// by 3 workers, on loopback and through a proxy adding realLatency per response. One host is one
// shard group with one owner: one worker does all the fetching, by design.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/testenv"
)

const (
	pgDocs            = "/usr/share/doc/postgresql-doc-15/html" // the manual served (Debian package postgresql-doc-15)
	realLatency       = 5 * time.Millisecond                    // added to every response by the proxy of the second pair
	realWarmups       = 4                                       // unrecorded crawls that warm up a shared server part 1 did not use
	realNginxWorkers  = 2
	realInFlight      = 8  // per_host_max_in_flight
	realConcurrency   = 16 // worker_concurrency
	realIdleThreshold = 250 * time.Millisecond
)

// realConfig is the crawl config of part 2.
var realConfig = map[string]any{
	"allow_private_networks": true,
	"per_host_rate_per_s":    0,
	"per_host_max_in_flight": realInFlight,
	"worker_concurrency":     realConcurrency,
	"max_depth":              -1,
	"scope":                  "same_host",
}

// runReal runs part 2: nginx serving the manual, then the wget-vs-zkcrawl
// pair on loopback, --real-repeat rounds, and once through a DelayProxy.
func (b *bench) runReal(ctx context.Context) (*report.Real, error) {
	res := &report.Real{Docs: pgDocs, MaxInFlight: realInFlight, Concurrency: realConcurrency, NginxWorkers: realNginxWorkers}
	if _, err := os.Stat(filepath.Join(pgDocs, "index.html")); err != nil {
		return nil, fmt.Errorf("%s/index.html is missing: install Debian's postgresql-doc-15 (scripts/bench.sh does)", pgDocs)
	}
	out, err := exec.CommandContext(ctx, "wget", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("wget --version: %w (install wget; scripts/bench.sh does)", err)
	}
	res.Wget, _, _ = strings.Cut(string(out), "\n")
	dir, err := filepath.Abs(filepath.Join(b.opts.outDir, "real"))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	nginx, err := testenv.StartNginx(ctx, testenv.NginxConfig{Root: pgDocs, Dir: filepath.Join(dir, "nginx"), Workers: realNginxWorkers, Logger: b.quiet})
	if err != nil {
		return nil, err
	}
	defer nginx.Close()
	res.Nginx = nginx.Version
	for round := 1; round <= max(b.opts.realRepeat, 1); round++ {
		runs, err := b.realPair(ctx, nginx.URL, filepath.Join(dir, fmt.Sprint("loopback-", round)), report.RealRun{Round: round}, b.servers...)
		res.Runs = append(res.Runs, runs...)
		if err != nil {
			return res, err
		}
	}
	proxy, stopProxy, err := testenv.DelayProxy(nginx.URL, realLatency)
	if err != nil {
		return res, err
	}
	defer stopProxy()
	latency := report.RealRun{LatencyMS: float64(realLatency) / float64(time.Millisecond)}
	runs, err := b.realPair(ctx, proxy, filepath.Join(dir, "latency"), latency, report.Fsync)
	res.Runs = append(res.Runs, runs...)
	return res, err
}

// realPair mirrors base with wget (testenv.WgetMirror) into dir, then crawls it with zkcrawl
// once on each shared server in servers, each run filled in over pair.
func (b *bench) realPair(ctx context.Context, base, dir string, pair report.RealRun, servers ...report.Server) ([]report.RealRun, error) {
	m, err := testenv.WgetMirror(ctx, base+"index.html", dir)
	if err != nil {
		return nil, err
	}
	pair.WgetS, pair.WgetWARCMB, pair.WgetPages = m.Elapsed.Seconds(), float64(m.WARCBytes)/(1<<20), len(m.Pages)
	crawl := "pgdocs-" + filepath.Base(dir)
	var runs []report.RealRun
	for _, s := range servers {
		pair.Server = s
		// When part 1 did not warm this server up, unrecorded crawls of the manual do.
		zk, err := b.sharedServer(ctx, s, func(z *benchZK) error {
			for i := 1; i <= realWarmups; i++ {
				warm, name := pair, fmt.Sprintf("%s-warmup%d-%s", crawl, i, serverTag(s))
				if err := b.realCrawl(ctx, z, base, filepath.Join(dir, name), name, m.Pages, &warm); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return runs, err
		}
		run, name := pair, crawl+"-"+serverTag(s)
		if err := b.realCrawl(ctx, zk, base, filepath.Join(dir, name), name, m.Pages, &run); err != nil {
			return runs, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// realCrawl seeds base's index.html and crawls it with 3 workers on zk,
// filling in run's zkcrawl figures and comparing with wget's pages (want).
func (b *bench) realCrawl(ctx context.Context, zk *benchZK, base, dir, crawl string, want map[string]bool, run *report.RealRun) error {
	mark, err := zk.mark(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := b.seed(ctx, zk.addr, crawl, dir, realConfig, []string{base + "index.html"}, time.Minute); err != nil {
		return err
	}
	t1 := time.Now()
	run.SeedS = t1.Sub(t0).Seconds()
	f, r, err := b.runCrawl(ctx, zk, crawl, dir, 3, mark, nil)
	if err != nil {
		return err
	}
	defer f.kill()
	run.CrawlFigures = r.CrawlFigures
	run.ZKS, run.ZKCrawlS = r.end.Sub(t0).Seconds(), r.end.Sub(t1).Seconds()
	run.Ratio, run.CrawlRatio = run.ZKS/run.WgetS, run.ZKCrawlS/run.WgetS
	lines, err := f.stopAndRead()
	if err != nil {
		return err
	}
	run.ZKLines, run.WritesPerLine = len(lines), float64(run.ZKWrites)/float64(max(len(lines), 1))
	for i := 1; i < len(lines); i++ { // in time order: the pauses between lines
		gap := lines[i].TS.Sub(lines[i-1].TS).Seconds()
		run.LongestGapS = max(run.LongestGapS, gap)
		if gap > realIdleThreshold.Seconds() {
			run.IdleGapsS += gap
		}
	}
	final, count := testenv.FinalStatus(lines)
	for u, status := range final {
		if status == 200 {
			run.ZKPages++
			if !want[u] {
				run.Extra++
			}
		}
	}
	for u := range want {
		if final[u] != 200 {
			run.Missing++
		}
		if count[u] > 1 {
			run.Dups++
		}
	}
	b.log.Info("part 2 run done", "latency_ms", run.LatencyMS, "zk", run.Label(), "wget_s", run.WgetS,
		"zkcrawl_s", run.ZKS, "ratio", run.Ratio, "missing", run.Missing, "dups", run.Dups)
	return nil
}
