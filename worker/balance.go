package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// Shard ownership follows R/assignment (docs/design.md "Shard ownership"):
// the balancer, run by the live member of smallest id, writes it on every
// member change (bounded-load rendezvous hashing, coord.Owners) and, every
// balanceInterval while the loads are skewed and per-host rate limits are
// off (the crawl is bound by the workers, not by politeness), moves a few
// shard groups from the busiest member to the idlest. A group's load is its politeness keys
// with queued records (from the members' status nodes) plus one. Every
// member follows the znode; the handoff protocol (awaitHandoff) makes each
// move safe for politeness.

// assignment is R/assignment: Owners[g] indexes Members, the sorted live
// member ids it was computed for. About 3 bytes a group and the ids.
type assignment struct {
	Members []string `json:"members"`
	Owners  []int    `json:"owners"`
}

const (
	// balanceInterval is how often the balancer looks at the loads: a
	// heartbeat (DefaultHeartbeatInterval), how often they change.
	balanceInterval = 2 * time.Second
	// balanceSkew: groups move only while the busiest member's load is
	// above this multiple of the mean. Each move costs the group a handoff
	// (the gaining member waits for the old owner's claims, loads the
	// group's seen-set again, and each key's first request waits one
	// politeness interval), so small skews are left alone.
	balanceSkew = 1.25

	// balanceCooldown: a group the balancer moved stays where it went this
	// long (its load shows in the new owner's status node only after a
	// heartbeat, and ping-pong would only add handoffs).
	balanceCooldown = 30 * time.Second
	// assignSettle: under a per-host rate, while no live member owns a
	// group (a fresh crawl, or every worker restarted), the balancer
	// writes the first assignment only once the member list has not
	// changed for this long, at most assignSettleMax after it first found
	// nobody owning: workers started together then divide the groups
	// once, instead of the first to join taking them all and handing most
	// over a moment later (each handoff costs the group's keys an interval
	// and their robots.txt again: on a wide web at 1 request/s, 3 workers
	// that joined 0.3 s apart had half the hosts start 3 s late).
	assignSettle    = 500 * time.Millisecond
	assignSettleMax = 2 * time.Second
	// assignSettleUnrated and assignSettleUnratedMax are the same without
	// a per-host rate, where a handoff costs the group's first claims
	// about 0.1 s (the old owner's acknowledgement, the group's load):
	// workers started together (a script, a service manager) join within
	// tens of milliseconds, and the first to join taking every group
	// delayed make demo-real's first page by a handoff.
	assignSettleUnrated    = 20 * time.Millisecond
	assignSettleUnratedMax = 200 * time.Millisecond
	// leaveSettle: after a member leaves, the balancer waits this long
	// before it moves the leaver's groups. A leaver is most often a worker
	// that saw a batch crawl done; the others see it done within a done
	// check (tens of milliseconds) and exit, and a takeover meanwhile only
	// loads groups and delays their exit (make demo-real: the last worker
	// left 0.13-0.27 s after the first). A killed worker's groups wait for
	// its session to expire (seconds) and then leaveSettle more.
	leaveSettle = 150 * time.Millisecond
	// keyWeight is what a busy politeness key weighs against an idle group
	// (which weighs 1): enough that a member's idle groups do not hide a
	// skew of its keys (at 1, 100 keys over 12 members in 64 groups,
	// 0.36x to 1.68x the mean, looked like 0.6x to 1.4x).
	keyWeight = 8
)

// balancerState is what the balancer remembers between rounds of one
// session (see balance). At most one entry a group in each map.
type balancerState struct {
	moved map[int]time.Time
	loads map[int]int64
	// seen is R/assignment as the member's watch last delivered it
	// (seenAny: once delivered): the balancer plans on it and writes with a
	// compare-and-set at its version, so a round reads no znode twice; a
	// newer value it missed makes the write fail, and the next round plans
	// on that one.
	seen    coord.ConfigValue
	seenAny bool
	// rerun: the last write lost its compare-and-set (R/assignment changed
	// after bal.seen), so the next value the watch delivers, the one it
	// lost to, starts a round at once (delivered) instead of the next
	// balanceInterval tick.
	rerun bool
	// ids is the member list of the last round and idsSince when it
	// changed to it; unowned is when the balancer first found no live
	// member owning a group (zero while one does): assignSettle.
	ids      []string
	idsSince time.Time
	unowned  time.Time
}

