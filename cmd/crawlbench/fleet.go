package main

// The processes a benchmark runs: bin/seeder to create and seed a crawl,
// bin/crawler workers with their Prometheus endpoint on a free loopback
// port, and reading their crawl logs afterwards.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

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

// startWorker starts bin/crawler with id, its output in dir/<id>, metrics
// on a free loopback port, and extra flags. It returns once the process is
// running; the metrics URL is filled in by awaitMetrics.
func (b *bench) startWorker(ctx context.Context, zkAddr, crawl, dir, id string, extra ...string) (*workerProc, error) {
	w := &workerProc{ID: id, Dir: filepath.Join(dir, id), LogFile: filepath.Join(dir, id+".log")}
	args := append([]string{"--zk", zkAddr, "--crawl", crawl, "--out", w.Dir, "--id", id,
		"--metrics-addr", "127.0.0.1:0", "--stop-timeout", "5s"}, extra...)
	p, err := testenv.StartProcess(ctx, testenv.ProcConfig{Path: b.bin("crawler"), Args: args, LogFile: w.LogFile, Logger: b.log})
	if err != nil {
		return nil, err
	}
	w.Proc = p
	return w, nil
}

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

// stop sends SIGTERM and waits up to 15 s, then SIGKILL.
func (w *workerProc) stop() {
	_ = w.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := w.Wait(ctx); err != nil {
		_ = w.Kill()
		<-w.Done()
	}
}

// fileSizes returns the sizes of paths (0 for a missing file).
func fileSizes(paths []string) []int64 {
	out := make([]int64, len(paths))
	for i, p := range paths {
		if st, err := os.Stat(p); err == nil {
			out[i] = st.Size()
		}
	}
	return out
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

// stopAll stops the workers and reads the crawl logs under dir (one
// output directory per worker, testenv.ReadCrawlLogs), in time order.
func stopAll(workers []*workerProc, dir string) ([]storage.LogEntry, error) {
	for _, w := range workers {
		w.stop()
	}
	return testenv.ReadCrawlLogs(dir)
}

// forEach runs fn(0..n-1) on `parallel` goroutines and returns the first
// error (golang.org/x/sync/errgroup with a limit).
func forEach(ctx context.Context, n, parallel int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// fileModTime returns a file's modification time (zero when missing).
func fileModTime(p string) time.Time {
	if st, err := os.Stat(p); err == nil {
		return st.ModTime()
	}
	return time.Time{}
}
