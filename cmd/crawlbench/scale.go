package main

// Part 3: the frontier at scale. hosts x paths URLs (1,000,000 by default,
// http://hNNNNN.example/p/N: nothing is fetched) are enqueued in-process
// through frontier.Enqueue (the seeder's and the workers' path: one multi
// per URL, pipelined) into a crawl with the default layout (256 shards,
// host spread 8). Then: the largest queue and seen-set parents, ZooKeeper's
// memory (mntr and the JVM's RSS), the snapshot files, claim and release
// latency at that size, and the time ZooKeeper takes to restart with it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// scaleResult is part 3.
type scaleResult struct {
	URLs, Hosts, Paths  int
	Shards, Spread      int
	ZKJavaOpts          []string
	SeedS               float64
	SeedPerS            float64
	SeedZKWrites        int64
	MaxQueueChildren    int
	MaxQueueShard       string
	MinQueueChildren    int
	MaxSeenChildren     int
	ZnodeCount          int64
	ApproxDataSizeMB    float64
	JVMRSSMB, JVMPeakMB float64
	ZKCPUS              float64
	Snapshots           int
	LargestSnapshotMB   float64
	TxnLogMB            float64
	Claims              int
	ClaimP50Ms          float64
	ClaimP99Ms          float64
	ReleaseP50Ms        float64
	ReleaseP99Ms        float64
	RestartS            float64 // ZooKeeper stop to serving again with the data
	RestartSnapshotMB   float64 // the snapshot written at restart
	LoadBefore          string
	LoadAfter           string
}

