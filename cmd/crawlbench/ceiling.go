package main

// Part 5: the write ceiling of the shared servers (testenv.WriteCeiling; through the 3-node
// ensemble's quorum too) and the cluster pages/s it implies at part 1's writes per page.

import (
	"context"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// The load of part 5 and how long each server is measured.
const (
	ceilingSessions, ceilingInFlight = 8, 8
	ceilingTime                      = 5 * time.Second
)

// runCeiling runs part 5 on each shared server, dividing by part 1's writes/page there (synth nil: none).
func (b *bench) runCeiling(ctx context.Context, synth *report.Synth) (*report.Ceiling, error) {
	res := &report.Ceiling{Clients: ceilingSessions, InFlight: ceilingInFlight, TimeS: ceilingTime.Seconds()}
	for _, s := range b.servers {
		z, err := b.sharedServer(ctx, s, nil)
		if err != nil {
			return res, err
		}
		c, err := testenv.WriteCeiling(ctx, z.addr, ceilingSessions, ceilingInFlight, ceilingTime)
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.Label(), err)
		}
		run := report.CeilingRun{Server: s, Multis: c.Multis, Errors: c.Errors, ZxidDelta: c.ZxidDelta, TxPerS: float64(c.Multis) / c.Elapsed.Seconds()}
		if synth != nil {
			most := 0
			for _, r := range synth.Runs {
				if r.Server == s && r.Workers >= most {
					most, run.WritesPerPage = r.Workers, r.ZKWritesPerPage
				}
			}
		}
		if run.WritesPerPage > 0 {
			run.ImpliedPagesS = run.TxPerS / run.WritesPerPage
		}
		run.LoadAfter = loadavg()
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}
