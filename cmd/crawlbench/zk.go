package main

// The benchmark's ZooKeeper servers: testenv.StartZooKeeper with the full
// JIT, a heap of the part's choosing and forceSync as asked (yes is
// ZooKeeper's production default; every write figure is also taken with
// no). Parts 1, 2 and 5 share one warm server per forceSync setting. And
// the readings taken of them: the zxid from the `srvr` four letter word
// (each write transaction, a multi counting once, increments it), `mntr`
// figures, and the JVM's CPU time and memory (testenv.ReadProcUsage).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
}

// zkHeap is the -Xmx of every server the benchmark starts.
const zkHeap = "1g"

// syncName is how logs and errors name a forceSync setting.
func syncName(forceSync bool) string {
	if forceSync {
		return "forceSync=yes"
	}
	return "forceSync=no"
}

// syncTag is how crawl, directory and file names tag a forceSync setting.
func syncTag(forceSync bool) string {
	if forceSync {
		return "fsync"
	}
	return "nosync"
}

// zkJavaOpts are the JVM flags added to testenv's: the full JIT (testenv
// stops at C1 to start test JVMs fast; a benchmark wants a server as
// deployed) and the heap.
func zkJavaOpts() []string {
	return []string{"-Xms256m", "-Xmx" + zkHeap, "-XX:TieredStopAtLevel=4"}
}

// startZK starts a standalone server (testenv.StartZooKeeper) in dir under
// the output directory, with the benchmark's JVM flags, forceSync as asked
// and tickTime tick (0: 2 s), and connects a client. The data directory is
// emptied first: old snapshots would confuse the sizes.
func (b *bench) startZK(ctx context.Context, dir string, forceSync bool, tick time.Duration) (*benchZK, error) {
	dir, err := filepath.Abs(filepath.Join(b.opts.outDir, dir))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(filepath.Join(dir, "data"))
	if tick == 0 {
		tick = 2 * time.Second
	}
	srv, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{
		TickTime: tick, Dir: dir, Logger: b.quiet, ForceSync: forceSync, StartTimeout: 3 * time.Minute,
		JavaOpts: append(zkJavaOpts(), "-Xlog:gc:file="+filepath.Join(dir, "gc.log")),
	})
	if err != nil {
		return nil, err
	}
	if b.zkVer == "" {
		_, b.zkVer, _ = readZxid(ctx, srv.Addr())
	}
	client, err := coord.Connect(ctx, srv.Addr(), coord.WithLogger(b.quiet), coord.WithSessionTimeout(20*time.Second))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &benchZK{srv: srv, client: client, forceSync: forceSync}, nil
}

// startOwnZK starts a part's own server (forceSync=yes) in dir and reads
// its footprint before anything is written.
func (b *bench) startOwnZK(ctx context.Context, dir string) (*benchZK, report.ZKFootprint, error) {
	z, err := b.startZK(ctx, dir, true, 0)
	if err != nil {
		return nil, report.ZKFootprint{}, err
	}
	f, err := z.footprint(ctx)
	if err != nil {
		z.close()
	}
	return z, f, err
}

// close stops the server and removes its snapshots and transaction logs
// (zookeeper.log and gc.log stay).
func (z *benchZK) close() {
	z.client.Close()
	_ = z.srv.Close()
	_ = os.RemoveAll(filepath.Join(z.srv.Dir(), "data"))
}

