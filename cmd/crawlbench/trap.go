package main

// Part 4: crawler traps. testenv's trap handler (every page links to
// 10,000 new unique URLs of about 1,900 characters, gzipped) is served on
// loopback in each flavour (long repetitive URLs, random incompressible
// URLs, a new host per link) and crawled by one bin/crawler with the
// DEFAULT config, plus allow_private_networks (the trap is on loopback) and,
// for the new-host flavour, scope any (else every link leaves the seed's
// host and is dropped by scope before it reaches the frontier), for
// --trap-time. Each flavour gets a fresh ZooKeeper (forceSync=yes, -Xmx1g).
// Measured: the growth of ZooKeeper's data (mntr) at the end and its peak,
// the links dropped by reason (the worker's status node, `dropped`), pages
// fetched, and what the frontier still holds.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/worker"
)

// runTraps runs part 4: each trap flavour in turn.
func (b *bench) runTraps(ctx context.Context) (*report.Trap, error) {
	o := b.opts
	res := &report.Trap{Links: testenv.TrapDefaultLinks, URLLength: testenv.TrapDefaultURLLength, TimeS: o.trapTime.Seconds(), AbortMB: float64(o.trapAbortMB)}
	for _, f := range testenv.TrapFlavours {
		run, err := b.trapRun(ctx, f)
		if run != nil {
			res.Runs = append(res.Runs, *run)
		}
		if err != nil {
			return res, fmt.Errorf("trap %s: %w", f, err)
		}
	}
	return res, nil
}

// trapRun serves one trap flavour on loopback and lets one worker crawl it
// on a fresh ZooKeeper for --trap-time (less past --trap-abort-mb).
func (b *bench) trapRun(ctx context.Context, flavour testenv.TrapFlavour) (*report.TrapRun, error) {
	run := &report.TrapRun{Flavour: string(flavour), Config: map[string]any{"allow_private_networks": true}}
	if flavour == testenv.TrapSubdomain {
		run.Config["scope"] = "any"
	}
	b.log.Info("part 4: trap", "flavour", flavour, "time", b.opts.trapTime)
	trapHost, stopTrap, err := serveTrap(flavour)
	if err != nil {
		return nil, err
	}
	defer stopTrap()
	dir := filepath.Join(b.opts.outDir, "trap", string(flavour))
	zk, base, err := b.startOwnZK(ctx, filepath.Join("trap", string(flavour), "zk"))
	if err != nil {
		return nil, err
	}
	defer zk.close()
	run.Base = base
	mark, err := zk.mark(ctx)
	if err != nil {
		return nil, err
	}
	crawl := "trap-" + string(flavour)
	if err := b.seed(ctx, zk.srv.Addr(), crawl, dir, run.Config, []string{"http://" + trapHost + "/"}); err != nil {
		return nil, err
	}
	f, err := b.startFleet(ctx, zk.srv.Addr(), crawl, dir, 1)
	if err != nil {
		return nil, err
	}
	defer f.kill()
	if err := b.watchGrowth(ctx, zk, f.workers[0], run); err != nil {
		return run, err
	}
	run.ZKWrites, _, _ = zk.since(ctx, mark) // 0 when unreadable
	if err := b.trapEnd(ctx, zk, crawl, run); err != nil {
		return run, err
	}
	lines, err := f.stopAndRead()
	if err != nil {
		return run, err
	}
	run.Pages = len(lines)
	run.GroupFailures, run.ConnLosses, run.GroupErrorHint = logTrouble(f.workers[0].LogFile)
	run.TrapPages = countHost(lines, trapHost)
	run.LoadAfter = loadavg()
	b.log.Info("part 4 flavour done", "flavour", flavour, "growth_mb", round(run.GrowthMB, 1), "peak_mb", round(run.PeakGrowthMB, 1),
		"last_10s_mb", round(run.LastTenSMB, 1), "znodes", run.ZnodeGrowth, "pages", run.Pages, "trap_pages", run.TrapPages,
		"dropped", run.Dropped, "pending", run.Pending)
	return run, nil
}

