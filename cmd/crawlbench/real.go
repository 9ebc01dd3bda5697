package main

// Part 2: a real site. scripts/demo-real.sh's logic, timed the way part 1
// is: nginx serves Debian's PostgreSQL 15 HTML manual on a free loopback
// port; `wget -r -np -nv --warc-file` mirrors it and writes WARC too
// (timed); then zkcrawl crawls the same start URL with bin/seeder and 3
// bin/crawler workers, on the forceSync=yes and on the forceSync=no
// ZooKeeper, each timed from the seeder's start to the last crawl log line
// (the crawl then confirmed done with frontier.Pending; no
// --exit-when-done quiet period). Every HTML page wget fetched must be in
// the crawl logs exactly once with status 200.
//
// One host is one shard group, and a group has one owner, so one worker
// does all the fetching (politeness in one process, by design); the
// per_host_max_in_flight setting decides how parallel that is.
//
// Loopback answers in microseconds, which no real site does; so the pair is
// run a second time through a proxy in this process that delays every
// response by --real-latency (a nearby server's round trip), where wget's
// one request at a time meets zkcrawl's per_host_max_in_flight.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// pgDocs is the manual served (Debian package postgresql-doc-15).
const pgDocs = "/usr/share/doc/postgresql-doc-15/html"

// runReal runs part 2: nginx serving the manual, then the wget-vs-zkcrawl
// pair on loopback and, with --real-latency, through the delaying proxy.
func (b *bench) runReal(ctx context.Context) (*report.Real, error) {
	res := &report.Real{Docs: pgDocs, MaxInFlight: b.opts.realInFlight, Concurrency: b.opts.realConcurrency, NginxWorkers: 2}
	if _, err := os.Stat(filepath.Join(pgDocs, "index.html")); err != nil {
		return nil, fmt.Errorf("%s/index.html is missing: install Debian's postgresql-doc-15 (scripts/bench.sh does)", pgDocs)
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	out, err := exec.CommandContext(ctx, nginx, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nginx -v: %w (install nginx; scripts/bench.sh does)", err)
	}
	res.Nginx = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version:"))
	out, err = exec.CommandContext(ctx, "wget", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("wget --version: %w (install wget; scripts/bench.sh does)", err)
	}
	res.Wget = strings.SplitN(string(out), "\n", 2)[0]
	b.log.Info("part 2: PostgreSQL docs, wget vs zkcrawl", "docs", pgDocs, "nginx", res.Nginx)

	dir, err := filepath.Abs(filepath.Join(b.opts.outDir, "real"))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	port, stop, err := b.startNginx(ctx, nginx, filepath.Join(dir, "nginx"), res.NginxWorkers)
	if err != nil {
		return nil, err
	}
	defer stop()
	origin := fmt.Sprintf("http://127.0.0.1:%d/", port)

	// Loopback timings move by 10-20% from run to run (a 1.2 s crawl on
	// two shared cores): the pair runs --real-repeat rounds and the table
	// takes each ZooKeeper's round of median ratio (realPick).
	for round := 1; round <= max(b.opts.realRepeat, 1); round++ {
		sub := "loopback"
		if round > 1 {
			sub = fmt.Sprintf("loopback-%d", round)
		}
		runs, err := b.realPair(ctx, origin, filepath.Join(dir, sub), fmt.Sprintf("pgdocs-%d", round), res, 0, []bool{true, false})
		for i := range runs {
			runs[i].Round = round
		}
		res.Runs = append(res.Runs, runs...)
		if err != nil {
			return res, err
		}
	}
	if d := b.opts.realLatency; d > 0 {
		proxy, stopProxy, err := startDelayProxy(origin, d)
		if err != nil {
			return res, err
		}
		defer stopProxy()
		runs, err := b.realPair(ctx, proxy, filepath.Join(dir, "latency"), "pgdocs-latency", res, d, []bool{true})
		res.Runs = append(res.Runs, runs...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// startNginx serves pgDocs on a free loopback port with its config, pid
// file and logs in dir, and returns the port and a stop function.
func (b *bench) startNginx(ctx context.Context, nginx, dir string, workers int) (int, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, err
	}
	// nginx's workers may run as another user: they need to reach dir.
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o005 != 0o005 {
			_ = os.Chmod(d, st.Mode().Perm()|0o055)
		}
	}
	ports, err := testenv.FreePorts(1)
	if err != nil {
		return 0, nil, err
	}
	port := ports[0]
	conf := fmt.Sprintf(`# nginx for crawlbench part 2: foreground, everything under %[2]s.
daemon off;
worker_processes %[1]d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path %[2]s/client_body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    sendfile on;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:%[3]d;
        server_name localhost;
        root %[4]s;
    }
}
`, workers, dir, port, pgDocs)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return 0, nil, err
	}
	np, err := testenv.StartProcess(ctx, testenv.ProcConfig{Path: nginx,
		Args:    []string{"-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf")},
		LogFile: filepath.Join(dir, "nginx.out"), Logger: b.quiet})
	if err != nil {
		return 0, nil, err
	}
	stop := func() { np.Stop(10 * time.Second) }
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/index.html", port), 20*time.Second); err != nil {
		stop()
		return 0, nil, fmt.Errorf("nginx: %w\n%s", err, testenv.TailFile(filepath.Join(dir, "error.log"), 10))
	}
	return port, stop, nil
}

