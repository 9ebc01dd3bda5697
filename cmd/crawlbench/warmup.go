package main

// The ZooKeeper shared by parts 1 and 2, and its warm-up. A fresh JVM
// spends seconds of CPU in its JIT compilers (measured: about a fifth of
// the machine during a 3 s crawl right after start), which would be charged
// to whichever crawl runs first. A deployed ZooKeeper runs for months, so
// the benchmark first drives the queue recipe's operation mix (pipelined
// enqueue multis, reads, claim multis, complete multis, child listings)
// through it in-process, then measures on the warm server.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// sharedZK is the server of parts 1 and 2.
type sharedZK struct {
	srv    *testenv.ZKServer
	pid    int
	client *coord.Client
	warmS  float64
}

// sharedServer starts (once) and warms up the ZooKeeper of parts 1 and 2:
// tickTime 2 s (the usual production value), a 1 GiB heap.
func (b *bench) sharedServer(ctx context.Context) (*sharedZK, error) {
	if b.shared != nil {
		return b.shared, nil
	}
	dir, err := filepath.Abs(filepath.Join(b.outDir, "zk"))
	if err != nil {
		return nil, err
	}
	srv, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{
		TickTime: 2 * time.Second, Dir: dir, Logger: b.quiet,
		JavaOpts: append(b.zkJavaOpts("1g"), "-Xlog:gc:file="+filepath.Join(dir, "gc.log")),
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
	client, err := coord.Connect(ctx, srv.Addr(), coord.WithLogger(b.quiet))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	s := &sharedZK{srv: srv, pid: pid, client: client}
	t0 := time.Now()
	if err := warmUp(ctx, client, b.opts.warmupItems); err != nil {
		client.Close()
		_ = srv.Close()
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	s.warmS = time.Since(t0).Seconds()
	b.log.Info("ZooKeeper for parts 1 and 2 warmed up", "items", b.opts.warmupItems, "s", round(s.warmS, 1))
	b.shared = s
	return s, nil
}

// close stops the shared server and removes its data (snapshots and
// transaction logs; zookeeper.log and gc.log stay).
func (s *sharedZK) close() {
	s.client.Close()
	_ = s.srv.Close()
	_ = os.RemoveAll(filepath.Join(s.srv.Dir(), "data"))
}

// warmUp enqueues n items into a throwaway crawl and claims and completes
// every one of them, 16 at a time.
func warmUp(ctx context.Context, c *coord.Client, n int) error {
	if n <= 0 {
		return nil
	}
	layout := frontier.Layout{Shards: 256, Spread: 8}
	front, _, err := frontier.Create(ctx, c, "/zkcrawl/warmup", layout)
	if err != nil {
		return err
	}
	items := make([]frontier.Item, 0, n)
	for i := range n {
		items = append(items, frontier.Item{URL: fmt.Sprintf("http://w%03d.example/p/%d", i%100, i)})
	}
	for i := 0; i < n; i += 1000 {
		if _, err := front.Enqueue(ctx, items[i:min(i+1000, n)]); err != nil {
			return err
		}
	}
	q := front.Queue()
	sess, err := c.Session(ctx)
	if err != nil {
		return err
	}
	return forEach(ctx, q.Shards(), 16, func(ctx context.Context, s int) error {
		names, _, err := q.Items(ctx, s)
		if err != nil {
			return err
		}
		for _, name := range names {
			cl, err := q.Claim(ctx, sess, s, name)
			if err == nil {
				err = cl.Complete(ctx)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}