// settling reports how much longer the balancer should wait before it
// writes an assignment of ids over cur (0: write now): while no member
// of cur is in ids, until ids has been unchanged for quiet, and never
// more than most after the first such round (assignSettle and
// assignSettleMax under a per-host rate, assignSettleUnrated and
// assignSettleUnratedMax without).
func (bal *balancerState) settling(cur *assignment, ids []string, now time.Time, quiet, most time.Duration) time.Duration {
	if !slices.Equal(bal.ids, ids) {
		bal.ids, bal.idsSince = slices.Clone(ids), now
	}
	if cur != nil && slices.ContainsFunc(cur.Members, func(m string) bool { return slices.Contains(ids, m) }) {
		bal.unowned = time.Time{}
		return 0
	}
	if bal.unowned.IsZero() {
		bal.unowned = now
	}
	wait := max(0, min(bal.idsSince.Add(quiet).Sub(now), bal.unowned.Add(most).Sub(now)))
	return wait
}

// delivered records v, a value of R/assignment the member's watch
// delivered, as the one the balancer plans on, and reports whether a round
// should run now: on the first value (a member list that came first waited
// for it) and after a round whose write lost to a value not yet delivered
// (rerun), so a member change the lost write carried is written within a
// watch delivery, not a balanceInterval later.
func (bal *balancerState) delivered(v coord.ConfigValue) (runNow bool) {
	runNow = !bal.seenAny || bal.rerun
	bal.seen, bal.seenAny, bal.rerun = v, true, false
	return runNow
}

func newBalancerState() *balancerState {
	return &balancerState{moved: map[int]time.Time{}, loads: map[int]int64{}}
}

// decodeAssignment parses R/assignment's data for a crawl of groups shard
// groups. Errors name what is wrong (a bad znode is ignored until the
// balancer writes a good one).
func decodeAssignment(data []byte, groups int) (*assignment, error) {
	var a assignment
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("R/%s: %w", coord.AssignmentNode, err)
	}
	if len(a.Owners) != groups {
		return nil, fmt.Errorf("R/%s: %d owners for %d shard groups", coord.AssignmentNode, len(a.Owners), groups)
	}
	for g, o := range a.Owners {
		if o < 0 || o >= len(a.Members) {
			return nil, fmt.Errorf("R/%s: group %d: owner index %d of %d members", coord.AssignmentNode, g, o, len(a.Members))
		}
	}
	return &a, nil
}

// owned returns the groups a gives to id.
func (a *assignment) owned(id string) []int {
	var out []int
	if a == nil {
		return out
	}
	for g, o := range a.Owners {
		if a.Members[o] == id {
			out = append(out, g)
		}
	}
	return out
}

// planAssignment returns the assignment of groups shard groups over the
// sorted member ids: cur where it was computed for the same members, else
// the bounded-load rendezvous assignment (coord.Owners), then at most
// ceil(groups/len(ids)) moves by load (balanceMoves: a member's fair share
// of groups) of groups not in frozen, which it returns. nil when ids is
// empty.
func planAssignment(cur *assignment, ids []string, groups int, loads map[int]int64, frozen map[int]bool) (*assignment, []int) {
	if len(ids) == 0 {
		return nil, nil
	}
	next := &assignment{Members: ids, Owners: make([]int, groups)}
	if cur != nil && slices.Equal(cur.Members, ids) {
		copy(next.Owners, cur.Owners)
	} else {
		index := map[string]int{}
		for i, id := range ids {
			index[id] = i
		}
		for g, o := range coord.Owners(groups, ids) {
			next.Owners[g] = index[o]
		}
	}
	return next, balanceMoves(next.Owners, len(ids), loads, frozen, (groups+len(ids)-1)/len(ids))
}

