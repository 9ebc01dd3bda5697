package main

// The benchmark's ZooKeeper servers (testenv.StartEnsemble: of one member,
// standalone, or the 3-node ensemble; the full JIT, a 1 GiB heap) and their
// readings: four letter words (testenv.ReadZKStats) and the JVMs' /proc
// (testenv.ReadProcUsage).

import (
	"cmp"
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

// benchZK is one running ZooKeeper of the benchmark (standalone: an
// ensemble of one) and a client of it.
type benchZK struct {
	report.Server
	ens    *testenv.Ensemble
	addr   string // its connect string
	client *coord.Client
	base   report.ZKFootprint // read once started, before anything is written
}

// zkHeap is the -Xmx of every server the benchmark starts.
const zkHeap = "1g"

// zkJavaOpts are the JVM flags added to testenv's: the full JIT (testenv
// stops at C1 to start test JVMs fast; a benchmark wants a server as
// deployed) and the heap.
var zkJavaOpts = []string{"-Xms256m", "-Xmx" + zkHeap, "-XX:TieredStopAtLevel=4"}

// serverTag is how crawl, directory and file names name a shared server.
func serverTag(s report.Server) string {
	return map[report.Server]string{report.Fsync: "fsync", report.NoFsync: "nosync", report.Quorum: "quorum"}[s]
}

// startZK starts server s in dir under --out (emptied first: old snapshots
// would confuse the sizes), standalone (testenv.StartEnsemble of one, in
// dir/zk1) or the 3-node ensemble on loopback (dir/zk1..3), with tickTime
// tick (0: 2 s), connects a client and reads the footprint. javaOpts go
// after zkJavaOpts (a later -Xmx wins).
func (b *bench) startZK(ctx context.Context, dir string, s report.Server, tick time.Duration, javaOpts ...string) (*benchZK, error) {
	dir, err := filepath.Abs(filepath.Join(b.opts.outDir, dir))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	z := &benchZK{Server: s}
	if z.ens, err = testenv.StartEnsemble(ctx, map[bool]int{false: 1, true: 3}[s.Ensemble], testenv.ZKConfig{
		TickTime: cmp.Or(tick, 2*time.Second), Dir: dir, Logger: b.quiet, ForceSync: s.ForceSync, StartTimeout: 10 * time.Minute,
		JavaOpts: append(append(slices.Clone(zkJavaOpts), javaOpts...), "-Xlog:gc:file="+filepath.Join(dir, "gc-%p.log")),
	}); err != nil {
		return nil, err
	}
	z.addr = z.ens.ConnString()
	if b.zkVer == "" {
		st, _ := testenv.ReadZKStats(ctx, z.addr)
		b.zkVer = st.Version
	}
	if z.client, err = coord.Connect(ctx, z.addr, coord.Config{Logger: b.quiet, SessionTimeout: 20 * time.Second}); err != nil {
		_ = z.ens.Close()
		return nil, err
	}
	if z.base, err = z.footprint(ctx); err != nil {
		z.close()
		return nil, err
	}
	return z, nil
}

// close stops the servers and removes their snapshots and transaction
// logs (zookeeper.log and gc-<pid>.log stay).
func (z *benchZK) close() {
	z.client.Close()
	_ = z.ens.Close()
	for _, m := range z.ens.Servers() {
		_ = os.RemoveAll(filepath.Join(m.Dir(), "data"))
	}
}

// sharedServer starts (once per server) the server s of parts 1, 2 and
// 5, warmed up by warm (nil: none) as a long-running server's JIT is; the
// warm-up's time goes to b.warmS.
func (b *bench) sharedServer(ctx context.Context, s report.Server, warm func(z *benchZK) error) (*benchZK, error) {
	if z := b.shared[s]; z != nil {
		return z, nil
	}
	z, err := b.startZK(ctx, "zk-"+serverTag(s), s, 0)
	if err != nil {
		return nil, err
	}
	if warm != nil {
		t0 := time.Now()
		if err := warm(z); err != nil {
			z.close()
			return nil, fmt.Errorf("warm-up crawl (%s): %w", s.Label(), err)
		}
		b.warmS = append(b.warmS, time.Since(t0).Seconds())
		b.log.Info("ZooKeeper warmed up", "zk", s.Label(), "took", time.Since(t0).Round(100*time.Millisecond))
	}
	b.shared[s] = z
	return z, nil
}

// closeShared stops the shared servers.
func (b *bench) closeShared() {
	for k, z := range b.shared {
		z.close()
		delete(b.shared, k)
	}
}

// zkMark is one reading of a server (an ensemble's member of highest
// zxid, testenv.ReadZKStats), its JVMs' CPU time and memory (summed over
// an ensemble's; zero when /proc cannot be read) and the load average.
type zkMark struct {
	testenv.ZKStats
	testenv.ProcUsage
	load string
}

// mark reads the server, its JVMs and the load average.
func (z *benchZK) mark(ctx context.Context) (zkMark, error) {
	m := zkMark{load: loadavg()}
	for _, s := range z.ens.Servers() {
		if p, err := testenv.ReadProcUsage(s.Pid()); err == nil {
			m.CPU, m.RSSKB, m.PeakKB = m.CPU+p.CPU, m.RSSKB+p.RSSKB, m.PeakKB+p.PeakKB
		}
	}
	var err error
	m.ZKStats, err = testenv.ReadZKStats(ctx, z.addr)
	return m, err
}

// footprint is mark's data size, znode count and JVM resident memory.
func (z *benchZK) footprint(ctx context.Context) (report.ZKFootprint, error) {
	m, err := z.mark(ctx)
	return report.ZKFootprint{DataBytes: m.DataBytes, Znodes: m.Znodes, RSSKB: m.RSSKB}, err
}

// since returns the write transactions (zxid delta) and the JVMs' CPU
// seconds since m.
func (z *benchZK) since(ctx context.Context, m zkMark) (writes int64, cpuS float64, err error) {
	now, err := z.mark(ctx)
	if err != nil {
		return 0, 0, err
	}
	return now.Zxid - m.Zxid, (now.CPU - m.CPU).Seconds(), nil
}
