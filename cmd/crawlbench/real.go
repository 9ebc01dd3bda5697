package main

// Part 2: a real site. scripts/demo-real.sh's logic, timed the way part 1
// is: nginx serves Debian's PostgreSQL 15 HTML manual on a free loopback
// port; `wget -r -np -nv` mirrors it (timed); then zkcrawl crawls the same
// start URL with bin/seeder and 3 bin/crawler workers, timed from the
// seeder's start to the moment the queue and the claims are empty (no
// --exit-when-done quiet period). Every HTML page wget fetched must be in
// the crawl logs exactly once with status 200.
//
// One host is one shard group, and a group has one owner, so one worker
// does all the fetching (politeness in one process, by design); the
// per_host_max_in_flight setting decides how parallel that is.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// pgDocs is the manual served (Debian package postgresql-doc-15).
const pgDocs = "/usr/share/doc/postgresql-doc-15/html"

// realResult is part 2.
type realResult struct {
	Docs           string
	Nginx, Wget    string // versions
	MaxInFlight    int
	Concurrency    int
	WgetPages      int     // .html files in wget's mirror
	WgetS          float64 // wget -r wall time
	ZKPages        int     // URLs logged with status 200
	ZKLines        int
	ZKS            float64 // seeder start to done
	ZKCrawlS       float64 // first worker start to done
	SeedS          float64 // the seeder run (crawl creation + 1 seed)
	Ratio          float64 // ZKS / WgetS
	Missing, Dups  int     // of wget's pages
	Extra          int     // status-200 URLs wget did not fetch
	PagesByWorker  map[string]int
	ClaimP50Ms     float64
	ClaimP99Ms     float64
	ZKGets         float64 // get requests the workers sent
	ZKWrites       int64
	WorkerCPUS     float64
	ZKCPUS         float64
	LoadBefore     string
	LoadAfter      string
	NginxWorkers   int
	WgetExitStatus int
}

