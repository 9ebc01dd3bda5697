package main

// Part 6: kill-to-takeover. Three workers crawl the synthetic web with a
// per-host rate, so every worker holds claims on items waiting for their
// politeness turn. The worker holding the most claims is killed with
// SIGKILL; its claims stay until ZooKeeper expires its session, then the
// other workers gain its shards (membership watch, handoff) and claim the
// items again. For every item it held we measure the time from the kill
// until another worker holds a claim on it or it is gone (completed),
// polling every 50 ms.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// takeoverResult is part 6.
type takeoverResult struct {
	TickMS               int64
	Hosts, PagesPerHost  int
	SessionTimeoutS      float64 // --session-timeout asked for
	NegotiatedS          float64 // as granted by ZooKeeper (cons: to=)
	RatePerS             float64
	Victim               string
	VictimClaims         int
	ClaimsBefore         map[string]int // claims per worker at the kill
	ExpiredS             float64        // kill to the victim's R/workers node gone
	DeadlineS            float64        // how long the driver watched after the kill
	Items                int            // victim's items resolved
	Unresolved           int            // still unclaimed at the deadline
	MinS, MedianS, MaxS  float64
	ByOtherClaim, ByGone int
	// Shards: the killed worker's shards that held its claims; a shard is
	// taken over when another worker holds a claim in it (or it is empty).
	Shards, ShardsTakenOver int
	// Hosts: the hosts of the killed worker's claimed items; a host is
	// taken over when another worker holds a claim on one of its items.
	VictimHosts, HostsTakenOver        int
	HostMinS, HostMedianS, HostMaxS    float64
	ShardMinS, ShardMedianS, ShardMaxS float64
	// Diagnostics at the kill: the most claims one host had (the worker's
	// accept filter aims at per_host_max_in_flight + 1 per host), and how
	// many hosts had claims held by two or more workers at once.
	MaxClaimsPerHost   int
	HostsWithTwoOwners int
	HostsClaimed       int
	LoadAfter          string
}

