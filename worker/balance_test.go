package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func TestPlanAssignmentBalancesLoads(t *testing.T) {
	ids := []string{"w1", "w10", "w11", "w12", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"}
	const groups = 64
	// 100 busy hosts in random groups: most groups hold 0-3.
	loads := map[int]int64{}
	for h := range 100 {
		loads[(h*37+h*h*11)%groups]++
	}
	a, _ := planAssignment(nil, ids, groups, loads, nil)
	for range 30 { // rounds of the balancer at unchanged loads
		a, _ = planAssignment(a, ids, groups, loads, nil)
	}
	per := make([]int64, len(ids))
	var total int64
	for g, o := range a.Owners {
		per[o] += loads[g] + 1
		total += loads[g] + 1
	}
	mean := float64(total) / float64(len(ids))
	for m, l := range per {
		if r := float64(l) / mean; r > balanceSkew+0.01 || r < 1/balanceSkew-0.01 {
			t.Errorf("%s: load %d is %.2fx the mean %.0f", ids[m], l, r, mean)
		}
	}
	// A settled assignment stays as it is.
	b, moved := planAssignment(a, ids, groups, loads, nil)
	if fmt.Sprint(a.Owners) != fmt.Sprint(b.Owners) || len(moved) > 0 {
		t.Errorf("a balanced assignment moved again:\n%v\n%v", a.Owners, b.Owners)
	}
}

func TestPlanAssignmentMemberChange(t *testing.T) {
	a, _ := planAssignment(nil, []string{"a", "b", "c"}, 30, nil, nil)
	count := map[string]int{}
	for _, o := range a.Owners {
		count[a.Members[o]]++
	}
	if count["a"] != 10 || count["b"] != 10 || count["c"] != 10 {
		t.Errorf("idle groups not balanced by count: %v", count)
	}
	// A member leaves: the next plan is for the live ones only.
	b, _ := planAssignment(a, []string{"a", "c"}, 30, nil, nil)
	if len(b.owned("b")) != 0 || len(b.owned("a"))+len(b.owned("c")) != 30 {
		t.Errorf("after b left: a %v, b %v, c %v", b.owned("a"), b.owned("b"), b.owned("c"))
	}
	if next, _ := planAssignment(a, nil, 30, nil, nil); next != nil {
		t.Error("no members: want no assignment")
	}
}

// While nobody owns a group, the first assignment waits for the member list
// to be quiet for assignSettle (workers started together divide the groups
// once), never longer than assignSettleMax; with a live owner it is at once.
func TestBalancerSettlesTheFirstAssignment(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	bal := newBalancerState()
	if got := bal.settling(nil, []string{"w1"}, at(0), assignSettle, assignSettleMax); got != assignSettle {
		t.Fatalf("first member: wait %v, want %v", got, assignSettle)
	}
	if got := bal.settling(nil, []string{"w1", "w2"}, at(300), assignSettle, assignSettleMax); got != assignSettle {
		t.Fatalf("a member joined 300 ms later: wait %v, want %v again", got, assignSettle)
	}
	if got := bal.settling(nil, []string{"w1", "w2"}, at(800), assignSettle, assignSettleMax); got != 0 {
		t.Fatalf("quiet for %v: wait %v, want 0", assignSettle, got)
	}
	// Members joining every 400 ms: capped at assignSettleMax from the start.
	bal = newBalancerState()
	var ids []string
	for ms := 0; ms < 3000; ms += 400 {
		ids = append(ids, fmt.Sprintf("w%d", ms))
		got := bal.settling(nil, ids, at(ms), assignSettle, assignSettleMax)
		if want := max(0, min(assignSettle, at(0).Add(assignSettleMax).Sub(at(ms)))); got != want {
			t.Fatalf("at %d ms: wait %v, want %v", ms, got, want)
		}
	}
	// A live member owns groups: a join is assigned at once; all owners
	// gone (every worker restarted): settle again.
	cur := &assignment{Members: []string{"w1"}, Owners: []int{0, 0}}
	if got := bal.settling(cur, []string{"w1", "w2"}, at(5000), assignSettle, assignSettleMax); got != 0 {
		t.Fatalf("with a live owner: wait %v, want 0", got)
	}
	if got := bal.settling(cur, []string{"w3"}, at(6000), assignSettle, assignSettleMax); got != assignSettle {
		t.Fatalf("every owner gone: wait %v, want %v", got, assignSettle)
	}
}

func TestDecodeAssignmentErrors(t *testing.T) {
	for _, data := range []string{`{`, `{"members":["a"],"owners":[0]}`, `{"members":["a"],"owners":[0,1]}`} {
		if _, err := decodeAssignment([]byte(data), 2); err == nil {
			t.Errorf("%s: no error", data)
		}
	}
	a, err := decodeAssignment([]byte(`{"members":["a","b"],"owners":[1,0]}`), 2)
	if err != nil || fmt.Sprint(a.owned("a")) != "[1]" {
		t.Errorf("got %v, %v", a, err)
	}
}

func TestBalanceMovesSparesFrozenGroups(t *testing.T) {
	owners := []int{0, 0, 0, 0}
	loads := map[int]int64{0: 10, 1: 10, 2: 10, 3: 10}
	moved := balanceMoves(owners, 2, loads, map[int]bool{0: true, 1: true, 2: true}, 4)
	if fmt.Sprint(owners) != "[0 0 0 1]" || fmt.Sprint(moved) != "[3]" {
		t.Errorf("owners %v: want only group 3 moved", owners)
	}
}

// The balancer moves shard groups with work to a worker that has none:
// every seeded host is in a group that bounded-load rendezvous gives w1, so
// w2 starts with empty groups only; with rate limits off it is handed some
// of w1's busy groups and crawls them, and no page is fetched twice across
// the moves.
func TestBalancerMovesBusyGroupsToAnIdleWorker(t *testing.T) {
	zks := testenv.ZooKeeper(t)
	layout := frontier.Layout{Shards: 8, Spread: 1}
	owners := coord.Owners(layout.Groups(), []string{"w1", "w2"})
	delays := map[int]time.Duration{}
	for h := range 24 {
		delays[h] = 150 * time.Millisecond
	}
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 5, Hosts: 24, PagesPerHost: 40, LinksPerPage: 3, HostDelay: delays})
	var seeds []string
	for _, s := range web.Seeds() {
		u, err := frontier.Normalize(s)
		if err != nil {
			t.Fatal(err)
		}
		if owners[layout.Group(u)] == "w1" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) < 4 {
		t.Fatalf("only %d of 24 hosts in w1's groups", len(seeds))
	}
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 0
	cfg.PerHostMaxInFlight = 1
	c := newCrawl(t, zks.Addr(), "balance", cfg, layout, seeds)
	c.runWorkers(2, 120*time.Second)
	pages, times := map[string]int{}, map[string]int{}
	for _, e := range c.logs() {
		pages[e.Worker]++
		times[e.URL]++
	}
	for u, n := range times {
		if n > 1 {
			t.Errorf("%s logged %d times", u, n)
		}
	}
	if pages["w2"] == 0 {
		t.Errorf("w2 crawled nothing (pages by worker %v): no busy group moved to it", pages)
	}
	t.Logf("%d hosts, pages by worker %v", len(seeds), pages)
}

