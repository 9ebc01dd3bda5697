package main

// The benchmark's ZooKeeper servers: testenv.StartZooKeeper with the full
// JIT, a heap of the part's choosing and forceSync as asked (yes is
// ZooKeeper's production default; every write figure is also taken with
// no). Parts 1 and 2 share one warm server per forceSync setting.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// benchZK is one running ZooKeeper of the benchmark and a client of it.
type benchZK struct {
	srv       *testenv.ZKServer
	pid       int
	client    *coord.Client
	forceSync bool
}

// zkSpec describes a server to start.
type zkSpec struct {
	dir       string // under the output directory
	forceSync bool
	heap      string // -Xmx
	tick      time.Duration
}

// syncName is how the report names a forceSync setting.
func syncName(forceSync bool) string {
	if forceSync {
		return "forceSync=yes"
	}
	return "forceSync=no"
}

// startZK starts a standalone server (testenv.StartZooKeeper) with the
// benchmark's JVM flags, finds its JVM and connects a client. The data
// directory is emptied first: old snapshots would confuse the sizes.
func (b *bench) startZK(ctx context.Context, s zkSpec) (*benchZK, error) {
	dir, err := filepath.Abs(filepath.Join(b.outDir, s.dir))
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(filepath.Join(dir, "data"))
	if s.tick == 0 {
		s.tick = 2 * time.Second
	}
	srv, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{
		TickTime: s.tick, Dir: dir, Logger: b.quiet, ForceSync: s.forceSync, StartTimeout: 3 * time.Minute,
		JavaOpts: append(b.zkJavaOpts(s.heap), "-Xlog:gc:file="+filepath.Join(dir, "gc.log")),
	})
	if err != nil {
		return nil, err
	}
	b.noteZK(ctx, srv.Addr())
	pid, err := zkPid(srv.Dir())
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	client, err := coord.Connect(ctx, srv.Addr(), coord.WithLogger(b.quiet), coord.WithSessionTimeout(20*time.Second))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &benchZK{srv: srv, pid: pid, client: client, forceSync: s.forceSync}, nil
}

// close stops the server and removes its snapshots and transaction logs
// (zookeeper.log and gc.log stay).
func (z *benchZK) close() {
	z.client.Close()
	_ = z.srv.Close()
	_ = os.RemoveAll(filepath.Join(z.srv.Dir(), "data"))
}

// zkFootprint is one reading of a server's data and memory.
type zkFootprint struct {
	DataBytes int64 // mntr zk_approximate_data_size: data plus path bytes of every znode
	Znodes    int64 // mntr zk_znode_count
	RSSKB     int64 // the JVM's VmRSS
}

// footprint reads mntr and the JVM's resident memory.
func (z *benchZK) footprint(ctx context.Context) (zkFootprint, error) {
	m, err := readMntr(ctx, z.srv.Addr())
	if err != nil {
		return zkFootprint{}, err
	}
	var f zkFootprint
	if f.DataBytes, err = strconv.ParseInt(m["zk_approximate_data_size"], 10, 64); err != nil {
		return f, fmt.Errorf("mntr zk_approximate_data_size %q: %w", m["zk_approximate_data_size"], err)
	}
	if f.Znodes, err = strconv.ParseInt(m["zk_znode_count"], 10, 64); err != nil {
		return f, fmt.Errorf("mntr zk_znode_count %q: %w", m["zk_znode_count"], err)
	}
	if p, err := readProc(z.pid); err == nil {
		f.RSSKB = p.RSSKB
	}
	return f, nil
}

// sharedServer starts (once per forceSync setting) the warm ZooKeeper of
// parts 1 and 2: tickTime 2 s, a 1 GiB heap. A fresh JVM spends seconds of
// CPU in its JIT compilers, which a server running for months does not, so
// each is first warmed up by one unrecorded 3-worker crawl of the synthetic
// web (warm).
func (b *bench) sharedServer(ctx context.Context, forceSync bool, warm func(z *benchZK) error) (*benchZK, error) {
	if z := b.shared[forceSync]; z != nil {
		return z, nil
	}
	name := "zk-fsync-no"
	if forceSync {
		name = "zk-fsync-yes"
	}
	z, err := b.startZK(ctx, zkSpec{dir: name, forceSync: forceSync, heap: "1g"})
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