func (b *bench) runTakeover(ctx context.Context) (*takeoverResult, error) {
	o := b.opts
	res := &takeoverResult{TickMS: o.killTick.Milliseconds(), Hosts: o.killHosts, PagesPerHost: o.killPages, SessionTimeoutS: o.killSession.Seconds(), RatePerS: o.killRate}
	b.log.Info("part 6: kill-to-takeover", "tick", o.killTick, "session_timeout", o.killSession, "rate_per_s", o.killRate)
	web, err := testenv.StartWeb(ctx, testenv.WebConfig{
		Seed: 2, Hosts: o.killHosts, PagesPerHost: o.killPages, LinksPerPage: 8, CrossHostShare: 0.2, Logger: b.quiet,
	})
	if err != nil {
		return nil, err
	}
	defer web.Close()
	bz, err := b.startZK(ctx, zkSpec{dir: filepath.Join("takeover", "zk"), forceSync: true, heap: "1g", tick: o.killTick})
	if err != nil {
		return nil, err
	}
	defer bz.close()
	zks, client := bz.srv, bz.client

	crawl := fmt.Sprintf("takeover-%d", time.Now().Unix())
	root := "/zkcrawl/" + crawl
	dir := filepath.Join(b.outDir, "takeover")
	cfg := map[string]any{
		"per_host_rate_per_s":    o.killRate,
		"per_host_burst":         1,
		"per_host_max_in_flight": 1,
		"worker_concurrency":     64,
		"allow_private_networks": true,
		"obey_robots":            true,
		"max_depth":              -1,
		"scope":                  "any",
	}
	if err := b.seed(ctx, zks.Addr(), crawl, dir, cfg, web.Seeds()); err != nil {
		return nil, err
	}
	q, err := coord.OpenQueue(ctx, client, root)
	if err != nil {
		return nil, err
	}
	var workers []*workerProc
	defer func() {
		for _, w := range workers {
			if !w.Exited() {
				w.stop()
			}
		}
	}()
	for i := 1; i <= 3; i++ {
		w, err := b.startWorker(ctx, zks.Addr(), crawl, dir, fmt.Sprintf("w%d", i),
			"--session-timeout", o.killSession.String())
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}
	for _, w := range workers {
		if err := w.awaitMetrics(ctx); err != nil {
			return nil, err
		}
	}
	// Let membership settle and the claim loops fill up: every host
	// holds up to per_host_max_in_flight + 1 claims.
	time.Sleep(5 * time.Second)

	st, err := q.Stats(ctx)
	if err != nil {
		return nil, err
	}
	res.ClaimsBefore = map[string]int{}
	sessOf := map[string]int64{}
	for _, s := range st.Shards {
		for _, c := range s.Claims {
			res.ClaimsBefore[c.Owner]++
			sessOf[c.Owner] = c.Session
		}
	}
	b.perHostClaims(ctx, q, st, res)
	var victim *workerProc
	for _, w := range workers {
		if victim == nil || res.ClaimsBefore[w.ID] > res.ClaimsBefore[victim.ID] {
			victim = w
		}
	}
	res.Victim = victim.ID
	if res.ClaimsBefore[res.Victim] == 0 {
		return nil, fmt.Errorf("no worker holds a claim 5 s into the crawl (claims: %v)", res.ClaimsBefore)
	}
	res.NegotiatedS = negotiatedTimeout(ctx, zks.Addr(), sessOf[res.Victim])

	tKill := time.Now()
	if err := victim.Kill(); err != nil {
		return nil, err
	}
	<-victim.Done()
	// The dead worker's claims stay until its session expires: read them
	// now, so items it completed just before dying are not counted.
	type item struct {
		shard int
		name  string
	}
	var items []item
	if st, err = q.Stats(ctx); err != nil {
		return nil, err
	}
	for _, s := range st.Shards {
		for _, c := range s.Claims {
			if c.Owner == res.Victim {
				items = append(items, item{s.Shard, c.Item})
			}
		}
	}
	res.VictimClaims = len(items)
	// The hosts of the victim's items: a host is taken over once another
	// worker holds a claim on one of its items.
	hostOf := map[item]string{}
	lookupHost := func(it item) string {
		if h, ok := hostOf[it]; ok {
			return h
		}
		// Only a host found is remembered: a read that failed (a
		// connection loss under load) is tried again at the next poll.
		h := ""
		data, err := q.Get(ctx, it.shard, it.name)
		if err == nil {
			if fi, err := frontier.DecodeItem(data); err == nil {
				h = frontier.Host(fi.URL)
				hostOf[it] = h
			}
		} else {
			b.log.Debug("part 6: item unreadable", "shard", it.shard, "item", it.name, "error", err)
		}
		return h
	}
	victimHosts := map[string]bool{}
	for try := 0; try < 5 && len(hostOf) < len(items); try++ {
		if try > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		for _, it := range items {
			if h := lookupHost(it); h != "" {
				victimHosts[h] = true
			}
		}
	}
	if len(hostOf) < len(items) {
		b.log.Warn("part 6: the hosts of some of the killed worker's items could not be read", "read", len(hostOf), "items", len(items))
	}
	hostDone := map[string]time.Duration{}
	b.log.Info("part 6: killed the worker with the most claims", "worker", res.Victim, "claims", len(items), "all_before", res.ClaimsBefore,
		"max_claims_per_host", res.MaxClaimsPerHost, "hosts_claimed_by_two_workers", res.HostsWithTwoOwners)

	resolved := make([]time.Duration, len(items))
	left := len(items)
	shards := map[int]bool{}
	for _, it := range items {
		shards[it.shard] = true
	}
	// A shard is taken over once another worker holds a claim in it (or
	// it is empty).
	shardDone := map[int]time.Duration{}
	deadline := tKill.Add(3*o.killSession + 15*time.Second)
	res.DeadlineS = deadline.Sub(tKill).Seconds()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for (left > 0 || len(shardDone) < len(shards) || len(hostDone) < len(victimHosts)) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		now := time.Since(tKill)
		if res.ExpiredS == 0 {
			ids, _, err := coord.Members(ctx, client, root)
			if err == nil && !slices.Contains(ids, res.Victim) {
				res.ExpiredS = now.Seconds()
			}
		}
		owner := map[item]string{}
		present := map[item]bool{}
		for s := range shards {
			claims, err := q.ShardClaims(ctx, s)
			if err != nil {
				return nil, err
			}
			for _, c := range claims {
				owner[item{s, c.Item}] = c.Owner
				if c.Owner == res.Victim {
					continue
				}
				if _, ok := shardDone[s]; !ok {
					shardDone[s] = now
				}
				if h := lookupHost(item{s, c.Item}); victimHosts[h] {
					if _, ok := hostDone[h]; !ok {
						hostDone[h] = now
					}
				}
			}
			names, _, err := client.Conn().Children(fmt.Sprintf("%s/queue/%s", root, coord.ShardName(s)))
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return nil, err
			}
			if _, ok := shardDone[s]; !ok && len(names) == 0 {
				shardDone[s] = now
			}
			for _, n := range names {
				present[item{s, n}] = true
			}
		}
		for i, it := range items {
			if resolved[i] != 0 {
				continue
			}
			switch o := owner[it]; {
			case o != "" && o != res.Victim:
				resolved[i] = now
				res.ByOtherClaim++
				left--
			case !present[it]:
				resolved[i] = now
				res.ByGone++
				left--
			}
		}
	}
	res.LoadAfter = loadavg()
	res.Shards = len(shards)
	res.VictimHosts = len(victimHosts)
	var ds []time.Duration
	for _, d := range resolved {
		if d != 0 {
			ds = append(ds, d)
		}
	}
	res.HostsTakenOver, res.HostMinS, res.HostMedianS, res.HostMaxS = spread(slices.Collect(maps.Values(hostDone)))
	res.ShardsTakenOver, res.ShardMinS, res.ShardMedianS, res.ShardMaxS = spread(slices.Collect(maps.Values(shardDone)))
	res.Items, res.MinS, res.MedianS, res.MaxS = spread(ds)
	res.Unresolved = len(items) - len(ds)
	b.log.Info("part 6 done", "hosts", res.VictimHosts, "hosts_taken_over", res.HostsTakenOver,
		"host_median_s", round(res.HostMedianS, 2), "host_max_s", round(res.HostMaxS, 2), "shards", res.Shards, "shards_taken_over", res.ShardsTakenOver,
		"shard_median_s", round(res.ShardMedianS, 2), "shard_max_s", round(res.ShardMaxS, 2), "items", res.Items, "unresolved", res.Unresolved, "expired_s", round(res.ExpiredS, 2),
		"min_s", round(res.MinS, 2), "median_s", round(res.MedianS, 2), "max_s", round(res.MaxS, 2))
	return res, nil
}

