package main

// Part 5: the write ceiling of the benchmark's ZooKeeper. --ceiling-clients
// sessions, each with --ceiling-inflight goroutines, send small multis
// (create a persistent znode, delete it: one transaction each, leaving
// nothing behind) as fast as the server commits them, for --ceiling-time,
// on the forceSync=yes and the forceSync=no server. transactions/s is
// committed multis / elapsed time (the zxid delta over the run is recorded
// beside it, not checked against it); the cluster pages/s it implies is
// that ceiling divided by part 1's ZooKeeper writes per page of the run
// with the most workers (3 by default) on the same forceSync: the most
// pages per second any number of workers could finish through this one
// server.
//
// The multis go straight to go-zookeeper (Client.Conn), not through
// coord's group commit, so each is one transaction as asked. go-zookeeper's
// calls take no context; every loop ends at the deadline.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// runCeiling runs part 5 on both shared servers and divides each ceiling
// by part 1's writes per page on the same server (synth nil: not run).
func (b *bench) runCeiling(ctx context.Context, synth *report.Synth) (*report.Ceiling, error) {
	o := b.opts
	res := &report.Ceiling{Clients: o.ceilingClients, InFlight: o.ceilingInFlight, TimeS: o.ceilingTime.Seconds()}
	for _, fsync := range []bool{true, false} {
		z, err := b.sharedServer(ctx, fsync, nil)
		if err != nil {
			return res, err
		}
		run, err := b.ceilingRun(ctx, z)
		if err != nil {
			return res, fmt.Errorf("%s: %w", syncName(fsync), err)
		}
		if synth != nil {
			best := 0
			for _, r := range synth.Runs {
				if r.ForceSync == fsync && r.Workers >= best {
					best, run.WritesPerPage = r.Workers, r.ZKWritesPerPage
				}
			}
		}
		if run.WritesPerPage > 0 {
			run.ImpliedPagesS = run.TxPerS / run.WritesPerPage
		}
		res.Runs = append(res.Runs, *run)
		b.log.Info("part 5 done", "fsync", fsync, "tx_per_s", round(run.TxPerS, 0), "implied_pages_per_s", round(run.ImpliedPagesS, 0))
	}
	return res, nil
}

// ceilingRun measures one server's ceiling: --ceiling-clients sessions,
// each with --ceiling-inflight goroutines sending create+delete multis for
// --ceiling-time.
func (b *bench) ceilingRun(ctx context.Context, z *benchZK) (*report.CeilingRun, error) {
	o := b.opts
	run := &report.CeilingRun{ForceSync: z.forceSync}
	root := fmt.Sprintf("/ceiling-%d", time.Now().UnixNano()) // the benchmark's own scratch znode, outside zkcrawl's layout
	// Plain go-zookeeper sessions: this measures the server, not coord.
	clients := make([]*zk.Conn, o.ceilingClients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := testenv.RawConn(ctx, z.srv.Addr(), "")
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	if _, err := clients[0].Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return nil, fmt.Errorf("create %s: %w", root, err)
	}
	mark, err := z.mark(ctx)
	if err != nil {
		return nil, err
	}
	var ok, failed atomic.Int64
	deadline := time.Now().Add(o.ceilingTime)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		for j := range o.ceilingInFlight {
			wg.Go(func() {
				conn := c
				p := fmt.Sprintf("%s/c%d-%d", root, i, j)
				for time.Now().Before(deadline) && ctx.Err() == nil {
					_, err := conn.Multi(
						&zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)},
						&zk.DeleteRequest{Path: p, Version: -1})
					if err != nil {
						failed.Add(1)
						continue
					}
					ok.Add(1)
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	if run.ZxidDelta, _, err = z.since(ctx, mark); err != nil {
		return nil, err
	}
	if err := clients[0].Delete(root, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("delete %s: %w", root, err)
	}
	run.Multis, run.Errors = ok.Load(), failed.Load()
	run.TxPerS = float64(run.Multis) / elapsed
	run.LoadAfter = loadavg()
	return run, nil
}
