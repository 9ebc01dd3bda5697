package main

// The benchmark's ZooKeeper servers (testenv.StartZooKeeper, the full JIT,
// a 1 GiB heap) and their readings: four letter words (testenv.ReadZKStats)
// and the JVM's /proc (testenv.ReadProcUsage).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// benchZK is one running ZooKeeper of the benchmark and a client of it.
type benchZK struct {
	srv       *testenv.ZKServer
	client    *coord.Client
	forceSync bool
	base      report.ZKFootprint // read once started, before anything is written
}

// zkHeap is the -Xmx of every server the benchmark starts.
const zkHeap = "1g"

// zkJavaOpts are the JVM flags added to testenv's: the full JIT (testenv
// stops at C1 to start test JVMs fast; a benchmark wants a server as
// deployed) and the heap.
var zkJavaOpts = []string{"-Xms256m", "-Xmx" + zkHeap, "-XX:TieredStopAtLevel=4"}

// syncTag is how crawl, directory and file names name a forceSync setting.
func syncTag(forceSync bool) string {
	return map[bool]string{true: "fsync", false: "nosync"}[forceSync]
}

// startZK starts a standalone server in dir under --out (its data
// directory emptied first: old snapshots would confuse the sizes) with
// forceSync as asked and tickTime tick (0: 2 s), connects a client and
// reads the footprint. javaOpts go after zkJavaOpts (a later -Xmx wins).
func (b *bench) startZK(ctx context.Context, dir string, forceSync bool, tick time.Duration, javaOpts ...string) (*benchZK, error) {
	dir, err := filepath.Abs(filepath.Join(b.opts.outDir, dir))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(filepath.Join(dir, "data"))
	if tick == 0 {
		tick = 2 * time.Second
	}
	srv, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{
		TickTime: tick, Dir: dir, Logger: b.quiet, ForceSync: forceSync, StartTimeout: 10 * time.Minute,
		JavaOpts: append(append(slices.Clone(zkJavaOpts), javaOpts...), "-Xlog:gc:file="+filepath.Join(dir, "gc.log")),
	})
	if err != nil {
		return nil, err
	}
	if b.zkVer == "" {
		st, _ := testenv.ReadZKStats(ctx, srv.Addr())
		b.zkVer = st.Version
	}
	client, err := coord.Connect(ctx, srv.Addr(), coord.WithLogger(b.quiet), coord.WithSessionTimeout(20*time.Second))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	z := &benchZK{srv: srv, client: client, forceSync: forceSync}
	if z.base, err = z.footprint(ctx); err != nil {
		z.close()
		return nil, err
	}
	return z, nil
}

// close stops the server and removes its snapshots and transaction logs
// (zookeeper.log and gc.log stay).
func (z *benchZK) close() {
	z.client.Close()
	_ = z.srv.Close()
	_ = os.RemoveAll(filepath.Join(z.srv.Dir(), "data"))
}

// sharedServer starts (once per forceSync setting) the server of parts 1,
// 2 and 5, warmed up by warm (nil: none) as a long-running server's JIT
// is; the warm-up's time goes to b.warmS.
func (b *bench) sharedServer(ctx context.Context, forceSync bool, warm func(z *benchZK) error) (*benchZK, error) {
	if z := b.shared[forceSync]; z != nil {
		return z, nil
	}
	z, err := b.startZK(ctx, "zk-"+syncTag(forceSync), forceSync, 0)
	if err != nil {
		return nil, err
	}
	if warm != nil {
		t0 := time.Now()
		if err := warm(z); err != nil {
			z.close()
			return nil, fmt.Errorf("warm-up crawl (forceSync=%v): %w", forceSync, err)
		}
		b.warmS = append(b.warmS, time.Since(t0).Seconds())
		b.log.Info("ZooKeeper warmed up", "fsync", forceSync, "took", time.Since(t0).Round(100*time.Millisecond))
	}
	b.shared[forceSync] = z
	return z, nil
}

// closeShared stops the shared servers.
func (b *bench) closeShared() {
	for k, z := range b.shared {
		z.close()
		delete(b.shared, k)
	}
}

// footprint reads mntr's data size and znode count, and the JVM's
// resident memory (0 when /proc cannot be read).
func (z *benchZK) footprint(ctx context.Context) (report.ZKFootprint, error) {
	st, err := testenv.ReadZKStats(ctx, z.srv.Addr())
	f := report.ZKFootprint{DataBytes: st.DataBytes, Znodes: st.Znodes}
	if p, perr := z.jvm(); perr == nil {
		f.RSSKB = p.RSSKB
	}
	return f, err
}

// jvm reads the CPU time and memory of the server's JVM from /proc.
func (z *benchZK) jvm() (testenv.ProcUsage, error) { return testenv.ReadProcUsage(z.srv.Pid()) }

// zkMark is a reading of a server's last zxid, its JVM's CPU time and the
// machine's load average: the start of a measured interval.
type zkMark struct {
	zxid int64
	cpu  time.Duration
	load string
}

// mark reads the zxid, the JVM's CPU time and the load average.
func (z *benchZK) mark(ctx context.Context) (zkMark, error) {
	st, err := testenv.ReadZKStats(ctx, z.srv.Addr())
	if err != nil {
		return zkMark{}, err
	}
	p, err := z.jvm()
	return zkMark{zxid: st.Zxid, cpu: p.CPU, load: loadavg()}, err
}

// since returns the write transactions (zxid delta) and the JVM's CPU
// seconds since m.
func (z *benchZK) since(ctx context.Context, m zkMark) (writes int64, cpuS float64, err error) {
	now, err := z.mark(ctx)
	if err != nil {
		return 0, 0, err
	}
	return now.zxid - m.zxid, (now.cpu - m.cpu).Seconds(), nil
}