// sharedServer starts (once per forceSync setting) the warm ZooKeeper of
// parts 1, 2 and 5: tickTime 2 s, a 1 GiB heap. A fresh JVM spends seconds
// of CPU in its JIT compilers, which a server running for months does not,
// so each is first warmed up by warm (part 1: one unrecorded 3-worker crawl
// of the synthetic web; part 2, when part 1 did not run: realWarmups crawls
// of the manual; nil: none), its time recorded in b.warmS.
func (b *bench) sharedServer(ctx context.Context, forceSync bool, warm func(z *benchZK) error) (*benchZK, error) {
	if z := b.shared[forceSync]; z != nil {
		return z, nil
	}
	name := "zk-fsync-no"
	if forceSync {
		name = "zk-fsync-yes"
	}
	z, err := b.startZK(ctx, name, forceSync, 0)
	if err != nil {
		return nil, err
	}
	if warm != nil {
		t0 := time.Now()
		if err := warm(z); err != nil {
			z.close()
			return nil, fmt.Errorf("warm-up crawl (%s): %w", syncName(forceSync), err)
		}
		b.warmS = append(b.warmS, time.Since(t0).Seconds())
		b.log.Info("ZooKeeper warmed up", "fsync", forceSync, "s", round(time.Since(t0).Seconds(), 1))
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
	m, err := fourLetterFields(ctx, z.srv.Addr(), "mntr", "\t")
	if err != nil {
		return report.ZKFootprint{}, err
	}
	var f report.ZKFootprint
	if f.DataBytes, err = strconv.ParseInt(m["zk_approximate_data_size"], 10, 64); err != nil {
		return f, fmt.Errorf("mntr zk_approximate_data_size %q: %w", m["zk_approximate_data_size"], err)
	}
	if f.Znodes, err = strconv.ParseInt(m["zk_znode_count"], 10, 64); err != nil {
		return f, fmt.Errorf("mntr zk_znode_count %q: %w", m["zk_znode_count"], err)
	}
	if p, err := z.jvm(); err == nil {
		f.RSSKB = p.RSSKB
	}
	return f, nil
}

// jvm reads the CPU time and memory of the server's JVM from /proc.
func (z *benchZK) jvm() (testenv.ProcUsage, error) { return testenv.ReadProcUsage(z.srv.Pid()) }

// zkMark is a reading of a server's last zxid and its JVM's CPU time: the
// start of a measured interval.
type zkMark struct {
	zxid int64
	cpu  time.Duration
}

// mark reads the zxid (`srvr`) and the JVM's CPU time.
func (z *benchZK) mark(ctx context.Context) (zkMark, error) {
	zxid, _, err := readZxid(ctx, z.srv.Addr())
	if err != nil {
		return zkMark{}, err
	}
	p, err := z.jvm()
	return zkMark{zxid: zxid, cpu: p.CPU}, err
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

// fourLetterFields sends a four letter word to addr and returns its
// answer's "key<sep>value" lines by key (ZooKeeper Administrator's Guide,
// "The Four Letter Words": `srvr` separates with ":", `mntr` with a tab).
// Errors: the exchange failed, or the answer has no such line.
func fourLetterFields(ctx context.Context, addr, word, sep string) (map[string]string, error) {
	out, err := testenv.FourLetterWord(ctx, addr, word)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for line := range strings.Lines(out) {
		if k, v, ok := strings.Cut(line, sep); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s from %s: no key/value lines in %q", word, addr, strings.TrimSpace(out))
	}
	return m, nil
}

// readZxid returns the last zxid `srvr` reports (each write transaction,
// a multi counting once, increments it) and the server's version.
// Errors: the exchange failed, or Zxid is missing or malformed.
func readZxid(ctx context.Context, addr string) (zxid int64, version string, err error) {
	m, err := fourLetterFields(ctx, addr, "srvr", ":")
	if err != nil {
		return 0, "", err
	}
	if zxid, err = strconv.ParseInt(strings.TrimPrefix(m["Zxid"], "0x"), 16, 64); err != nil {
		return 0, "", fmt.Errorf("srvr from %s: Zxid %q: %w", addr, m["Zxid"], err)
	}
	return zxid, m["Zookeeper version"], nil
}

// selfCPU returns this process's CPU time so far (user plus system).
func selfCPU() time.Duration {
	u, err := testenv.ReadProcUsage(os.Getpid())
	if err != nil {
		return 0
	}
	return u.CPU
}