// startDelayProxy serves a reverse proxy to origin on a free loopback port
// that holds every response back for d before answering, and returns its
// base URL and a stop function.
func startDelayProxy(origin string, d time.Duration) (string, func(), error) {
	target, err := url.Parse(origin)
	if err != nil {
		return "", nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
			rp.ServeHTTP(w, r)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}

// realWarmups is how many unrecorded crawls warm up a shared ZooKeeper
// that part 1 did not use.
const realWarmups = 4

// realPair mirrors base with wget, then crawls it with zkcrawl once on
// the shared ZooKeeper of each forceSync setting in modes.
func (b *bench) realPair(ctx context.Context, base, dir, crawl string, res *report.Real, latency time.Duration, modes []bool) ([]report.RealRun, error) {
	start := base + "index.html"
	w, want, err := runWget(ctx, base, dir)
	if err != nil {
		return nil, err
	}
	w.LatencyMS = float64(latency) / float64(time.Millisecond)
	b.log.Info("part 2: wget done", "latency", latency, "pages", w.WgetPages, "s", round(w.WgetS, 2), "exit", w.WgetExitStatus)

	var runs []report.RealRun
	for _, fsync := range modes {
		// When part 1 did not warm this server up, unrecorded crawls of
		// the manual do (a fresh JVM spends seconds in its JIT: ZooKeeper's
		// CPU for one crawl fell from 1.4 s to 0.35 s over the first five;
		// with part 1 before it the first recorded round is already at
		// 0.31 s).
		zk, err := b.sharedServer(ctx, fsync, func(z *benchZK) error {
			for i := 1; i <= realWarmups; i++ {
				warm := w
				warm.ForceSync = fsync
				name := fmt.Sprintf("%s-warmup%d-%s", crawl, i, syncTag(fsync))
				if err := b.realCrawl(ctx, z, start, filepath.Join(dir, name), name, res, want, &warm); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return runs, err
		}
		run := w
		run.ForceSync = fsync
		name := crawl + "-" + syncTag(fsync)
		if err := b.realCrawl(ctx, zk, start, filepath.Join(dir, name), name, res, want, &run); err != nil {
			return runs, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// runWget mirrors base from index.html with wget -r -np -nv --warc-file into
// dir (one request at a time on one keep-alive connection, every response
// also written to dir/wget.warc.gz) and returns its figures and the URLs
// of the .html pages it fetched. Errors: wget failed to run (an HTTP error
// of some URL is its exit status, not an error), or wrote no WARC file.
func runWget(ctx context.Context, base, dir string) (report.RealRun, map[string]bool, error) {
	var w report.RealRun
	mirrorDir := filepath.Join(dir, "wget")
	if err := os.MkdirAll(mirrorDir, 0o755); err != nil {
		return w, nil, err
	}
	warc := filepath.Join(dir, "wget")
	cmd := exec.CommandContext(ctx, "wget", "-r", "-np", "-nv", "--warc-file="+warc, "-o", filepath.Join(dir, "wget.log"), base+"index.html")
	cmd.Dir = mirrorDir
	t0 := time.Now()
	err := cmd.Run()
	w.WgetS = time.Since(t0).Seconds()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// 8: some URL answered an HTTP error (robots.txt is 404, and the
		// manual links a non-existent relative "pgsql-docs@..." page);
		// the pages it fetched count.
		w.WgetExitStatus = ee.ExitCode()
	} else if err != nil {
		return w, nil, fmt.Errorf("wget: %w", err)
	}
	st, err := os.Stat(warc + ".warc.gz")
	if err != nil {
		return w, nil, fmt.Errorf("wget --warc-file wrote no %s.warc.gz (a wget built without WARC support?): %w", warc, err)
	}
	w.WgetWARCMB = float64(st.Size()) / (1 << 20)
	u, _ := url.Parse(base)
	want, err := mirrorPages(filepath.Join(mirrorDir, u.Host), base)
	w.WgetPages = len(want)
	return w, want, err
}

// mirrorPages returns the URLs (under base) of the .html files in wget's
// mirror directory, their path segments escaped as URLs.
func mirrorPages(mirror, base string) (map[string]bool, error) {
	want := map[string]bool{}
	err := filepath.WalkDir(mirror, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		rel, _ := filepath.Rel(mirror, p)
		segs := strings.Split(filepath.ToSlash(rel), "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		want[base+strings.Join(segs, "/")] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wget mirror %s: %w", mirror, err)
	}
	return want, nil
}

// realCrawl seeds start and crawls it with 3 workers on zk (the shared
// ZooKeeper of run.ForceSync), filling in run's zkcrawl figures.
func (b *bench) realCrawl(ctx context.Context, zk *benchZK, start, dir, crawl string, res *report.Real, want map[string]bool, run *report.RealRun) error {
	cfg := map[string]any{
		"allow_private_networks": true,
		"per_host_rate_per_s":    0,
		"per_host_max_in_flight": res.MaxInFlight,
		"worker_concurrency":     res.Concurrency,
		"max_depth":              -1,
		"scope":                  "same_host",
	}
	run.LoadBefore = loadavg()
	mark, err := zk.mark(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.seed(ctx, zk.srv.Addr(), crawl, dir, cfg, []string{start}); err != nil {
		return err
	}
	t1 := time.Now()
	run.SeedS = t1.Sub(t0).Seconds()
	var front *frontier.Frontier // opened once the workers run, as the seeder's run ends the timing
	pending := func(ctx context.Context) (bool, error) {
		if front == nil {
			opened, err := frontier.Open(ctx, zk.client, crawlRoot(crawl))
			if err != nil {
				return false, err
			}
			front = opened
		}
		return frontierEmpty(front)(ctx)
	}
	f, r, err := b.runCrawl(ctx, zk, crawl, dir, 3, mark, pending, 5*time.Minute)
	if err != nil {
		return err
	}
	defer f.kill()
	run.DetectS = r.detect.Seconds()
	run.ZKS, run.ZKCrawlS = r.end.Sub(t0).Seconds(), r.end.Sub(t1).Seconds()
	run.Ratio, run.CrawlRatio = run.ZKS/run.WgetS, run.ZKCrawlS/run.WgetS
	run.ZKOps, run.ZKOpErrors, run.WorkerCPUS = r.m.ops, r.m.opErrors, r.m.cpuS
	run.FsyncRounds, run.FsyncS = r.m.fsync.Count, r.m.fsync.Sum
	run.ClaimP50Ms, run.ClaimP99Ms = ms(r.m.claim.quantile(0.5)), ms(r.m.claim.quantile(0.99))
	run.ZKWrites, run.ZKCPUS, run.LoadAfter = r.zkWrites, r.zkCPUS, r.loadAfter
	lines, err := f.stopAndRead()
	if err != nil {
		return err
	}
	compareWget(run, lines, want)
	b.log.Info("part 2 run done", "latency_ms", run.LatencyMS, "fsync", run.ForceSync, "wget_s", round(run.WgetS, 2), "zkcrawl_s", round(run.ZKS, 2),
		"ratio", round(run.Ratio, 2), "writes_per_line", round(run.WritesPerLine, 2), "idle_gaps_s", round(run.IdleGapsS, 2),
		"pages", run.ZKPages, "missing", run.Missing, "dups", run.Dups)
	return nil
}

// compareWget fills run's figures of the crawl logs: lines, writes per
// line, pauses, pages by worker, status-200 URLs, and wget's pages (want)
// missing or fetched twice, and status-200 URLs wget did not fetch.
func compareWget(run *report.RealRun, lines []storage.LogEntry, want map[string]bool) {
	run.ZKLines = len(lines)
	if run.ZKLines > 0 {
		run.WritesPerLine = float64(run.ZKWrites) / float64(run.ZKLines)
	}
	longest, idle := gaps(lines, 250*time.Millisecond)
	run.LongestGapS, run.IdleGapsS = longest.Seconds(), idle.Seconds()
	ok200 := map[string]int{}
	count := map[string]int{}
	run.PagesByWorker = map[string]int{}
	for _, l := range lines {
		count[l.URL]++
		run.PagesByWorker[l.Worker]++
		if l.Status == 200 {
			ok200[l.URL]++
		}
	}
	run.ZKPages = len(ok200)
	for u := range want {
		if ok200[u] == 0 {
			run.Missing++
		}
		if count[u] > 1 {
			run.Dups++
		}
	}
	for u := range ok200 {
		if !want[u] {
			run.Extra++
		}
	}
}

// waitHTTP polls u until it answers 200, up to d.
func waitHTTP(ctx context.Context, u string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %v: %w", u, d, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