func (b *bench) runScale(ctx context.Context) (*scaleResult, error) {
	o := b.opts
	res := &scaleResult{Hosts: o.scaleHosts, Paths: o.scalePaths, URLs: o.scaleHosts * o.scalePaths,
		Shards: 256, Spread: 8, ZKJavaOpts: b.zkJavaOpts(o.scaleHeap)}
	b.log.Info("part 3: frontier at scale", "urls", res.URLs, "hosts", res.Hosts, "zk_heap", o.scaleHeap)
	dir := filepath.Join(b.outDir, "scale", "zk")
	_ = os.RemoveAll(dir) // snapshots of an earlier run would confuse the sizes
	zk, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{
		TickTime: 2 * time.Second, Dir: dir, JavaOpts: res.ZKJavaOpts, Logger: b.quiet,
		StartTimeout: 3 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = zk.Close()
		// Keep the figures, not the gigabyte of snapshots and logs.
		_ = os.RemoveAll(filepath.Join(dir, "data"))
	}()
	b.noteZK(ctx, zk.Addr())
	zkpid, err := zkPid(zk.Dir())
	if err != nil {
		return nil, err
	}
	client, err := coord.Connect(ctx, zk.Addr(), coord.WithLogger(b.quiet), coord.WithSessionTimeout(20*time.Second))
	if err != nil {
		return nil, err
	}
	defer client.Close()

	root := "/zkcrawl/scale"
	front, _, err := frontier.Create(ctx, client, root, frontier.Layout{Shards: res.Shards, Spread: res.Spread})
	if err != nil {
		return nil, err
	}
	res.LoadBefore = loadavg()
	s0, err := readSrvr(ctx, zk.Addr())
	if err != nil {
		return nil, err
	}
	z0, err := readProc(zkpid)
	if err != nil {
		return nil, err
	}

	// Seed: hosts are fed in order by a few concurrent Enqueue calls of
	// 1,000 URLs each (each call pipelines up to 256 multis).
	const batch, callers = 1000, 3
	next := atomic.Int64{}
	var done atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, callers)
	t0 := time.Now()
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	stopProgress := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopProgress:
				return
			case <-progress.C:
				n := done.Load()
				b.log.Info("part 3: seeding", "enqueued", n, "per_s", round(float64(n)/time.Since(t0).Seconds(), 0))
			}
		}
	}()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]frontier.Item, 0, batch)
			for {
				start := int(next.Add(batch)) - batch
				if start >= res.URLs {
					return
				}
				items = items[:0]
				for i := start; i < min(start+batch, res.URLs); i++ {
					h, p := i/res.Paths, i%res.Paths
					items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%05d.example/p/%d", h, p)})
				}
				r, err := front.Enqueue(ctx, items)
				if err == nil && r.Posted != len(items) {
					err = fmt.Errorf("enqueue %d URLs from %s: %d queued, %d duplicates", len(items), items[0].URL, r.Posted, r.Duplicates)
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
	close(stopProgress)
	res.SeedS = time.Since(t0).Seconds()
	close(errc)
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	res.SeedPerS = float64(res.URLs) / res.SeedS
	s1, err := readSrvr(ctx, zk.Addr())
	if err != nil {
		return nil, err
	}
	res.SeedZKWrites = s1.Zxid - s0.Zxid
	b.log.Info("part 3: seeded", "urls", res.URLs, "s", round(res.SeedS, 1), "per_s", round(res.SeedPerS, 0))

	// Parent sizes: numChildren of every queue shard and seen bucket.
	q := front.Queue()
	st, err := q.Stats(ctx)
	if err != nil {
		return nil, err
	}
	res.MinQueueChildren = -1
	for _, s := range st.Shards {
		if s.Queued > res.MaxQueueChildren {
			res.MaxQueueChildren, res.MaxQueueShard = s.Queued, s.Name
		}
		if res.MinQueueChildren < 0 || s.Queued < res.MinQueueChildren {
			res.MinQueueChildren = s.Queued
		}
	}
	for i := range 256 {
		_, zs, err := client.Conn().Exists(fmt.Sprintf("%s/seen/%02x", root, i))
		if err != nil {
			return nil, fmt.Errorf("seen bucket %02x: %w", i, err)
		}
		if zs != nil && int(zs.NumChildren) > res.MaxSeenChildren {
			res.MaxSeenChildren = int(zs.NumChildren)
		}
	}

	// Memory and snapshots.
	if m, err := readMntr(ctx, zk.Addr()); err == nil {
		v, _ := strconv.ParseFloat(m["zk_approximate_data_size"], 64)
		res.ApproxDataSizeMB = v / (1 << 20)
		res.ZnodeCount, _ = strconv.ParseInt(m["zk_znode_count"], 10, 64)
	} else {
		return nil, err
	}
	z1, err := readProc(zkpid)
	if err != nil {
		return nil, err
	}
	res.JVMRSSMB, res.JVMPeakMB = float64(z1.RSSKB)/1024, float64(z1.PeakKB)/1024
	res.ZKCPUS = (z1.CPU - z0.CPU).Seconds()
	snaps, logs := dataFiles(filepath.Join(dir, "data"))
	res.Snapshots = len(snaps)
	for _, s := range snaps {
		res.LargestSnapshotMB = max(res.LargestSnapshotMB, float64(s)/(1<<20))
	}
	for _, l := range logs {
		res.TxnLogMB += float64(l) / (1 << 20)
	}

	// Claim and release latency at this size: items spread over every
	// shard, 8 claims in flight at a time (a worker's claim loops run in
	// parallel too).
	if err := b.scaleClaims(ctx, client, q, res); err != nil {
		return nil, err
	}
	res.LoadAfter = loadavg()

	// Restart: ZooKeeper reads the latest snapshot and the transaction log
	// after it, and writes a fresh snapshot before it serves.
	client.Close()
	before := snapshotNames(filepath.Join(dir, "data"))
	t1 := time.Now()
	if err := zk.Restart(ctx); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	res.RestartS = time.Since(t1).Seconds()
	for name, size := range snapshotSizes(filepath.Join(dir, "data")) {
		if !before[name] {
			res.RestartSnapshotMB = max(res.RestartSnapshotMB, float64(size)/(1<<20))
		}
	}
	res.LargestSnapshotMB = max(res.LargestSnapshotMB, res.RestartSnapshotMB)
	b.log.Info("part 3 done", "max_queue_children", res.MaxQueueChildren, "data_mb", round(res.ApproxDataSizeMB, 0),
		"jvm_rss_mb", round(res.JVMRSSMB, 0), "snapshot_mb", round(res.LargestSnapshotMB, 0),
		"claim_p50_ms", round(res.ClaimP50Ms, 2), "claim_p99_ms", round(res.ClaimP99Ms, 2), "restart_s", round(res.RestartS, 1))
	return res, nil
}

// scaleClaims claims o.scaleClaims items (the first ones of every shard in
// turn) with 8 in flight, timing each Claim, then releases them, timing
// each Release.
func (b *bench) scaleClaims(ctx context.Context, client *coord.Client, q *coord.Queue, res *scaleResult) error {
	sess, err := client.Session(ctx)
	if err != nil {
		return err
	}
	type target struct {
		shard int
		name  string
	}
	per := (b.opts.scaleClaims + q.Shards() - 1) / q.Shards()
	var targets []target
	for s := 0; s < q.Shards() && len(targets) < b.opts.scaleClaims; s++ {
		names, _, err := q.Items(ctx, s)
		if err != nil {
			return err
		}
		for _, n := range names[:min(per, len(names))] {
			targets = append(targets, target{s, n})
		}
	}
	targets = targets[:min(len(targets), b.opts.scaleClaims)]
	claims := make([]*coord.Claim, len(targets))
	claimD := make([]time.Duration, len(targets))
	releaseD := make([]time.Duration, len(targets))
	err = forEach(ctx, len(targets), 8, func(ctx context.Context, i int) error {
		t := time.Now()
		cl, err := q.Claim(ctx, sess, targets[i].shard, targets[i].name)
		claimD[i] = time.Since(t)
		claims[i] = cl
		return err
	})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	err = forEach(ctx, len(targets), 8, func(ctx context.Context, i int) error {
		t := time.Now()
		err := claims[i].Release(ctx)
		releaseD[i] = time.Since(t)
		return err
	})
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	sortDur(claimD)
	sortDur(releaseD)
	res.Claims = len(targets)
	res.ClaimP50Ms = ms(exactQuantile(claimD, 0.5))
	res.ClaimP99Ms = ms(exactQuantile(claimD, 0.99))
	res.ReleaseP50Ms = ms(exactQuantile(releaseD, 0.5))
	res.ReleaseP99Ms = ms(exactQuantile(releaseD, 0.99))
	return nil
}

func sortDur(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
