package main

// The processes a benchmark runs: bin/seeder to create and seed a crawl,
// and a fleet of bin/crawler workers with their Prometheus endpoint on a
// free loopback port; watching their crawl logs until the crawl is done,
// and reading the logs afterwards.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// seed writes cfg as the crawl's config file and seeds into a seeds file in
// dir, then runs bin/seeder to create the crawl (default layout) and
// enqueue the seeds. Errors: the seeder's exit status and output.
func (b *bench) seed(ctx context.Context, zkAddr, crawl, dir string, cfg map[string]any, seeds []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seedPath := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seedPath, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	_, err := b.runSeeder(ctx, zkAddr, crawl, dir, cfg, seedPath, time.Minute)
	return err
}

// runSeeder writes cfg as dir/config.json and runs bin/seeder --config
// with --seeds seedPath, bounded by timeout; it returns the seeder's
// output. Errors: the seeder's exit status and output.
func (b *bench) runSeeder(ctx context.Context, zkAddr, crawl, dir string, cfg map[string]any, seedPath string, timeout time.Duration) (string, error) {
	cfgPath := filepath.Join(dir, "config.json")
	data, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, b.bin("seeder"), "--zk", zkAddr, "--crawl", crawl,
		"--config", cfgPath, "--seeds", seedPath, "--log-level", "warn")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("seeder --crawl %s: %w\n%s", crawl, err, out)
	}
	b.log.Debug("seeded", "crawl", crawl, "output", strings.TrimSpace(string(out)))
	return string(out), nil
}

// workerProc is one running bin/crawler.
type workerProc struct {
	ID      string
	Dir     string // --out
	LogFile string
	Metrics string // http://127.0.0.1:PORT/metrics
	*testenv.Proc
}

// CrawlLog is the path of the worker's crawl log.
func (w *workerProc) CrawlLog() string { return filepath.Join(w.Dir, "crawl.log") }

var metricsURL = regexp.MustCompile(`msg="serving metrics" url=(\S+)`)

