package main

// Part 3: the frontier's footprint in ZooKeeper. (a) URLs queued by
// bin/seeder, then drained by a paused worker into backlog batches and
// ready windows; (b) fetched URLs, measured in part 1; (c) a big frontier
// enqueued in-process, its snapshot and restart, and the heap per seen key.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// The sizes of parts 3a and 3c.
const (
	queuedHosts, queuedPaths = 3000, 100
	bigHosts, bigPaths       = 100000, 100
)

// runQueued runs part 3a.
func (b *bench) runQueued(ctx context.Context) (*report.Queued, error) {
	// The crawl runs the default config but for paused: the workers' window.
	res := &report.Queued{Hosts: queuedHosts, URLs: queuedHosts * queuedPaths, Window: frontier.ReadyWindow(config.Default())}
	dir := filepath.Join(b.opts.outDir, "queued")
	var seeds strings.Builder // the seeder's --seeds file, host by host
	for i := range res.URLs {
		fmt.Fprintf(&seeds, "http://h%05d.example/p/%d\n", i/queuedPaths, i%queuedPaths)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "seeds.txt"), []byte(seeds.String()), 0o644); err != nil {
		return nil, err
	}
	zk, err := b.startZK(ctx, "queued/zk", report.Fsync, 0)
	if err != nil {
		return nil, err
	}
	defer zk.close()
	res.Base, res.LoadBefore = zk.base, loadavg()
	t0 := time.Now()
	out, err := b.seed(ctx, zk.addr, "queued", dir, map[string]any{"paused": true}, nil, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	res.SeederS = time.Since(t0).Seconds()
	res.SeedPerS = float64(res.URLs) / res.SeederS
	res.SeederOutput = strings.TrimSpace(out)
	if res.Posted, err = zk.footprint(ctx); err != nil {
		return nil, err
	}
	if err := b.drain(ctx, zk, "queued", dir, res); err != nil {
		return nil, err
	}
	res.LoadAfter = loadavg()
	n := float64(res.URLs)
	res.PostedDataPerURL = float64(res.Posted.DataBytes-res.Base.DataBytes) / n
	res.PostedZnodesPerURL = float64(res.Posted.Znodes-res.Base.Znodes) / n
	res.DrainedDataPerURL = float64(res.Drained.DataBytes-res.Base.DataBytes) / n
	res.DrainedZnodesPerURL = float64(res.Drained.Znodes-res.Base.Znodes) / n
	return res, nil
}

// drain starts one worker on the paused crawl, waits (up to 5 minutes)
// until frontier.Pending shows no inbox post and every host's ready window
// filled, stops it and reads the footprint again.
func (b *bench) drain(ctx context.Context, zk *benchZK, crawl, dir string, res *report.Queued) error {
	front, err := frontier.Open(ctx, zk.client, crawlRoot(crawl))
	if err != nil {
		return err
	}
	t1 := time.Now()
	f, err := b.startFleet(ctx, zk.addr, crawl, dir, 1)
	if err != nil {
		return err
	}
	defer f.kill()
	want := res.Hosts * res.Window
	if _, err := poll(ctx, 250*time.Millisecond, 5*time.Minute, func() (bool, error) {
		var err error
		res.Pending, err = front.Pending(ctx)
		res.DrainedOK = res.Pending.Posts == 0 && res.Pending.Ready >= want
		return res.DrainedOK || f.workers[0].Exited(), err
	}); err != nil {
		return err
	}
	if !res.DrainedOK {
		b.log.Warn("part 3a: the paused worker did not drain every post and fill every ready window", "pending", res.Pending, "want_ready", want)
	}
	res.DrainS = time.Since(t1).Seconds()
	f.stop() // its ephemeral znodes go; the ready windows and batches stay
	res.Drained, err = zk.footprint(ctx)
	return err
}