func (b *bench) runReal(ctx context.Context) (*realResult, error) {
	res := &realResult{Docs: pgDocs, MaxInFlight: b.opts.realInFlight, Concurrency: b.opts.realConcurrency, NginxWorkers: 2}
	for _, need := range []string{filepath.Join(pgDocs, "index.html")} {
		if _, err := os.Stat(need); err != nil {
			return nil, fmt.Errorf("%s is missing: install Debian's postgresql-doc-15 (scripts/bench.sh does)", need)
		}
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	if out, err := exec.CommandContext(ctx, nginx, "-v").CombinedOutput(); err == nil {
		res.Nginx = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version:"))
	} else {
		return nil, fmt.Errorf("nginx -v: %w (install nginx; scripts/bench.sh does)", err)
	}
	if out, err := exec.CommandContext(ctx, "wget", "--version").Output(); err == nil {
		res.Wget = strings.SplitN(string(out), "\n", 2)[0]
	} else {
		return nil, fmt.Errorf("wget --version: %w (install wget; scripts/bench.sh does)", err)
	}
	b.log.Info("part 2: PostgreSQL docs, wget vs zkcrawl", "docs", pgDocs, "nginx", res.Nginx)

	dir, err := filepath.Abs(filepath.Join(b.outDir, "real"))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	ng := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(ng, 0o755); err != nil {
		return nil, err
	}
	// nginx's workers may run as another user.
	for d := ng; d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o005 != 0o005 {
			_ = os.Chmod(d, st.Mode().Perm()|0o055)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`daemon off;
worker_processes %d;
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
`, res.NginxWorkers, ng, port, pgDocs)
	if err := os.WriteFile(filepath.Join(ng, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	nctx, stopNginx := context.WithCancel(ctx)
	defer stopNginx()
	np, err := testenv.StartProcess(nctx, testenv.ProcConfig{Path: nginx,
		Args:    []string{"-p", ng, "-e", filepath.Join(ng, "error.log"), "-c", filepath.Join(ng, "nginx.conf")},
		LogFile: filepath.Join(ng, "nginx.out"), Logger: b.quiet})
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = np.Signal(15)
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := np.Wait(wctx); err != nil {
			_ = np.Kill()
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	start := base + "index.html"
	if err := waitHTTP(ctx, start, 20*time.Second); err != nil {
		return nil, fmt.Errorf("nginx: %w\n%s", err, testenv.TailFile(filepath.Join(ng, "error.log"), 10))
	}

	// wget -r -np -nv: sequential, one keep-alive connection.
	mirrorDir := filepath.Join(dir, "wget")
	_ = os.MkdirAll(mirrorDir, 0o755)
	wget := exec.CommandContext(ctx, "wget", "-r", "-np", "-nv", "-o", filepath.Join(dir, "wget.log"), start)
	wget.Dir = mirrorDir
	t0 := time.Now()
	err = wget.Run()
	res.WgetS = time.Since(t0).Seconds()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// 8: some URL answered an HTTP error (robots.txt 404, and a
		// mailto-like relative link in the manual); the pages count.
		res.WgetExitStatus = ee.ExitCode()
	} else if err != nil {
		return nil, fmt.Errorf("wget: %w", err)
	}
	wantURLs := map[string]bool{}
	mirror := filepath.Join(mirrorDir, fmt.Sprintf("127.0.0.1:%d", port))
	err = filepath.WalkDir(mirror, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		rel, _ := filepath.Rel(mirror, p)
		segs := strings.Split(filepath.ToSlash(rel), "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		wantURLs[base+strings.Join(segs, "/")] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wget mirror %s: %w", mirror, err)
	}
	res.WgetPages = len(wantURLs)
	b.log.Info("part 2: wget done", "pages", res.WgetPages, "s", round(res.WgetS, 2), "exit", res.WgetExitStatus)

	// zkcrawl.
	zks, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{
		TickTime: 2 * time.Second, Dir: filepath.Join(dir, "zk"), JavaOpts: b.zkJavaOpts("1g"), Logger: b.quiet,
	})
	if err != nil {
		return nil, err
	}
	defer zks.Close()
	b.noteZK(ctx, zks.Addr())
	zkpid, err := zkPid(zks.Dir())
	if err != nil {
		return nil, err
	}
	client, err := coord.Connect(ctx, zks.Addr(), coord.WithLogger(b.quiet))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	// Warm the JVM up like part 1's first run is not: one throwaway crawl
	// creation, so the measured run does not pay for class loading.
	if err := b.seed(ctx, zks.Addr(), "warmup", filepath.Join(dir, "warmup"), map[string]any{"allow_private_networks": true}, []string{start}); err != nil {
		return nil, err
	}
	crawl := "pgdocs"
	cfg := map[string]any{
		"allow_private_networks": true,
		"per_host_rate_per_s":    0,
		"per_host_max_in_flight": res.MaxInFlight,
		"worker_concurrency":     res.Concurrency,
		"max_depth":              -1,
		"scope":                  "same_host",
	}
	res.LoadBefore = loadavg()
	s0, err := readSrvr(ctx, zks.Addr())
	if err != nil {
		return nil, err
	}
	z0, err := readProc(zkpid)
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	if err := b.seed(ctx, zks.Addr(), crawl, dir, cfg, []string{start}); err != nil {
		return nil, err
	}
	t1 := time.Now()
	res.SeedS = t1.Sub(t0).Seconds()
	var workers []*workerProc
	defer func() {
		for _, w := range workers {
			_ = w.Kill()
		}
	}()
	for i := 1; i <= 3; i++ {
		w, err := b.startWorker(ctx, zks.Addr(), crawl, dir, fmt.Sprintf("w%d", i))
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}
	q, err := coord.OpenQueue(ctx, client, "/zkcrawl/"+crawl)
	if err != nil {
		return nil, err
	}
	done, err := waitDone(ctx, q, workers, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	res.ZKS = done.Sub(t0).Seconds()
	res.ZKCrawlS = done.Sub(t1).Seconds()
	res.Ratio = res.ZKS / res.WgetS
	var claim hist
	for _, w := range workers {
		if err := w.awaitMetrics(ctx); err != nil {
			return nil, err
		}
		fams, err := scrape(ctx, w.Metrics)
		if err != nil {
			return nil, err
		}
		claim, _ = claim.merge(histOf(fams, "zkcrawl_zk_op_duration_seconds", "op", "queue_claim"))
		res.ZKGets += histOf(fams, "zkcrawl_zk_op_duration_seconds", "op", "get").Count
		cpu, _ := w.CPUTime()
		res.WorkerCPUS += cpu.Seconds()
	}
	res.ClaimP50Ms, res.ClaimP99Ms = claim.quantile(0.5)*1000, claim.quantile(0.99)*1000
	if z1, err := readProc(zkpid); err == nil {
		res.ZKCPUS = (z1.CPU - z0.CPU).Seconds()
	}
	if s1, err := readSrvr(ctx, zks.Addr()); err == nil {
		res.ZKWrites = s1.Zxid - s0.Zxid
	}
	res.LoadAfter = loadavg()
	for _, w := range workers {
		w.stop()
	}
	var logs []string
	for _, w := range workers {
		logs = append(logs, w.CrawlLog())
	}
	lines, err := readCrawlLogs(logs)
	if err != nil {
		return nil, err
	}
	res.ZKLines = len(lines)
	ok200 := map[string]int{}
	count := map[string]int{}
	res.PagesByWorker = map[string]int{}
	for _, l := range lines {
		count[l.URL]++
		res.PagesByWorker[l.Worker]++
		if l.Status == 200 {
			ok200[l.URL]++
		}
	}
	res.ZKPages = len(ok200)
	for u := range wantURLs {
		if ok200[u] == 0 {
			res.Missing++
		}
		if count[u] > 1 {
			res.Dups++
		}
	}
	for u := range ok200 {
		if !wantURLs[u] {
			res.Extra++
		}
	}
	b.log.Info("part 2 done", "wget_s", round(res.WgetS, 2), "zkcrawl_s", round(res.ZKS, 2), "ratio", round(res.Ratio, 2),
		"pages", res.ZKPages, "missing", res.Missing, "dups", res.Dups, "gets", res.ZKGets)
	return res, nil
}

// freePort returns a loopback port that is free right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until it answers 200, up to d.
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
