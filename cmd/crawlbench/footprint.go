package main

// Part 3: the frontier's footprint in ZooKeeper.
//
// (a) Queued URLs: --queued-hosts x --queued-paths URLs
// (http://hNNNN.example/p/N, nothing is fetched) given to the real
// bin/seeder --seeds on a fresh ZooKeeper (forceSync=yes): the seeding
// rate, then ZooKeeper's data and znodes per URL right after seeding (the
// URLs wait as inbox posts) and after one worker, with config paused=true,
// has drained the inboxes into backlog batches and filled every host's
// ready window (a paused worker claims nothing but its groups still move).
//
// (b) Fetched URLs: measured in part 1 (synth.go), on the crawl's own
// seen chunks once its batches retired.
//
// (c) A big frontier: --big-hosts x --big-paths URLs enqueued in-process
// with frontier.Enqueue (the seeder's path, 20,000 URLs a call, 3 calls at
// a time) into one standalone ZooKeeper with -Xmx1g, for at most
// --big-time; then data size, JVM RSS, snapshot size and restart time.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
)

// queuedResult is part 3a.
type queuedResult struct {
	URLs, Hosts         int
	SeederS, SeedPerS   float64 // bin/seeder wall time (process start to exit) and URLs/s
	SeederOutput        string
	Base                zkFootprint // before seeding
	Posted              zkFootprint // after seeding: URLs in inbox posts
	Drained             zkFootprint // after the paused worker drained and filled ready windows
	DrainS              float64     // worker start to drained
	DrainedOK           bool        // posts 0 and every ready window filled within the wait
	Pending             frontier.Pending
	Window              int // ready items per host the drain fills (per_host_max_in_flight + 1)
	PostedDataPerURL    float64
	PostedZnodesPerURL  float64
	DrainedDataPerURL   float64
	DrainedZnodesPerURL float64
	LoadBefore          string
	LoadAfter           string
}

// bigResult is part 3c.
type bigResult struct {
	Target, URLs        int // asked and enqueued
	Hosts, Paths        int
	TimeLimitS          float64
	SeedS, SeedPerS     float64
	Heap                string
	Base, After         zkFootprint
	JVMPeakMB           float64
	Snapshots           int
	LargestSnapshotMB   float64
	TxnLogMB            float64
	RestartS            float64 // stop (SIGTERM) to serving again with the data
	RestartSnapshotMB   float64 // the snapshot written at restart
	AfterRestartRSSMB   float64
	DataPerURL          float64
	LoadBefore          string
	LoadAfter           string
	StoppedByTimeLimitS bool
}