// perHostClaims reads the item of every claim in st and records, by host,
// how many claims there are and how many workers hold them.
func (b *bench) perHostClaims(ctx context.Context, q *coord.Queue, st *coord.QueueStats, res *takeoverResult) {
	count := map[string]int{}
	owners := map[string]map[string]bool{}
	for _, s := range st.Shards {
		for _, c := range s.Claims {
			data, err := q.Get(ctx, s.Shard, c.Item)
			if err != nil {
				b.log.Debug("part 6: claimed item unreadable (completed meanwhile?)", "shard", s.Shard, "item", c.Item, "error", err)
				continue
			}
			it, err := frontier.DecodeItem(data)
			if err != nil {
				b.log.Warn("part 6: claimed item does not decode", "shard", s.Shard, "item", c.Item, "error", err)
				continue
			}
			h := frontier.Host(it.URL)
			count[h]++
			if owners[h] == nil {
				owners[h] = map[string]bool{}
			}
			owners[h][c.Owner] = true
		}
	}
	res.HostsClaimed = len(count)
	for h, n := range count {
		res.MaxClaimsPerHost = max(res.MaxClaimsPerHost, n)
		if len(owners[h]) > 1 {
			res.HostsWithTwoOwners++
		}
	}
}

var consLine = regexp.MustCompile(`sid=0x([0-9a-f]+).*\bto=(\d+)`)

// negotiatedTimeout reads the session timeout ZooKeeper granted session
// sid from the `cons` four letter word (to=<ms>); 0 when not found.
func negotiatedTimeout(ctx context.Context, addr string, sid int64) float64 {
	out, err := testenv.FourLetterWord(ctx, addr, "cons")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := consLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		id, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil || int64(id) != sid {
			continue
		}
		ms, _ := strconv.ParseFloat(m[2], 64)
		return ms / 1000
	}
	return 0
}

// spread returns how many durations there are and their min, median and
// max in seconds (zeros when there are none).
func spread(ds []time.Duration) (n int, minS, medianS, maxS float64) {
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	sortDur(ds)
	return len(ds), ds[0].Seconds(), exactQuantile(ds, 0.5).Seconds(), ds[len(ds)-1].Seconds()
}

func sortDur(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }
