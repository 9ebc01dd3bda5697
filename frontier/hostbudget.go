package frontier

import (
	"bytes"
	"math"

	"github.com/zkcrawl/zkcrawl/config"
)

// Per-host budgets (max_pages_per_host, host_budget_action): the owner of
// a group counts the URLs it moves to the ready window per host (each is
// fetched or dead-lettered once, so the count bounds the pages fetched)
// and keeps the counts in the
// annex of the group's cursor, written by its fenced steps (docs/design.md,
// "Per-host budgets").

// stepMaxDrops bounds the backlog records one step drops for host budgets
// (Step.Drop: bits in the cursor, no ZooKeeper op each).
const stepMaxDrops = 4096

// hostIDCache bounds the host -> HostID cache of a hostBudget.
const hostIDCache = 10_000

// hostBudget is the owner's count per host of one group: the URLs moved
// to the ready window while max_pages_per_host was set, as loaded from the
// group's annex and counted by the steps since. A URL is counted in the
// multi that creates its ready item, so the count in ZooKeeper never lags
// the ready window; each ready item is fetched (or sent to the dead
// letters) once, so the count bounds the pages fetched.
type hostBudget struct {
	counts HostCounts
	ids    map[string]uint64 // host key -> HostID
	group  int               // the shard group, for log lines
	// written: a step of this loop has compared the counts with the
	// cursor's annex (a failed step reloads the group and so this value).
	written bool
}

// loadBudget reads the counts of grp's annex; an annex that does not decode
// is logged and counted from zero (the budget may then be exceeded by the
// counts lost; it never blocks the crawl).
func (o *Owner) loadBudget(grp *Group, g int) *hostBudget {
	counts, err := DecodeHostCounts(grp.Annex())
	if err != nil {
		o.log.Warn("host page counts of the shard group's cursor do not decode; counting from zero",
			"group", GroupName(g), "error", err)
		counts = HostCounts{Pages: map[uint64]int64{}}
	}
	return &hostBudget{counts: counts, ids: map[string]uint64{}, group: g}
}

// id returns host's HostID.
func (b *hostBudget) id(host string) uint64 {
	if id, ok := b.ids[host]; ok {
		return id
	}
	if len(b.ids) >= hostIDCache {
		b.ids = map[string]uint64{}
	}
	id := HostID(host)
	b.ids[host] = id
	return id
}

// count returns the URLs of host counted so far.
func (b *hostBudget) count(host string) int64 { return b.counts.Pages[b.id(host)] }

// budgetLeft returns how many more of host's records a step may move to
// the ready window: max_pages_per_host less its count, or math.MaxInt when
// there is no cap (or for records that do not decode, host "").
func (plan *stepPlan) budgetLeft(host string) int {
	limit := plan.cfg.MaxPagesPerHost
	if limit <= 0 || host == "" {
		return math.MaxInt
	}
	return int(max(0, limit-plan.budget.count(host)))
}

// settleBudget completes a step's plan for the host budgets after its moves
// (fillWindows): it counts the moves; under host_budget_action drop it
// adds the remaining backlog records of hosts at max_pages_per_host to
// step.Drop (counted and logged once per host); it computes the held
// records and the hosts at budget (also published in og for the status
// node) and sets step.Annex when the counts to write differ from the
// cursor's. The in-memory counts include the step's moves at once: a
// step that fails makes the loop load the group again, counts included.
func (o *Owner) settleBudget(plan *stepPlan, og *ownedGroup) {
	cfg, v, b := plan.cfg, plan.view, plan.budget
	counts := &b.counts
	before := [2]int64{counts.Held, counts.AtBudget}
	counts.Held, counts.AtBudget = 0, 0
	if limit := cfg.MaxPagesPerHost; limit > 0 {
		movedBy := map[string]int{}
		for _, m := range plan.moved {
			if m.host != "" {
				movedBy[m.host] += m.n
				counts.Pages[b.id(m.host)] += int64(m.n + m.e)
			}
		}
		for host, hb := range v.hosts {
			if host == "" || b.count(host) < limit {
				continue
			}
			left := len(hb.pending) - movedBy[host] + int(plan.hostCount[host])
			if cfg.HostBudgetAction == config.HostBudgetDrop {
				rest := hb.pending[movedBy[host]:]
				n := min(len(rest), stepMaxDrops-len(plan.step.Drop))
				for _, pr := range rest[:n] {
					plan.step.Drop = append(plan.step.Drop, pr.ref)
				}
				if n > 0 {
					plan.dropped = append(plan.dropped, hostMove{host: host, n: n})
					plan.drops[DropHostBudget] += n
					example := ""
					if u, err := RecordURL(plan.grp.Record(rest[0].ref)); err == nil {
						example = u
					}
					o.logDrop(host, DropHostBudget, example)
				}
				left -= n
			}
			counts.Held += int64(left)
		}
		for _, n := range counts.Pages {
			if n >= limit {
				counts.AtBudget++
			}
		}
	}
	trimmed := len(counts.Pages) > MaxHostCounts
	if trimmed {
		forgot := counts.Trim(MaxHostCounts * 7 / 8)
		o.log.Warn("too many hosts with a page count in one shard group: the smallest counts are forgotten (those hosts may be fetched up to max_pages_per_host again)",
			"group", GroupName(plan.budget.group), "forgotten", forgot, "limit", MaxHostCounts)
	}
	og.atBudget.Store(counts.AtBudget)
	og.held.Store(counts.Held)
	sched := og.sched.dirty || len(plan.entries) > 0
	if len(plan.moved) == 0 && !trimmed && before == [2]int64{counts.Held, counts.AtBudget} && b.written && !sched {
		return // nothing counted changed since the annex this loop last wrote or loaded
	}
	if sched {
		counts.Schedule = plan.summary()
		og.scheduled.Store(counts.Schedule.Entries)
		og.nextDueGauge.Store(counts.Schedule.Next)
		og.sched.dirty = false // a failed step reloads the group, and this flag
	}
	b.written = true
	annex := counts.Encode()
	if !bytes.Equal(annex, plan.grp.Annex()) {
		if annex == nil {
			annex = []byte{} // remove the annex
		}
		plan.step.Annex = annex
	}
}