func (b *bench) runQueued(ctx context.Context) (*queuedResult, error) {
	o := b.opts
	res := &queuedResult{Hosts: o.queuedHosts, URLs: o.queuedHosts * o.queuedPaths, Window: 2}
	b.log.Info("part 3a: queued URLs via bin/seeder", "urls", res.URLs, "hosts", res.Hosts)
	dir := filepath.Join(b.outDir, "queued")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	seedPath := filepath.Join(dir, "seeds.txt")
	if err := writeSeeds(seedPath, o.queuedHosts, o.queuedPaths); err != nil {
		return nil, err
	}
	zk, err := b.startZK(ctx, zkSpec{dir: "queued/zk", forceSync: true, heap: "1g"})
	if err != nil {
		return nil, err
	}
	defer zk.close()
	res.LoadBefore = loadavg()
	if res.Base, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	// Default config but paused: the worker started below claims nothing.
	cfg := map[string]any{"paused": true}
	crawl := "queued"
	t0 := time.Now()
	out, err := b.runSeeder(ctx, zk.srv.Addr(), crawl, dir, cfg, seedPath, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	res.SeederS = time.Since(t0).Seconds()
	res.SeedPerS = float64(res.URLs) / res.SeederS
	res.SeederOutput = strings.TrimSpace(out)
	if res.Posted, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	b.log.Info("part 3a: seeded", "s", round(res.SeederS, 2), "urls_per_s", round(res.SeedPerS, 0),
		"data_per_url", round(float64(res.Posted.DataBytes-res.Base.DataBytes)/float64(res.URLs), 1), "seeder", res.SeederOutput)

	front, err := frontier.Open(ctx, zk.client, "/zkcrawl/"+crawl)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	w, err := b.startWorker(ctx, zk.srv.Addr(), crawl, dir, "w1")
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Kill() }()
	want := res.Hosts * res.Window
	deadline := time.Now().Add(5 * time.Minute)
	for {
		p, err := front.Pending(ctx)
		if err != nil {
			return nil, err
		}
		res.Pending = p
		if p.Posts == 0 && p.Ready >= want {
			res.DrainedOK = true
			break
		}
		if time.Now().After(deadline) || w.Exited() {
			b.log.Warn("part 3a: the paused worker did not drain every post and fill every ready window", "pending", p, "want_ready", want)
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	res.DrainS = time.Since(t1).Seconds()
	w.stop() // its ephemeral znodes go; the ready windows and batches stay
	if res.Drained, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	res.LoadAfter = loadavg()
	n := float64(res.URLs)
	res.PostedDataPerURL = float64(res.Posted.DataBytes-res.Base.DataBytes) / n
	res.PostedZnodesPerURL = float64(res.Posted.Znodes-res.Base.Znodes) / n
	res.DrainedDataPerURL = float64(res.Drained.DataBytes-res.Base.DataBytes) / n
	res.DrainedZnodesPerURL = float64(res.Drained.Znodes-res.Base.Znodes) / n
	b.log.Info("part 3a done", "drain_s", round(res.DrainS, 1), "pending", res.Pending,
		"posted_b_per_url", round(res.PostedDataPerURL, 1), "drained_b_per_url", round(res.DrainedDataPerURL, 1),
		"drained_znodes_per_url", round(res.DrainedZnodesPerURL, 3))
	return res, nil
}

// writeSeeds writes hosts x paths URLs, host by host, one per line.
func writeSeeds(p string, hosts, paths int) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for h := range hosts {
		for i := range paths {
			fmt.Fprintf(w, "http://h%05d.example/p/%d\n", h, i)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (b *bench) runBig(ctx context.Context) (*bigResult, error) {
	o := b.opts
	res := &bigResult{Target: o.bigHosts * o.bigPaths, Hosts: o.bigHosts, Paths: o.bigPaths, TimeLimitS: o.bigTime.Seconds(), Heap: "1g"}
	b.log.Info("part 3c: big frontier", "urls", res.Target, "time_limit", o.bigTime, "zk_heap", res.Heap)
	zk, err := b.startZK(ctx, zkSpec{dir: "big/zk", forceSync: true, heap: res.Heap})
	if err != nil {
		return nil, err
	}
	defer zk.close()
	res.LoadBefore = loadavg()
	if res.Base, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	front, _, err := frontier.Create(ctx, zk.client, "/zkcrawl/big", frontier.DefaultLayout)
	if err != nil {
		return nil, err
	}
	const batch, callers = 20000, 3
	var next, done atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, callers)
	t0 := time.Now()
	limit := time.AfterFunc(o.bigTime, func() { stop.Store(true) })
	defer limit.Stop()
	progress := time.NewTicker(15 * time.Second)
	defer progress.Stop()
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-quit:
				return
			case <-progress.C:
				n := done.Load()
				b.log.Info("part 3c: seeding", "enqueued", n, "per_s", round(float64(n)/time.Since(t0).Seconds(), 0))
			}
		}
	}()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]frontier.Item, 0, batch)
			for !stop.Load() {
				start := int(next.Add(batch)) - batch
				if start >= res.Target {
					return
				}
				items = items[:0]
				for i := start; i < min(start+batch, res.Target); i++ {
					items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%06d.example/p/%d", i/res.Paths, i%res.Paths)})
				}
				r, err := front.Enqueue(ctx, items)
				if err == nil && r.Posted != len(items) {
					err = fmt.Errorf("enqueue %d URLs from %s: %d posted, %d duplicates", len(items), items[0].URL, r.Posted, r.Duplicates)
				}
				if err != nil {
					errc <- err
					return
				}
				done.Add(int64(len(items)))
			}
		}()
	}
	wg.Wait()
	close(quit)
	res.SeedS = time.Since(t0).Seconds()
	res.StoppedByTimeLimitS = stop.Load()
	close(errc)
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	res.URLs = int(done.Load())
	res.SeedPerS = float64(res.URLs) / res.SeedS
	if res.After, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	if p, err := readProc(zk.pid); err == nil {
		res.JVMPeakMB = float64(p.PeakKB) / 1024
	}
	if res.URLs > 0 {
		res.DataPerURL = float64(res.After.DataBytes-res.Base.DataBytes) / float64(res.URLs)
	}
	dataDir := filepath.Join(zk.srv.Dir(), "data")
	snaps, logs := dataFiles(dataDir)
	res.Snapshots = len(snaps)
	for _, s := range snaps {
		res.LargestSnapshotMB = max(res.LargestSnapshotMB, float64(s)/(1<<20))
	}
	for _, l := range logs {
		res.TxnLogMB += float64(l) / (1 << 20)
	}
	b.log.Info("part 3c: seeded", "urls", res.URLs, "s", round(res.SeedS, 1), "per_s", round(res.SeedPerS, 0),
		"data_mb", round(float64(res.After.DataBytes)/(1<<20), 1), "rss_mb", res.After.RSSKB/1024)

	// Restart: ZooKeeper reads the latest snapshot and the transaction log
	// after it, and writes a fresh snapshot before it serves.
	before := snapshotNames(dataDir)
	t1 := time.Now()
	if err := zk.srv.Restart(ctx); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	res.RestartS = time.Since(t1).Seconds()
	for name, size := range snapshotSizes(dataDir) {
		if !before[name] {
			res.RestartSnapshotMB = max(res.RestartSnapshotMB, float64(size)/(1<<20))
		}
	}
	res.LargestSnapshotMB = max(res.LargestSnapshotMB, res.RestartSnapshotMB)
	if pid, err := zkPid(zk.srv.Dir()); err == nil {
		zk.pid = pid
		if p, err := readProc(pid); err == nil {
			res.AfterRestartRSSMB = float64(p.RSSKB) / 1024
		}
	}
	res.LoadAfter = loadavg()
	b.log.Info("part 3c done", "restart_s", round(res.RestartS, 2), "snapshot_mb", round(res.LargestSnapshotMB, 1))
	return res, nil
}

// dataFiles returns the sizes of the snapshot and transaction log files in
// a ZooKeeper data dir (dataDir/version-2/snapshot.* and log.*).
func dataFiles(dataDir string) (snaps, logs []int64) {
	entries, _ := os.ReadDir(filepath.Join(dataDir, "version-2"))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(e.Name(), "snapshot."):
			snaps = append(snaps, info.Size())
		case strings.HasPrefix(e.Name(), "log."):
			logs = append(logs, info.Size())
		}
	}
	return snaps, logs
}

func snapshotSizes(dataDir string) map[string]int64 {
	out := map[string]int64{}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "version-2"))
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "snapshot.") {
			out[e.Name()] = info.Size()
		}
	}
	return out
}

func snapshotNames(dataDir string) map[string]bool {
	out := map[string]bool{}
	for n := range snapshotSizes(dataDir) {
		out[n] = true
	}
	return out
}