// awaitMetrics waits (up to 15 s) until the worker logged its metrics URL.
func (w *workerProc) awaitMetrics(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if m := metricsURL.FindStringSubmatch(testenv.TailFile(w.LogFile, 200)); m != nil {
			w.Metrics = m[1]
			return nil
		}
		if w.Exited() {
			return fmt.Errorf("worker %s exited before serving metrics:\n%s", w.ID, w.LogTail(20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("worker %s logged no metrics URL within 15s:\n%s", w.ID, w.LogTail(20))
}

// fleet is the bin/crawler workers w1..wN of one crawl, each with its
// output in dir/<id> and its log in dir/<id>.log.
type fleet struct {
	dir     string
	workers []*workerProc
}

// startFleet starts n workers of crawl on zkAddr, with metrics on a free
// loopback port and extra flags, and waits until each serves its metrics.
// On error the workers already started are killed.
func (b *bench) startFleet(ctx context.Context, zkAddr, crawl, dir string, n int, extra ...string) (*fleet, error) {
	f := &fleet{dir: dir}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("w%d", i)
		w := &workerProc{ID: id, Dir: filepath.Join(dir, id), LogFile: filepath.Join(dir, id+".log")}
		args := append([]string{"--zk", zkAddr, "--crawl", crawl, "--out", w.Dir, "--id", id,
			"--metrics-addr", "127.0.0.1:0", "--stop-timeout", "5s"}, extra...)
		p, err := testenv.StartProcess(ctx, testenv.ProcConfig{Path: b.bin("crawler"), Args: args, LogFile: w.LogFile, Logger: b.log})
		if err != nil {
			f.kill()
			return nil, err
		}
		w.Proc = p
		f.workers = append(f.workers, w)
	}
	for _, w := range f.workers {
		if err := w.awaitMetrics(ctx); err != nil {
			f.kill()
			return nil, err
		}
	}
	return f, nil
}

// kill sends SIGKILL to every worker (a crash; used on the way out).
func (f *fleet) kill() {
	for _, w := range f.workers {
		_ = w.Kill()
	}
}

// stop stops every worker still running: SIGTERM, and SIGKILL to one
// still running 15 s later.
func (f *fleet) stop() {
	for _, w := range f.workers {
		w.Stop(15 * time.Second)
	}
}

// stopAndRead stops the workers and reads their crawl logs
// (testenv.ReadCrawlLogs), in time order.
func (f *fleet) stopAndRead() ([]storage.LogEntry, error) {
	f.stop()
	return testenv.ReadCrawlLogs(f.dir)
}

// waitDone returns the moment the crawl was first seen done: empty
// reports nothing left (frontier.Pending: nothing ready, claimed, in the
// backlog or in an inbox), confirmed by a second reading 50 ms later with
// no crawl log growing in between. It reads every shard's and group's
// counts, so it is only asked once the crawl logs have stopped growing for
// 100 ms. Errors: every worker exited, ctx ended, or timeout.
func (f *fleet) waitDone(ctx context.Context, empty func(context.Context) (bool, error), timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last []int64
	stable := 0
	var firstZero time.Time
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("crawl not done after %v", timeout)
		}
		if !slices.ContainsFunc(f.workers, func(w *workerProc) bool { return !w.Exited() }) {
			return time.Time{}, errors.New("every worker exited before the crawl was done:\n" + f.workers[0].LogTail(20))
		}
		sizes, total := f.logSizes()
		if slices.Equal(sizes, last) && total > 0 {
			stable++
		} else {
			stable, firstZero = 0, time.Time{}
		}
		last = sizes
		if stable < 2 {
			continue
		}
		now := time.Now()
		done, err := empty(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if !done {
			firstZero = time.Time{}
			continue
		}
		if firstZero.IsZero() {
			firstZero = now
			continue
		}
		return firstZero, nil
	}
}

// logSizes returns the size of each worker's crawl log (0 while missing)
// and their sum.
func (f *fleet) logSizes() (sizes []int64, total int64) {
	for _, w := range f.workers {
		var n int64
		if st, err := os.Stat(w.CrawlLog()); err == nil {
			n = st.Size()
		}
		sizes = append(sizes, n)
		total += n
	}
	return sizes, total
}

// lastWrite returns the latest modification time of the workers' crawl
// logs: when the last page was logged. Its item was completed one
// ZooKeeper round trip later.
func (f *fleet) lastWrite() time.Time {
	var t time.Time
	for _, w := range f.workers {
		if st, err := os.Stat(w.CrawlLog()); err == nil && st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t
}

// crawlReading is what runCrawl reads of one crawl while its workers
// still run.
type crawlReading struct {
	ready  time.Duration // fleet start to every worker serving metrics
	wall   time.Duration // fleet start to the last crawl log write
	detect time.Duration // that write to done confirmed
	end    time.Time     // the last crawl log write
	m      workerMetrics
	// ZooKeeper's write transactions and CPU since the caller's mark, and
	// this driver's CPU (it serves the synthetic web and polls).
	zkWrites           int64
	zkCPUS, driverCPUS float64
	loadAfter          string
}

// runCrawl starts n workers of the seeded crawl on zk, waits (up to
// timeout) until pending reports it done, and takes the readings before
// anything stops. The caller stops the fleet; on error it is killed.
func (b *bench) runCrawl(ctx context.Context, zk *benchZK, crawl, dir string, n int, mark zkMark,
	pending func(context.Context) (bool, error), timeout time.Duration) (*fleet, crawlReading, error) {
	var r crawlReading
	self0 := selfCPU()
	t0 := time.Now()
	f, err := b.startFleet(ctx, zk.srv.Addr(), crawl, dir, n)
	if err != nil {
		return nil, r, err
	}
	r.ready = time.Since(t0)
	done, err := f.waitDone(ctx, pending, timeout)
	if err == nil {
		r.end = f.lastWrite()
		r.wall, r.detect = r.end.Sub(t0), time.Since(done)
		r.m, err = f.metrics(ctx)
	}
	if err == nil {
		r.zkWrites, r.zkCPUS, err = zk.since(ctx, mark)
	}
	if err != nil {
		f.kill()
		return nil, r, err
	}
	r.driverCPUS = (selfCPU() - self0).Seconds()
	r.loadAfter = loadavg()
	return f, r, nil
}

// gaps returns the longest pause between consecutive crawl log lines (in
// time order, as testenv.ReadCrawlLogs returns them) and the summed length
// of the pauses longer than minGap: time in which the crawl fetched
// nothing at all.
func gaps(lines []storage.LogEntry, minGap time.Duration) (longest, total time.Duration) {
	for i := 1; i < len(lines); i++ {
		d := lines[i].TS.Sub(lines[i-1].TS)
		longest = max(longest, d)
		if d > minGap {
			total += d
		}
	}
	return longest, total
}

// crawlRoot is the znode root of crawl name (coord.Root); the driver's
// names are valid crawl names, so an error here is a bug.
func crawlRoot(name string) string {
	root, err := coord.Root(name)
	if err != nil {
		panic(err)
	}
	return root
}
