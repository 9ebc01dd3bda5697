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

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/worker"
)

// trapResult is part 4.
type trapResult struct {
	Links, URLLength int
	TimeS            float64
	AbortMB          float64
	Runs             []trapRun
}

// trapRun is one flavour.
type trapRun struct {
	Flavour       string
	Config        map[string]any
	Base          zkFootprint
	End           zkFootprint // at TimeS (or at the abort), worker still running
	Final         zkFootprint // after the worker stopped
	GrowthMB      float64     // End - Base, data
	PeakGrowthMB  float64     // largest growth seen (1 s polls)
	LastTenSMB    float64     // growth over the last 10 s of the run: still growing?
	ZnodeGrowth   int64
	Aborted       bool // stopped early: growth passed AbortMB
	RanS          float64
	Pages         int              // crawl log lines
	TrapPages     int              // of which pages of the trap host itself
	Dropped       map[string]int64 // status node `dropped`
	MetricDropped map[string]float64
	Pending       frontier.Pending
	ZKWrites      int64
	JVMRSSMB      float64
	LoadAfter     string
	// Frontier health, from ZooKeeper and the worker's log: dead letters
	// (R/failed children: outside every quota), group steps that failed
	// and made the manager reload, and connection losses.
	DeadLetters    int
	GroupFailures  int
	ConnLosses     int
	GroupErrorHint string // the first group step error logged
}

func (b *bench) runTraps(ctx context.Context) (*trapResult, error) {
	o := b.opts
	res := &trapResult{Links: testenv.TrapDefaultLinks, URLLength: testenv.TrapDefaultURLLength, TimeS: o.trapTime.Seconds(), AbortMB: float64(o.trapAbortMB)}
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

func (b *bench) trapRun(ctx context.Context, flavour testenv.TrapFlavour) (*trapRun, error) {
	o := b.opts
	run := &trapRun{Flavour: string(flavour), Config: map[string]any{"allow_private_networks": true}}
	if flavour == testenv.TrapSubdomain {
		run.Config["scope"] = "any"
	}
	b.log.Info("part 4: trap", "flavour", flavour, "time", o.trapTime)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	h, err := testenv.NewTrapHandler(testenv.TrapConfig{Flavour: flavour, Port: port})
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	seed := fmt.Sprintf("http://127.0.0.1:%d/", port)

	dir := filepath.Join(b.outDir, "trap", string(flavour))
	zk, err := b.startZK(ctx, zkSpec{dir: filepath.Join("trap", string(flavour), "zk"), forceSync: true, heap: "1g"})
	if err != nil {
		return nil, err
	}
	defer zk.close()
	if run.Base, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	s0, err := readSrvr(ctx, zk.srv.Addr())
	if err != nil {
		return nil, err
	}
	crawl := "trap-" + string(flavour)
	if err := b.seed(ctx, zk.srv.Addr(), crawl, dir, run.Config, []string{seed}); err != nil {
		return nil, err
	}
	front, err := frontier.Open(ctx, zk.client, "/zkcrawl/"+crawl)
	if err != nil {
		return nil, err
	}
	w, err := b.startWorker(ctx, zk.srv.Addr(), crawl, dir, "w1")
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Kill() }()
	if err := w.awaitMetrics(ctx); err != nil {
		return nil, err
	}
	t0 := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var history []zkFootprint
	for time.Since(t0) < o.trapTime {
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-tick.C:
		}
		f, err := zk.footprint(ctx)
		if err != nil {
			return run, err
		}
		history = append(history, f)
		g := float64(f.DataBytes-run.Base.DataBytes) / (1 << 20)
		run.PeakGrowthMB = max(run.PeakGrowthMB, g)
		if g > float64(o.trapAbortMB) {
			run.Aborted = true
			b.log.Warn("part 4: trap growth past the abort limit; stopping this flavour early", "flavour", flavour, "growth_mb", round(g, 1))
			break
		}
		if w.Exited() {
			return run, fmt.Errorf("the worker exited:\n%s", w.LogTail(20))
		}
	}
	run.RanS = time.Since(t0).Seconds()
	if run.End, err = zk.footprint(ctx); err != nil {
		return run, err
	}
	run.GrowthMB = float64(run.End.DataBytes-run.Base.DataBytes) / (1 << 20)
	run.PeakGrowthMB = max(run.PeakGrowthMB, run.GrowthMB)
	run.ZnodeGrowth = run.End.Znodes - run.Base.Znodes
	run.JVMRSSMB = float64(run.End.RSSKB) / 1024
	if k := len(history) - 11; k >= 0 {
		run.LastTenSMB = float64(run.End.DataBytes-history[k].DataBytes) / (1 << 20)
	}
	if s1, err := readSrvr(ctx, zk.srv.Addr()); err == nil {
		run.ZKWrites = s1.Zxid - s0.Zxid
	}
	if fams, err := scrape(ctx, w.Metrics); err == nil {
		run.MetricDropped = labelCounts(fams, "zkcrawl_links_dropped_total", "reason")
	}
	// The status node is rewritten every 2 s: wait for one more write.
	time.Sleep(2100 * time.Millisecond)
	_, data, err := coord.Members(ctx, zk.client, "/zkcrawl/"+crawl)
	if err != nil {
		return run, err
	}
	var st worker.Status
	if err := json.Unmarshal(data["w1"], &st); err != nil {
		return run, fmt.Errorf("status node of w1 %q: %w", data["w1"], err)
	}
	run.Dropped = st.Dropped
	if run.Pending, err = front.Pending(ctx); err != nil {
		return run, err
	}
	if _, zs, err := zk.client.Conn().Exists("/zkcrawl/" + crawl + "/failed"); err == nil && zs != nil {
		run.DeadLetters = int(zs.NumChildren)
	}
	lines, err := stopAll([]*workerProc{w}, dir)
	if err != nil {
		return run, err
	}
	run.Pages = len(lines)
	run.GroupFailures, run.ConnLosses, run.GroupErrorHint = logTrouble(w.LogFile)
	run.TrapPages = countHost(lines, fmt.Sprintf("127.0.0.1:%d", port))
	if run.Final, err = zk.footprint(ctx); err != nil {
		return run, err
	}
	run.LoadAfter = loadavg()
	b.log.Info("part 4 flavour done", "flavour", flavour, "growth_mb", round(run.GrowthMB, 1), "peak_mb", round(run.PeakGrowthMB, 1),
		"last_10s_mb", round(run.LastTenSMB, 1), "znodes", run.ZnodeGrowth, "pages", run.Pages, "trap_pages", run.TrapPages,
		"dropped", run.Dropped, "pending", run.Pending)
	return run, nil
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