// serveTrap serves testenv's trap handler of flavour on a free loopback
// port and returns its host:port and a stop function.
func serveTrap(flavour testenv.TrapFlavour) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	h, err := testenv.NewTrapHandler(testenv.TrapConfig{Flavour: flavour, Port: ln.Addr().(*net.TCPAddr).Port})
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// watchGrowth reads ZooKeeper's footprint every second for --trap-time,
// keeping the peak growth, and stops early past --trap-abort-mb; then it
// reads the footprint at the end. Errors: the worker exited, ctx ended,
// or a reading failed.
func (b *bench) watchGrowth(ctx context.Context, zk *benchZK, w *workerProc, run *report.TrapRun) error {
	t0 := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var history []report.ZKFootprint
	for time.Since(t0) < b.opts.trapTime {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		f, err := zk.footprint(ctx)
		if err != nil {
			return err
		}
		history = append(history, f)
		g := float64(f.DataBytes-run.Base.DataBytes) / (1 << 20)
		run.PeakGrowthMB = max(run.PeakGrowthMB, g)
		if g > float64(b.opts.trapAbortMB) {
			run.Aborted = true
			b.log.Warn("part 4: trap growth past the abort limit; stopping this flavour early", "flavour", run.Flavour, "growth_mb", round(g, 1))
			break
		}
		if w.Exited() {
			return fmt.Errorf("the worker exited:\n%s", w.LogTail(20))
		}
	}
	run.RanS = time.Since(t0).Seconds()
	var err error
	if run.End, err = zk.footprint(ctx); err != nil {
		return err
	}
	run.GrowthMB = float64(run.End.DataBytes-run.Base.DataBytes) / (1 << 20)
	run.PeakGrowthMB = max(run.PeakGrowthMB, run.GrowthMB)
	run.ZnodeGrowth = run.End.Znodes - run.Base.Znodes
	run.JVMRSSMB = float64(run.End.RSSKB) / 1024
	if k := len(history) - 11; k >= 0 {
		run.LastTenSMB = float64(run.End.DataBytes-history[k].DataBytes) / (1 << 20)
	}
	return nil
}

// trapEnd reads, while the worker still runs, what it dropped (its status
// node after the next 2 s refresh), what the frontier holds and the dead
// letters.
func (b *bench) trapEnd(ctx context.Context, zk *benchZK, crawl string, run *report.TrapRun) error {
	// The status node is rewritten every 2 s: wait for one more write.
	time.Sleep(2100 * time.Millisecond)
	_, data, err := coord.Members(ctx, zk.client, crawlRoot(crawl))
	if err != nil {
		return err
	}
	var st worker.Status
	if err := json.Unmarshal(data["w1"], &st); err != nil {
		return fmt.Errorf("status node of w1 %q: %w", data["w1"], err)
	}
	run.Dropped = st.Dropped
	front, err := frontier.Open(ctx, zk.client, crawlRoot(crawl))
	if err != nil {
		return err
	}
	if run.Pending, err = front.Pending(ctx); err != nil {
		return err
	}
	if qs, err := front.Queue().CountShards(ctx, nil); err == nil {
		run.DeadLetters = qs.Failed
	}
	return nil
}

// countHost counts the crawl log lines whose URL is on host (host:port).
func countHost(lines []storage.LogEntry, host string) int {
	n := 0
	for _, l := range lines {
		if frontier.Host(l.URL) == host {
			n++
		}
	}
	return n
}

// logTrouble counts a worker log's "shard group manager failed" and
// "ZooKeeper connection lost" lines and returns the first group error.
func logTrouble(logFile string) (groupFailures, connLosses int, first string) {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return 0, 0, ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(l, "shard group manager failed"):
			groupFailures++
			if first == "" {
				if i := strings.Index(l, "error="); i >= 0 {
					first = strings.Trim(l[i+len("error="):], "\"")
				}
			}
		case strings.Contains(l, "ZooKeeper connection lost"):
			connLosses++
		}
	}
	return groupFailures, connLosses, first
}
