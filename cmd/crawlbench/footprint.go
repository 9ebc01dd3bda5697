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
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// runQueued runs part 3a: bin/seeder queues the URLs on a fresh
// ZooKeeper, then a paused worker drains them into backlogs and ready
// windows; ZooKeeper's footprint is read before, between and after.
func (b *bench) runQueued(ctx context.Context) (*report.Queued, error) {
	o := b.opts
	// The crawl runs the default config but for paused: the workers' window.
	res := &report.Queued{Hosts: o.queuedHosts, URLs: o.queuedHosts * o.queuedPaths, Window: frontier.ReadyWindow(config.Default())}
	b.log.Info("part 3a: queued URLs via bin/seeder", "urls", res.URLs, "hosts", res.Hosts)
	dir := filepath.Join(o.outDir, "queued")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	seedPath := filepath.Join(dir, "seeds.txt")
	if err := writeSeeds(seedPath, o.queuedHosts, o.queuedPaths); err != nil {
		return nil, err
	}
	zk, base, err := b.startOwnZK(ctx, "queued/zk")
	if err != nil {
		return nil, err
	}
	defer zk.close()
	res.Base, res.LoadBefore = base, loadavg()
	// Default config but paused: the worker started below claims nothing.
	crawl := "queued"
	t0 := time.Now()
	out, err := b.runSeeder(ctx, zk.srv.Addr(), crawl, dir, map[string]any{"paused": true}, seedPath, 10*time.Minute)
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
	if err := b.drain(ctx, zk, crawl, dir, res); err != nil {
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

// drain starts one worker on the paused crawl and waits (up to 5 minutes)
// until it has moved every inbox post into the backlogs and filled every
// host's ready window, then stops it and reads the footprint again.
func (b *bench) drain(ctx context.Context, zk *benchZK, crawl, dir string, res *report.Queued) error {
	front, err := frontier.Open(ctx, zk.client, crawlRoot(crawl))
	if err != nil {
		return err
	}
	t1 := time.Now()
	f, err := b.startFleet(ctx, zk.srv.Addr(), crawl, dir, 1)
	if err != nil {
		return err
	}
	defer f.kill()
	want := res.Hosts * res.Window
	deadline := time.Now().Add(5 * time.Minute)
	for {
		p, err := front.Pending(ctx)
		if err != nil {
			return err
		}
		res.Pending = p
		if p.Posts == 0 && p.Ready >= want {
			res.DrainedOK = true
			break
		}
		if time.Now().After(deadline) || f.workers[0].Exited() {
			b.log.Warn("part 3a: the paused worker did not drain every post and fill every ready window", "pending", p, "want_ready", want)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	res.DrainS = time.Since(t1).Seconds()
	f.stop() // its ephemeral znodes go; the ready windows and batches stay
	res.Drained, err = zk.footprint(ctx)
	return err
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

// runBig runs part 3c: a big frontier enqueued in-process into one
// ZooKeeper, its footprint and files, then a restart with that data.
func (b *bench) runBig(ctx context.Context) (*report.Big, error) {
	o := b.opts
	res := &report.Big{Target: o.bigHosts * o.bigPaths, Hosts: o.bigHosts, Paths: o.bigPaths, TimeLimitS: o.bigTime.Seconds(), Heap: zkHeap}
	b.log.Info("part 3c: big frontier", "urls", res.Target, "time_limit", o.bigTime, "zk_heap", res.Heap)
	zk, base, err := b.startOwnZK(ctx, "big/zk")
	if err != nil {
		return nil, err
	}
	defer zk.close()
	res.Base, res.LoadBefore = base, loadavg()
	front, _, err := frontier.Create(ctx, zk.client, crawlRoot("big"), frontier.DefaultLayout)
	if err != nil {
		return nil, err
	}
	if err := b.seedBig(ctx, front, res); err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	if res.After, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	if p, err := zk.jvm(); err == nil {
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
	t1 := time.Now()
	if err := zk.srv.Restart(ctx); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	res.RestartS = time.Since(t1).Seconds()
	after, _ := dataFiles(dataDir)
	for name, size := range after {
		if _, old := snaps[name]; !old {
			res.RestartSnapshotMB = max(res.RestartSnapshotMB, float64(size)/(1<<20))
		}
	}
	res.LargestSnapshotMB = max(res.LargestSnapshotMB, res.RestartSnapshotMB)
	if p, err := zk.jvm(); err == nil {
		res.AfterRestartRSSMB = float64(p.RSSKB) / 1024
	}
	res.LoadAfter = loadavg()
	b.log.Info("part 3c done", "restart_s", round(res.RestartS, 2), "snapshot_mb", round(res.LargestSnapshotMB, 1))
	return res, nil
}

// seedBig enqueues res.Target URLs http://hNNNNNN.example/p/N, host by
// host, with frontier.Enqueue from 3 goroutines, 20,000 URLs a call, until
// all are in or --big-time has passed; it fills in the count, the time and
// the rate, logging progress every 15 s. Errors: an enqueue failed or
// posted fewer URLs than given.
func (b *bench) seedBig(ctx context.Context, front *frontier.Frontier, res *report.Big) error {
	const batch, callers = 20000, 3
	var next, done atomic.Int64
	var stop atomic.Bool
	t0 := time.Now()
	limit := time.AfterFunc(b.opts.bigTime, func() { stop.Store(true) })
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
	g, gctx := errgroup.WithContext(ctx)
	for range callers {
		g.Go(func() error {
			items := make([]frontier.Item, 0, batch)
			for !stop.Load() {
				start := int(next.Add(batch)) - batch
				if start >= res.Target {
					return nil
				}
				items = items[:0]
				for i := start; i < min(start+batch, res.Target); i++ {
					items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%06d.example/p/%d", i/res.Paths, i%res.Paths)})
				}
				r, err := front.Enqueue(gctx, items)
				if err == nil && r.Posted != len(items) {
					err = fmt.Errorf("enqueue %d URLs from %s: %d posted, %d duplicates", len(items), items[0].URL, r.Posted, r.Duplicates)
				}
				if err != nil {
					return err
				}
				done.Add(int64(len(items)))
			}
			return nil
		})
	}
	err := g.Wait()
	close(quit)
	res.SeedS = time.Since(t0).Seconds()
	res.StoppedByTimeLimitS = stop.Load()
	res.URLs = int(done.Load())
	res.SeedPerS = float64(res.URLs) / res.SeedS
	return err
}

// dataFiles returns the snapshot files (their sizes by name) and the sizes
// of the transaction logs in a ZooKeeper data dir (dataDir/version-2/
// snapshot.* and log.*).
func dataFiles(dataDir string) (snaps map[string]int64, logs []int64) {
	snaps = map[string]int64{}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "version-2"))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(e.Name(), "snapshot."):
			snaps[e.Name()] = info.Size()
		case strings.HasPrefix(e.Name(), "log."):
			logs = append(logs, info.Size())
		}
	}
	return snaps, logs
}
