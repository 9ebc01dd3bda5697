package worker

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// gaugeInterval is how often a worker with metrics re-reads the counts of
// its owned shards for the gauges.
var gaugeInterval = 5 * time.Second

// setOwnedShards records the shards this worker owns now (runSession), for
// the gauges.
func (m *membership) setOwnedShards(keep map[int]bool) {
	s := make([]int, 0, len(keep))
	for k := range keep {
		s = append(s, k)
	}
	slices.Sort(s)
	m.owned.Store(&s)
}

// feedGauges installs the worker's GaugeSource (a cached GaugeValues) and
// refreshes it every gaugeInterval from the owned shards' parents
// (coord.Queue.Pending: numChildren only) until ctx ends.
func (w *Worker) feedGauges(ctx context.Context) {
	if w.metrics == nil {
		return
	}
	var cur atomic.Pointer[GaugeValues]
	cur.Store(&GaugeValues{})
	w.metrics.SetGaugeSource(func() GaugeValues { return *cur.Load() })
	t := time.NewTicker(gaugeInterval)
	defer t.Stop()
	for {
		var shards []int
		if p := w.owned.Load(); p != nil {
			shards = *p
		}
		rctx, cancel := context.WithTimeout(ctx, gaugeInterval)
		c, err := w.front.Queue().Pending(rctx, shards...)
		if len(shards) == 0 { // no shard owned: Pending counted them all
			c.Queued, c.Claimed = 0, 0
		}
		cancel()
		if err == nil {
			// Queue depth: the ready items of the owned shards plus the
			// backlog the owned groups' owner loops hold (frontier.Owner).
			backlog := int(w.owner.Totals().Backlog)
			cur.Store(&GaugeValues{QueueDepth: c.Queued + backlog, ClaimsHeld: c.Claimed, DeadLetters: c.Failed})
		} else if ctx.Err() == nil {
			w.log.Debug("gauge refresh failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
