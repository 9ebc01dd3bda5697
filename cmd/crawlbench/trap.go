package main

// Part 4: crawler traps (testenv.NewTrapHandler, each flavour), crawled by one worker with the default
// config for --trap-time on a fresh ZooKeeper: its data growth, links dropped, pages, dead letters.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/worker"
)

// trapAbortMB stops a flavour early once ZooKeeper's data grew by this much (its heap is 1 GiB).
const trapAbortMB = 512

// runTraps runs part 4: each trap flavour in turn.
func (b *bench) runTraps(ctx context.Context) (*report.Trap, error) {
	res := &report.Trap{Links: testenv.TrapDefaultLinks, URLLength: testenv.TrapDefaultURLLength, TimeS: b.opts.trapTime.Seconds(), AbortMB: trapAbortMB}
	for _, f := range testenv.TrapFlavours {
		run, err := b.trapRun(ctx, f)
		if run != nil { // nil: failed before its ZooKeeper started
			res.Runs = append(res.Runs, *run)
		}
		if err != nil {
			return res, fmt.Errorf("trap %s: %w", f, err)
		}
	}
	return res, nil
}

// trapRun serves one trap flavour on loopback and lets one worker crawl it
// on a fresh ZooKeeper for --trap-time (less past trapAbortMB).
func (b *bench) trapRun(ctx context.Context, flavour testenv.TrapFlavour) (*report.TrapRun, error) {
	run := &report.TrapRun{Flavour: string(flavour), Config: map[string]any{"allow_private_networks": true}}
	if flavour == testenv.TrapSubdomain {
		run.Config["scope"] = "any"
	}
	b.log.Info("part 4: trap", "flavour", flavour, "time", b.opts.trapTime)
	srv := httptest.NewUnstartedServer(nil) // the handler needs the port its links name
	defer srv.Close()
	trapHost := srv.Listener.Addr().String()
	h, err := testenv.NewTrapHandler(testenv.TrapConfig{Flavour: flavour, Port: srv.Listener.Addr().(*net.TCPAddr).Port})
	if err != nil {
		return nil, err
	}
	srv.Config.Handler = h
	srv.Start()
	dir := filepath.Join(b.opts.outDir, "trap", string(flavour))
	zk, err := b.startZK(ctx, filepath.Join("trap", string(flavour), "zk"), report.Fsync, 0)
	if err != nil {
		return nil, err
	}
	defer zk.close()
	mark, err := zk.mark(ctx)
	if err != nil {
		return run, err
	}
	crawl := "trap-" + string(flavour)
	if _, err := b.seed(ctx, zk.addr, crawl, dir, run.Config, []string{"http://" + trapHost + "/"}, time.Minute); err != nil {
		return run, err
	}
	f, err := b.startFleet(ctx, zk.addr, crawl, dir, 1)
	if err != nil {
		return run, err
	}
	defer f.kill()
	if err := b.watchGrowth(ctx, zk, f.workers[0], run); err != nil {
		return run, err
	}
	run.ZKWrites, _, _ = zk.since(ctx, mark) // 0 when unreadable
	// While the worker runs: what it dropped (status node, 2 s refresh), the frontier, dead letters.
	time.Sleep(2100 * time.Millisecond)
	_, status, err := coord.Members(ctx, zk.client, crawlRoot(crawl))
	if err != nil {
		return run, err
	}
	var st worker.Status
	if err := json.Unmarshal(status["w1"], &st); err != nil {
		return run, fmt.Errorf("status node of w1 %q: %w", status["w1"], err)
	}
	run.Dropped = st.Dropped
	front, err := frontier.Open(ctx, zk.client, crawlRoot(crawl))
	if err != nil {
		return run, err
	}
	if run.Pending, err = front.Pending(ctx); err != nil {
		return run, err
	}
	if qs, err := front.Queue().Pending(ctx); err == nil {
		run.DeadLetters = qs.Failed
	}
	lines, err := f.stopAndRead()
	if err != nil {
		return run, err
	}
	run.Pages = len(lines)
	for _, l := range lines {
		if frontier.Host(l.URL) == trapHost {
			run.TrapPages++
		}
	}
	if data, err := os.ReadFile(f.workers[0].LogFile); err == nil {
		for l := range strings.Lines(string(data)) {
			switch {
			case strings.Contains(l, "shard group manager failed"):
				if run.GroupFailures++; run.GroupErrorHint == "" {
					if _, e, ok := strings.Cut(l, "error="); ok {
						run.GroupErrorHint = strings.Trim(strings.TrimSpace(e), "\"")
					}
				}
			case strings.Contains(l, "ZooKeeper connection lost"):
				run.ConnLosses++
			}
		}
	}
	run.LoadAfter = loadavg()
	return run, nil
}

// watchGrowth reads ZooKeeper's footprint every second for --trap-time (peak growth over zk.base;
// stops early past trapAbortMB), then at the end. Errors: the worker exited, ctx, a reading failed.
func (b *bench) watchGrowth(ctx context.Context, zk *benchZK, w *testenv.Crawler, run *report.TrapRun) error {
	base := zk.base
	t0 := time.Now()
	growth := func(f report.ZKFootprint) float64 { return float64(f.DataBytes-base.DataBytes) / (1 << 20) }
	var history []report.ZKFootprint
	if _, err := poll(ctx, time.Second, b.opts.trapTime, func() (bool, error) {
		if w.Exited() {
			return false, fmt.Errorf("the worker exited:\n%s", w.LogTail(20))
		}
		f, err := zk.footprint(ctx)
		history = append(history, f)
		run.PeakGrowthMB = max(run.PeakGrowthMB, growth(f))
		run.Aborted = growth(f) > trapAbortMB
		return run.Aborted, err
	}); err != nil {
		return err
	}
	if run.Aborted {
		b.log.Warn("part 4: trap growth past the abort limit; stopped this flavour early", "flavour", run.Flavour)
	}
	run.RanS = time.Since(t0).Seconds()
	end, err := zk.footprint(ctx)
	if err != nil {
		return err
	}
	run.GrowthMB = growth(end)
	run.PeakGrowthMB = max(run.PeakGrowthMB, run.GrowthMB)
	run.ZnodeGrowth = end.Znodes - base.Znodes
	run.JVMRSSMB = float64(end.RSSKB) / 1024
	if k := len(history) - 11; k >= 0 {
		run.LastTenSMB = float64(end.DataBytes-history[k].DataBytes) / (1 << 20)
	}
	return nil
}
