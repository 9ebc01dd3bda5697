package main

// Part 3: the frontier's footprint in ZooKeeper: (a) URLs seeded, then drained
// by a paused worker; (b) fetched URLs (part 1); (c) a big frontier seeded and
// drained in-process, with heaps, snapshot and restart.

import (
	"context"
	"errors"
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
	"github.com/zkcrawl/zkcrawl/testenv"
)

// The sizes of part 3a, and part 3c's URLs per host.
const (
	queuedHosts, queuedPaths = 3000, 100
	bigPaths                 = 100
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
	if err := errors.Join(os.MkdirAll(dir, 0o755), os.WriteFile(filepath.Join(dir, "seeds.txt"), []byte(seeds.String()), 0o644)); err != nil {
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
	res.SeederS, res.SeederOutput = time.Since(t0).Seconds(), strings.TrimSpace(out)
	res.SeedPerS = float64(res.URLs) / res.SeederS
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
	_, _ = f.stopAndRead() // its ephemeral znodes go; the ready windows and batches stay
	res.Drained, err = zk.footprint(ctx)
	return err
}

// runBig runs part 3c: --big-urls URLs seeded and drained (drainBig) in one
// ZooKeeper of --big-heap (G1); on forceSync=yes then its live heap, files,
// seenHeap, two restarts and, with --big-nosync, forceSync=no (res.NoSync).
func (b *bench) runBig(ctx context.Context, forceSync bool) (*report.Big, error) {
	o := b.opts
	res := &report.Big{Target: o.bigURLs, Hosts: (o.bigURLs + bigPaths - 1) / bigPaths, Paths: bigPaths, TimeLimitS: o.bigTime.Seconds(), Heap: o.bigHeap}
	srv := map[bool]report.Server{true: report.Fsync, false: report.NoFsync}[forceSync]
	zk, err := b.startZK(ctx, "big/zk-"+serverTag(srv), srv, 0, "-Xms"+o.bigHeap, "-Xmx"+o.bigHeap, "-XX:-UseSerialGC", "-XX:+UseG1GC")
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
	if err := b.drainBig(ctx, zk, res); err != nil || !forceSync {
		return res, err
	}
	kb, _ := zk.ens.Servers()[0].LiveHeapKB(ctx) // 0: no jcmd
	res.LiveHeapMB = float64(kb) / 1024
	if p, err := zk.mark(ctx); err == nil {
		res.JVMPeakMB = float64(p.PeakKB) / 1024
	}
	snaps, logs, _ := zk.ens.Servers()[0].DataFiles()
	res.TxnLogMB, res.Snapshots = float64(logs)/(1<<20), len(snaps)
	for _, n := range snaps {
		res.LargestSnapshotMB = max(res.LargestSnapshotMB, float64(n)/(1<<20))
	}
	if err := seenHeap(ctx, front, res); err != nil {
		return res, fmt.Errorf("seen-set heap: %w", err)
	}
	for _, into := range []*float64{&res.RestartS, &res.SnapRestartS} { // replaying the log, then from the snapshot the first wrote
		t1 := time.Now()
		if err := zk.ens.Servers()[0].Restart(ctx); err != nil {
			return res, fmt.Errorf("restart: %w", err)
		}
		*into = time.Since(t1).Seconds()
	}
	after, _, _ := zk.ens.Servers()[0].DataFiles() // the restarts' snapshots are the largest: the data only grew
	for _, n := range after {
		res.RestartSnapshotMB = max(res.RestartSnapshotMB, float64(n)/(1<<20))
	}
	res.LargestSnapshotMB = max(res.LargestSnapshotMB, res.RestartSnapshotMB)
	if p, err := zk.mark(ctx); err == nil {
		res.AfterRestartRSSMB = float64(p.RSSKB) / 1024
	}
	if res.LoadAfter = loadavg(); b.opts.bigNoSync {
		zk.close()
		res.NoSync, err = b.runBig(ctx, false)
	}
	return res, err
}

// drainBig runs the groups' owners in-process as a worker does (max_frontier_bytes
// at its 1 TiB cap), --big-wave groups at a time, until their inboxes are
// empty and windows full, or --big-time.
func (b *bench) drainBig(ctx context.Context, zk *benchZK, res *report.Big) error {
	front, err := frontier.Open(ctx, zk.client, crawlRoot("big"))
	if err != nil {
		return err
	}
	sess, err := zk.client.Session(ctx)
	if err != nil {
		return err
	}
	cfg, layout := config.Default(), frontier.DefaultLayout
	cfg.MaxFrontierBytes = 1 << 40
	var dropped atomic.Int64
	heap0, t0 := heapAfterGC(), time.Now()
	owner := frontier.NewOwner(front, frontier.OwnerOptions{Log: b.quiet, Config: func() config.Config { return cfg }, Dropped: func(_ string, n int) { dropped.Add(int64(n)) }})
	res.DrainedOK = true
	for lo := 0; lo < layout.Groups() && res.DrainedOK && err == nil; lo += b.opts.bigWave {
		hi, shards, urls, posts := min(lo+b.opts.bigWave, layout.Groups()), []int(nil), 0, 0
		octx, stop := context.WithCancel(ctx)
		for g := lo; g < hi; g++ {
			go owner.Run(octx, sess, g)
			shards = append(shards, layout.GroupShards(g)...)
		}
		res.DrainedOK, err = poll(ctx, time.Second, time.Until(t0.Add(b.opts.bigTime)), func() (bool, error) {
			qp, err := front.Queue().Pending(ctx, shards...)
			st, err2 := front.Backlog().Stats(ctx)
			if err = errors.Join(err, err2); err != nil {
				return false, err
			}
			posts, urls = 0, qp.Queued
			for g := lo; g < hi; g++ {
				posts, urls = posts+st[g].Posts, urls+st[g].Backlog
			}
			return posts == 0 && qp.Queued*res.Paths >= urls*frontier.ReadyWindow(cfg), nil // windows full: ReadyWindow items per res.Paths URLs, or more
		})
		if p, perr := testenv.ReadProcUsage(os.Getpid()); lo == 0 && perr == nil {
			res.OwnerHeapBPerURL, res.OwnerRSSMB = float64(heapAfterGC()-heap0)/float64(max(urls, 1)), float64(p.RSSKB)/1024
		}
		stop()
		b.log.Info("part 3c: drain wave done", "fsync", zk.ForceSync, "groups", fmt.Sprintf("%d-%d", lo, hi-1), "ok", res.DrainedOK, "s", time.Since(t0).Round(time.Second))
	}
	if res.DrainS, res.Dropped = time.Since(t0).Seconds(), dropped.Load(); err == nil {
		res.Pending, err = front.Pending(ctx)
	}
	if err == nil {
		res.Drained, err = zk.footprint(ctx)
	}
	return err
}

// heapAfterGC returns the Go heap after two GCs (the second empties pools).
func heapAfterGC() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// seenHeap measures the live heap per seen key of a seeder's LoadKnown of
// every group (a second Frontier on the same root) and of group 0's set as
// Backlog.Keys and an owner hold it: runtime.ReadMemStats after two GCs
// (the second empties sync.Pools) with the keys, less without.
func seenHeap(ctx context.Context, front *frontier.Frontier, res *report.Big) error {
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
	res.SeedS, res.URLs = time.Since(t0).Seconds(), int(done.Load())
	res.SeedPerS = float64(res.URLs) / res.SeedS
	return err
}