// runBig runs part 3c: a big frontier enqueued in-process into one
// ZooKeeper, its footprint and files, then a restart with that data.
func (b *bench) runBig(ctx context.Context) (*report.Big, error) {
	res := &report.Big{Target: bigHosts * bigPaths, Hosts: bigHosts, Paths: bigPaths, TimeLimitS: b.opts.bigTime.Seconds(), Heap: zkHeap}
	zk, err := b.startZK(ctx, "big/zk", report.Fsync, 0)
	if err != nil {
		return nil, err
	}
	defer zk.close()
	res.LoadBefore = loadavg()
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
	if p, err := zk.mark(ctx); err == nil {
		res.JVMPeakMB = float64(p.PeakKB) / 1024
	}
	dataDir := filepath.Join(zk.ens.Servers()[0].Dir(), "data", "version-2")
	snaps := map[string]float64{}
	res.TxnLogMB = dataFiles(dataDir, snaps)
	for _, mb := range snaps {
		res.LargestSnapshotMB = max(res.LargestSnapshotMB, mb)
	}
	res.Snapshots = len(snaps)
	if err := seenHeap(ctx, front, res); err != nil {
		return nil, fmt.Errorf("seen-set heap: %w", err)
	}
	t1 := time.Now()
	if err := zk.ens.Servers()[0].Restart(ctx); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	res.RestartS = time.Since(t1).Seconds()
	after := map[string]float64{}
	dataFiles(dataDir, after)
	for name, mb := range after {
		if _, old := snaps[name]; !old {
			res.RestartSnapshotMB = max(res.RestartSnapshotMB, mb)
		}
	}
	res.LargestSnapshotMB = max(res.LargestSnapshotMB, res.RestartSnapshotMB)
	if p, err := zk.mark(ctx); err == nil {
		res.AfterRestartRSSMB = float64(p.RSSKB) / 1024
	}
	res.LoadAfter = loadavg()
	return res, nil
}

// seenHeap measures the live heap per seen key of a seeder's LoadKnown of
// every group (a second Frontier on the same root) and of group 0's set as
// Backlog.Keys and an owner hold it: runtime.ReadMemStats after two GCs
// (the second empties sync.Pools) with the keys, less without.
func seenHeap(ctx context.Context, front *frontier.Frontier, res *report.Big) error {
	heapAfterGC := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	seeder := frontier.New(front.Queue(), frontier.DefaultLayout, 0)
	t0 := time.Now()
	n, err := seeder.LoadKnown(ctx)
	if err != nil {
		return err
	}
	res.KnownS, res.KnownKeys = time.Since(t0).Seconds(), n
	with := heapAfterGC()
	runtime.KeepAlive(seeder)
	seeder = nil
	res.KnownBPerKey = float64(with-heapAfterGC()) / float64(max(n, 1))
	set, err := front.Backlog().Keys(ctx, 0)
	if err != nil {
		return err
	}
	res.GroupKeys = set.Len()
	with = heapAfterGC()
	runtime.KeepAlive(set)
	set = nil
	res.GroupBPerKey = float64(with-heapAfterGC()) / float64(max(res.GroupKeys, 1))
	runtime.KeepAlive(front)
	return nil
}

// seedBig enqueues res.Target URLs http://hNNNNNN.example/p/N, host by
// host, with frontier.Enqueue, 3 calls at a time, 20,000 URLs a call, until
// all are in or --big-time has passed; it fills in the count, the time and
// the rate. Errors: an enqueue failed or posted fewer URLs than given.
func (b *bench) seedBig(ctx context.Context, front *frontier.Frontier, res *report.Big) error {
	const batch = 20000
	var done atomic.Int64
	t0 := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(3)
	for start := 0; start < res.Target && gctx.Err() == nil; start += batch {
		if time.Since(t0) > b.opts.bigTime {
			res.StoppedByTimeLimitS = true
			break
		}
		g.Go(func() error {
			items := make([]frontier.Item, 0, batch)
			for i := start; i < min(start+batch, res.Target); i++ {
				items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%06d.example/p/%d", i/res.Paths, i%res.Paths)})
			}
			r, err := front.Enqueue(gctx, items)
			if err == nil && r.Posted != len(items) {
				err = fmt.Errorf("enqueue %d URLs from %s: %d posted, %d duplicates", len(items), items[0].URL, r.Posted, r.Duplicates)
			}
			if n := done.Add(int64(r.Posted)); err == nil && n%1_000_000 == 0 {
				b.log.Info("part 3c: seeding", "enqueued", n)
			}
			return err
		})
	}
	err := g.Wait()
	res.SeedS = time.Since(t0).Seconds()
	res.URLs = int(done.Load())
	res.SeedPerS = float64(res.URLs) / res.SeedS
	return err
}

// dataFiles adds the size in MB of each snapshot.* in dir (a ZooKeeper
// data dir's version-2) to snaps by name and returns the log.* files'
// summed; none when unreadable.
func dataFiles(dir string, snaps map[string]float64) (logsMB float64) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		mb := float64(info.Size()) / (1 << 20)
		if strings.HasPrefix(e.Name(), "snapshot.") {
			snaps[e.Name()] = mb
		} else if strings.HasPrefix(e.Name(), "log.") {
			logsMB += mb
		}
	}
	return logsMB
}
