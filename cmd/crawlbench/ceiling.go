package main

// Part 5: the write ceiling of the benchmark's ZooKeeper. --ceiling-clients
// sessions, each with --ceiling-inflight goroutines, send small multis
// (create a persistent znode, delete it: one transaction each, leaving
// nothing behind) as fast as the server commits them, for --ceiling-time,
// on the forceSync=yes and the forceSync=no server. transactions/s is
// committed multis / elapsed time (checked against the zxid delta); the
// cluster pages/s it implies is that ceiling divided by part 1's ZooKeeper
// writes per page (3 workers, same forceSync): the most pages per second
// any number of workers could finish through this one server.
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

	"github.com/zkcrawl/zkcrawl/coord"
)

// ceilingResult is part 5.
type ceilingResult struct {
	Clients, InFlight int
	TimeS             float64
	Runs              []ceilingRun
}

// ceilingRun is one server.
type ceilingRun struct {
	ForceSync     bool
	Multis        int64
	Errors        int64
	ZxidDelta     int64
	TxPerS        float64
	WritesPerPage float64 // part 1, 3 workers (or the most workers run), same forceSync; 0 if not run
	ImpliedPagesS float64
	LoadAfter     string
}

func (b *bench) runCeiling(ctx context.Context, synth *synthResult) (*ceilingResult, error) {
	o := b.opts
	res := &ceilingResult{Clients: o.ceilingClients, InFlight: o.ceilingInFlight, TimeS: o.ceilingTime.Seconds()}
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

func (b *bench) ceilingRun(ctx context.Context, z *benchZK) (*ceilingRun, error) {
	o := b.opts
	run := &ceilingRun{ForceSync: z.forceSync}
	root := fmt.Sprintf("/ceiling-%d", time.Now().UnixNano())
	if _, err := z.client.Conn().Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return nil, fmt.Errorf("create %s: %w", root, err)
	}
	clients := make([]*coord.Client, o.ceilingClients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := coord.Connect(ctx, z.srv.Addr(), coord.WithLogger(b.quiet))
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	s0, err := readSrvr(ctx, z.srv.Addr())
	if err != nil {
		return nil, err
	}
	var ok, failed atomic.Int64
	deadline := time.Now().Add(o.ceilingTime)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		for j := range o.ceilingInFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn := c.Conn()
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
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	s1, err := readSrvr(ctx, z.srv.Addr())
	if err != nil {
		return nil, err
	}
	if err := z.client.Conn().Delete(root, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("delete %s: %w", root, err)
	}
	run.Multis, run.Errors, run.ZxidDelta = ok.Load(), failed.Load(), s1.Zxid-s0.Zxid
	run.TxPerS = float64(run.Multis) / elapsed
	run.LoadAfter = loadavg()
	return run, nil
}