// A balancer round whose compare-and-set loses to a value of R/assignment
// its watch has not delivered yet (here written by another client; in a
// crawl's start, often the balancer's own previous write) runs again as
// soon as that value is delivered, not a balanceInterval tick later: the
// members it wanted to add own groups within a watch delivery.
func TestBalancerRunsAgainWhenTheValueItLostToArrives(t *testing.T) {
	zks := testenv.ZooKeeper(t)
	c := newCrawl(t, zks.Addr(), "rerun", testConfig(), frontier.Layout{Shards: 8, Spread: 1}, nil)
	ctx := context.Background()
	w, err := New(ctx, Options{Servers: c.zk, Crawl: c.name, OutDir: t.TempDir(), ID: "w1",
		SessionTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.client.Close()
	w.live.Store(&liveConfig{cfg: testConfig()})
	store := coord.Store(w.client, w.root, coord.AssignmentNode)
	read := func() *assignment {
		t.Helper()
		data, _, err := store.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, err := decodeAssignment(data, w.layout.Groups())
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	bal := newBalancerState()
	balance := func(ids []string) {
		t.Helper()
		// While no member owns a group the first write waits for the
		// member list to settle: run the round again when asked to.
		for again := w.balance(ctx, store, ids, bal); again > 0; again = w.balance(ctx, store, ids, bal) {
			time.Sleep(again)
		}
	}
	if !bal.delivered(coord.ConfigValue{Version: -1}) {
		t.Fatal("the first delivered value did not start a round")
	}
	balance([]string{"w1"})
	if a := read(); !slices.Equal(a.Members, []string{"w1"}) {
		t.Fatalf("first round wrote members %v, want [w1]", a.Members)
	}
	if bal.delivered(coord.ConfigValue{Version: -1}) {
		t.Fatal("a value delivered after a successful write started a round")
	}
	// The watch has not yet delivered the first write: this round plans on
	// the absent znode and loses its compare-and-set.
	balance([]string{"w1", "w2"})
	if a := read(); !slices.Equal(a.Members, []string{"w1"}) {
		t.Fatalf("a round on a stale value wrote members %v", a.Members)
	}
	data, version, err := store.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bal.delivered(coord.ConfigValue{Data: data, Version: version}) {
		t.Fatal("the value a write lost to was delivered and no round is due")
	}
	balance([]string{"w1", "w2"})
	a := read()
	if !slices.Equal(a.Members, []string{"w1", "w2"}) || len(a.owned("w2")) == 0 {
		t.Fatalf("after the rerun: members %v, w2 owns %v; want w2 to own groups", a.Members, a.owned("w2"))
	}
	if bal.delivered(coord.ConfigValue{Data: data, Version: version + 1}) {
		t.Fatal("a round is due again after a successful rerun")
	}
}
