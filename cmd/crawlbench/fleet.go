package main

// The processes a part runs: bin/seeder to create and seed a crawl, and a
// fleet of bin/crawler workers with their Prometheus endpoint on a free
// loopback port; watching their crawl logs until the crawl is done, and
// reading the logs afterwards.

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

	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/worker"
)

// seed writes seeds into dir/seeds.txt and runs bin/seeder (seedFile).
func (b *bench) seed(ctx context.Context, zkAddr, crawl, dir string, cfg map[string]any, seeds []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seedPath := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seedPath, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	_, err := b.seedFile(ctx, zkAddr, crawl, dir, cfg, seedPath, time.Minute)
	return err
}

// seedFile writes cfg as dir/config.json and runs bin/seeder --config
// --seeds seedPath to create the crawl (default layout) and enqueue the
// seeds, bounded by timeout; it returns the seeder's output. Errors: the
// seeder's exit status and output.
func (b *bench) seedFile(ctx context.Context, zkAddr, crawl, dir string, cfg map[string]any, seedPath string, timeout time.Duration) (string, error) {
	cfgPath := filepath.Join(dir, "config.json")
	data, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.bin("seeder"), "--zk", zkAddr, "--crawl", crawl,
		"--config", cfgPath, "--seeds", seedPath, "--log-level", "warn").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("seeder --crawl %s: %w\n%s", crawl, err, out)
	}
	return string(out), nil
}

// workerProc is one running bin/crawler.
type workerProc struct {
	id, dir, logFile string // --id, --out, its log
	metrics          string // http://127.0.0.1:PORT/metrics
	*testenv.Proc
}

// crawlLog is the path of the worker's crawl log.
func (w *workerProc) crawlLog() string { return filepath.Join(w.dir, "crawl.log") }

var metricsURL = regexp.MustCompile(`msg="serving metrics" url=(\S+)`)

// fleet is the bin/crawler workers w1..wN of one crawl, each with its
// output in dir/<id> and its log in dir/<id>.log.
type fleet struct {
	dir     string
	workers []*workerProc
}

// startFleet starts n workers of crawl on zkAddr, with metrics on a free
// loopback port and extra flags, and waits (up to 15 s) until each has
// logged its metrics URL. On error the workers already started are killed.
func (b *bench) startFleet(ctx context.Context, zkAddr, crawl, dir string, n int, extra ...string) (*fleet, error) {
	f := &fleet{dir: dir}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("w%d", i)
		w := &workerProc{id: id, dir: filepath.Join(dir, id), logFile: filepath.Join(dir, id+".log")}
		args := append([]string{"--zk", zkAddr, "--crawl", crawl, "--out", w.dir, "--id", id,
			"--metrics-addr", "127.0.0.1:0", "--stop-timeout", "5s"}, extra...)
		p, err := testenv.StartProcess(ctx, testenv.ProcConfig{Path: b.bin("crawler"), Args: args, LogFile: w.logFile, Logger: b.log})
		if err != nil {
			f.kill()
			return nil, err
		}
		w.Proc = p
		f.workers = append(f.workers, w)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, w := range f.workers {
		for w.metrics == "" {
			if m := metricsURL.FindStringSubmatch(testenv.TailFile(w.logFile, 200)); m != nil {
				w.metrics = m[1]
				break
			}
			err := ctx.Err()
			if w.Exited() || time.Now().After(deadline) {
				err = fmt.Errorf("worker %s logged no metrics URL within 15s:\n%s", w.id, w.LogTail(20))
			}
			if err != nil {
				f.kill()
				return nil, err
			}
			time.Sleep(20 * time.Millisecond)
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

// stopAndRead stops the workers and reads their crawl logs in time order.
func (f *fleet) stopAndRead() ([]storage.LogEntry, error) {
	f.stop()
	return testenv.ReadCrawlLogs(f.dir)
}

// logSizes returns the size of each worker's crawl log (0 while missing),
// their sum, and the latest modification time: when the last page was
// logged (its item completed one ZooKeeper round trip later).
func (f *fleet) logSizes() (sizes []int64, total int64, last time.Time) {
	for _, w := range f.workers {
		var n int64
		if st, err := os.Stat(w.crawlLog()); err == nil {
			n = st.Size()
			if st.ModTime().After(last) {
				last = st.ModTime()
			}
		}
		sizes = append(sizes, n)
		total += n
	}
	return sizes, total, last
}

// waitDone polls every 50 ms and returns once empty reports nothing left
// (frontier.Pending: nothing ready, claimed, in a backlog or in an inbox)
// twice in a row with no crawl log growing in between; empty is asked only
// once the logs have stopped growing for 100 ms, as it reads every shard's
// and group's counts. Errors: every worker exited, ctx ended, or timeout.
func (f *fleet) waitDone(ctx context.Context, empty func(context.Context) (bool, error), timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last []int64
	stable, seenEmpty := 0, false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("crawl not done after %v", timeout)
		}
		if !slices.ContainsFunc(f.workers, func(w *workerProc) bool { return !w.Exited() }) {
			return errors.New("every worker exited before the crawl was done:\n" + f.workers[0].LogTail(20))
		}
		sizes, total, _ := f.logSizes()
		if slices.Equal(sizes, last) && total > 0 {
			stable++
		} else {
			stable, seenEmpty = 0, false
		}
		last = sizes
		if stable < 2 {
			continue
		}
		done, err := empty(ctx)
		if err != nil {
			return err
		}
		if done && seenEmpty {
			return nil
		}
		seenEmpty = done
	}
}

// crawlReading is what runCrawl reads of one crawl while its workers
// still run.
type crawlReading struct {
	wall      time.Duration // fleet start to the last crawl log write
	end       time.Time     // the last crawl log write
	m         workerMetrics
	zkWrites  int64   // ZooKeeper write transactions since the caller's mark
	zkCPUS    float64 // and its JVM's CPU seconds
	loadAfter string
}

// runCrawl starts n workers of the seeded crawl on zk, waits (up to
// timeout) until pending reports it done, and takes the readings before
// anything stops. The caller stops the fleet; on error it is killed.
func (b *bench) runCrawl(ctx context.Context, zk *benchZK, crawl, dir string, n int, mark zkMark,
	pending func(context.Context) (bool, error), timeout time.Duration) (*fleet, crawlReading, error) {
	var r crawlReading
	t0 := time.Now()
	f, err := b.startFleet(ctx, zk.srv.Addr(), crawl, dir, n)
	if err != nil {
		return nil, r, err
	}
	err = f.waitDone(ctx, pending, timeout)
	if err == nil {
		_, _, r.end = f.logSizes()
		r.wall = r.end.Sub(t0)
		r.m, err = f.metrics(ctx)
	}
	if err == nil {
		r.zkWrites, r.zkCPUS, err = zk.since(ctx, mark)
	}
	if err != nil {
		f.kill()
		return nil, r, err
	}
	r.loadAfter = loadavg()
	return f, r, nil
}

// crawlRoot is the znode root of crawl name (worker.Root); the driver's
// names are valid crawl names, so an error here is a bug.
func crawlRoot(name string) string {
	root, err := worker.Root(name)
	if err != nil {
		panic(err)
	}
	return root
}