// balanceMoves moves groups not in frozen, at most maxMoves, from the
// member of largest load to the member of smallest while the largest is
// above balanceSkew times the mean or the smallest below the mean over
// balanceSkew: each time the group whose weight is
// nearest half their gap (and below the gap, so the move narrows it). A
// group weighs keyWeight per busy politeness key (loads[g]) plus one, so
// idle groups balance by count and busy ones by their keys. It returns the groups it moved.
func balanceMoves(owners []int, members int, loads map[int]int64, frozen map[int]bool, maxMoves int) (moved []int) {
	weight := func(g int) int64 { return keyWeight*loads[g] + 1 }
	load := make([]int64, members)
	var total int64
	for g, o := range owners {
		load[o] += weight(g)
		total += weight(g)
	}
	for range maxMoves {
		hi, lo := 0, 0
		for m := range load {
			if load[m] > load[hi] {
				hi = m
			}
			if load[m] < load[lo] {
				lo = m
			}
		}
		mean := float64(total) / float64(members)
		if float64(load[hi]) <= balanceSkew*mean && float64(load[lo]) >= mean/balanceSkew {
			return moved
		}
		gap, best := load[hi]-load[lo], -1
		for g, o := range owners {
			if o != hi || weight(g) >= gap || frozen[g] {
				continue
			}
			if best < 0 || abs64(2*weight(g)-gap) < abs64(2*weight(best)-gap) {
				best = g
			}
		}
		if best < 0 {
			return moved
		}
		moved = append(moved, best)
		owners[best] = lo
		load[hi] -= weight(best)
		load[lo] += weight(best)
	}
	return moved
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// balance runs the balancer's round if this worker leads (the smallest of
// the live member ids, not in standby) and its watch has delivered
// R/assignment (bal.seen): it reads the members' loads, plans, and writes
// the plan with a compare-and-set at bal.seen's version when it differs (a
// conflict: R/assignment changed after bal.seen, by another balancer or by
// this one's previous write whose watch event has not arrived; the round
// runs again when the watch delivers that value, balancerState.delivered). Errors
// are logged; the next round retries. While no live member owns a group,
// it first waits for the member list to settle (balancerState.settling;
// longer under a per-host rate): it then returns how soon to run again
// (0: at the next event or tick).
//
// bal is the balancer's memory for the session: when it last moved each
// group by load (balanceCooldown), and each group's last reported load
// (used while no status node reports it: between a move and the new
// owner's next heartbeat).
func (w *Worker) balance(ctx context.Context, store *coord.ConfigStore, ids []string, bal *balancerState) (again time.Duration) {
	if len(ids) == 0 || ids[0] != w.opts.ID || w.standby.Load() || !bal.seenAny {
		return 0
	}
	data, version := bal.seen.Data, bal.seen.Version
	var err error
	var cur *assignment
	if data != nil {
		if cur, err = decodeAssignment(data, w.layout.Groups()); err != nil {
			w.log.Warn("balancer: replacing a bad shard assignment", "error", err)
		}
	}
	quiet, most := assignSettleUnrated, assignSettleUnratedMax // a move costs a few round trips
	if w.current().cfg.PerHostRatePerS > 0 {
		quiet, most = assignSettle, assignSettleMax // a move costs each key an interval
	}
	if wait := bal.settling(cur, ids, time.Now(), quiet, most); wait > 0 {
		return wait
	}
	_, statuses, err := coord.Members(ctx, w.client, w.root)
	if err != nil {
		w.log.Warn("balancer: could not read the members' loads", "error", err)
		return 0
	}
	reported := map[int]int64{}
	for _, b := range statuses {
		var st Status
		if json.Unmarshal(b, &st) == nil {
			for g, q := range st.Loads {
				reported[g] = max(reported[g], q)
			}
		}
	}
	maps.Copy(bal.loads, reported)
	frozen := map[int]bool{}
	for g, t := range bal.moved {
		if time.Since(t) < balanceCooldown {
			frozen[g] = true
		} else {
			delete(bal.moved, g)
		}
	}
	loads := bal.loads
	if w.current().cfg.PerHostRatePerS > 0 {
		// A key's pages come at its rate wherever it is crawled, and a move
		// costs each key of the group the old owner's claims, a politeness
		// interval and its robots.txt again: only member changes move
		// groups (a wide web at 1 request/s per host, 3 workers, went from
		// 1.39x to 1.78x its politeness bound with moves by load).
		loads = nil
	}
	next, byLoad := planAssignment(cur, ids, w.layout.Groups(), loads, frozen)
	if cur != nil && slices.Equal(cur.Members, next.Members) && slices.Equal(cur.Owners, next.Owners) {
		return 0
	}
	b, _ := json.Marshal(next)
	if version < 0 {
		_, err = store.Create(ctx, b)
	} else {
		_, err = store.Write(ctx, b, version)
	}
	switch {
	case errors.Is(err, coord.ErrVersionConflict):
		bal.rerun = true
		w.log.Info("balancer: the shard assignment changed meanwhile; looking again when the watch delivers it")
	case err != nil && ctx.Err() == nil:
		w.log.Warn("balancer: could not write the shard assignment", "error", err)
	case err == nil:
		for _, g := range byLoad {
			bal.moved[g] = time.Now()
		}
		w.log.Info("balancer: shard assignment written", "members", len(ids), "moved_by_load", len(byLoad))
	}
	return 0
}

// assignmentView names an assignment's data: a short hash (the view a
// gaining worker waits for every live worker to show, awaitHandoff).
func assignmentView(data []byte) string {
	h := fnv.New64a()
	h.Write(data)
	return strconv.FormatUint(h.Sum64(), 36)
}
