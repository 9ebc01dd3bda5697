package main

// Part 6: kill-to-takeover. Three workers crawl with a per-host rate, so items wait claimed for
// their politeness turn; the one holding the most claims is SIGKILLed, and the driver times, for
// each item and host it held, the kill until another worker claims it (an item also: completes).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Part 6's ZooKeeper tickTime (session timeouts must lie in 2..20 ticks),
// the workers' --session-timeout, the synthetic web and its per-host rate.
const (
	killTick             = 500 * time.Millisecond
	killSession          = 4 * time.Second
	killHosts, killPages = 30, 200
	killRate             = 2.0
)

// runTakeover runs part 6.
func (b *bench) runTakeover(ctx context.Context) (*report.Takeover, error) {
	res := &report.Takeover{TickMS: killTick.Milliseconds(), Hosts: killHosts, PagesPerHost: killPages, SessionTimeoutS: killSession.Seconds(), RatePerS: killRate}
	web, err := testenv.StartWeb(ctx, testenv.WebConfig{Seed: 2, Hosts: killHosts, PagesPerHost: killPages, LinksPerPage: synthLinks, CrossHostShare: synthCross, Logger: b.quiet})
	if err != nil {
		return nil, err
	}
	defer web.Close()
	bz, err := b.startZK(ctx, filepath.Join("takeover", "zk"), report.Fsync, killTick)
	if err != nil {
		return nil, err
	}
	defer bz.close()
	crawl := fmt.Sprintf("takeover-%d", time.Now().Unix())
	cfg := maps.Clone(synthConfig) // but for politeness
	cfg["per_host_rate_per_s"] = killRate
	cfg["per_host_burst"] = 1
	cfg["per_host_max_in_flight"] = 1
	dir := filepath.Join(b.opts.outDir, "takeover")
	if _, err := b.seed(ctx, bz.addr, crawl, dir, cfg, web.Seeds(), time.Minute); err != nil {
		return nil, err
	}
	q, err := coord.OpenQueue(ctx, bz.client, crawlRoot(crawl))
	if err != nil {
		return nil, err
	}
	f, err := b.startFleet(ctx, bz.addr, crawl, dir, 3, "--session-timeout", killSession.String())
	if err != nil {
		return nil, err
	}
	defer f.stopAndRead() // stops the workers; their logs are not needed
	// Let membership settle and the claim loops fill: a host holds up to per_host_max_in_flight + 1 claims.
	time.Sleep(5 * time.Second)
	if err := b.killAndWatch(ctx, bz, q, crawlRoot(crawl), f, res); err != nil {
		return nil, err
	}
	return res, nil
}

// shardItem names a queue item by shard and znode name.
type shardItem struct {
	shard int
	name  string
}

// killAndWatch records the claims per worker and host, SIGKILLs the worker holding the most, and polls
// every 50 ms until its every item and host is taken over or 3 session timeouts + 15 s pass.
func (b *bench) killAndWatch(ctx context.Context, bz *benchZK, q *coord.Queue, root string, f *fleet, res *report.Takeover) error {
	hostOf := map[shardItem]string{}
	host := func(it shardItem) string { // "" while unreadable (gone: completed); read again next time
		if h, ok := hostOf[it]; ok {
			return h
		}
		if data, err := q.Get(ctx, it.shard, it.name); err == nil {
			if fi, err := frontier.DecodeItem(data); err == nil {
				hostOf[it] = frontier.Host(fi.URL)
			}
		}
		return hostOf[it]
	}
	claims, err := q.Claims(ctx)
	if err != nil {
		return err
	}
	res.ClaimsBefore = map[string]int{}
	sessOf, hostClaims, firstOwner, twoOwners := map[string]int64{}, map[string]int{}, map[string]string{}, map[string]bool{}
	for _, c := range claims {
		res.ClaimsBefore[c.Owner]++
		sessOf[c.Owner] = c.Session
		if h := host(shardItem{c.Shard, c.Item}); h != "" {
			hostClaims[h]++
			if o, ok := firstOwner[h]; !ok {
				firstOwner[h] = c.Owner
			} else if o != c.Owner {
				twoOwners[h] = true
			}
		}
	}
	res.HostsClaimed, res.HostsWithTwoOwners = len(hostClaims), len(twoOwners)
	for _, n := range hostClaims {
		res.MaxClaimsPerHost = max(res.MaxClaimsPerHost, n)
	}
	victim := slices.MaxFunc(f.workers, func(a, b *testenv.Crawler) int { return cmp.Compare(res.ClaimsBefore[a.ID], res.ClaimsBefore[b.ID]) })
	res.Victim = victim.ID
	if res.ClaimsBefore[res.Victim] == 0 {
		return fmt.Errorf("no worker holds a claim 5 s into the crawl (claims: %v)", res.ClaimsBefore)
	}
	if granted, err := testenv.SessionTimeouts(ctx, bz.addr); err == nil {
		res.NegotiatedS = granted[sessOf[res.Victim]].Seconds()
	}
	tKill := time.Now()
	if err := victim.Kill(); err != nil {
		return err
	}
	<-victim.Done()
	// Read after the kill (its claims stay until its session expires): items it just completed do not count.
	if claims, err = q.Claims(ctx); err != nil {
		return err
	}
	var items []shardItem
	shards, victimHosts := map[int]bool{}, map[string]bool{}
	for _, c := range claims {
		if it := (shardItem{c.Shard, c.Item}); c.Owner == res.Victim {
			items = append(items, it)
			shards[c.Shard] = true
			if h := host(it); h != "" {
				victimHosts[h] = true
			}
		}
	}
	res.VictimClaims, res.Shards, res.VictimHosts = len(items), len(shards), len(victimHosts)
	b.log.Info("part 6: killed the worker with the most claims", "worker", res.Victim, "claims", len(items), "all_before", res.ClaimsBefore)
	deadline := 3*killSession + 15*time.Second
	res.DeadlineS = deadline.Seconds()
	resolved, hostDone := map[shardItem]time.Duration{}, map[string]time.Duration{}
	if _, err := poll(ctx, 50*time.Millisecond, deadline-time.Since(tKill), func() (bool, error) {
		now := time.Since(tKill)
		if res.ExpiredS == 0 {
			if ids, _, err := coord.Members(ctx, bz.client, root); err == nil && !slices.Contains(ids, res.Victim) {
				res.ExpiredS = now.Seconds()
			}
		}
		owner, present := map[shardItem]string{}, map[shardItem]bool{}
		for s := range shards {
			claims, err := q.Claims(ctx, s)
			if err != nil {
				return false, err
			}
			for _, c := range claims {
				it := shardItem{s, c.Item}
				owner[it] = c.Owner
				if c.Owner == res.Victim {
					continue
				}
				if h := host(it); victimHosts[h] && hostDone[h] == 0 {
					hostDone[h] = now
				}
			}
			names, err := q.ReadyNames(ctx, s)
			if err != nil {
				return false, err
			}
			for _, n := range names {
				present[shardItem{s, n}] = true
			}
		}
		for _, it := range items {
			if _, ok := resolved[it]; ok {
				continue
			}
			if o := owner[it]; o != "" && o != res.Victim {
				resolved[it] = now
				res.ByOtherClaim++
			} else if !present[it] {
				resolved[it] = now
				res.ByGone++
			}
		}
		return len(resolved) == len(items) && len(hostDone) == len(victimHosts), nil
	}); err != nil {
		return err
	}
	res.LoadAfter = loadavg()
	res.HostsTakenOver, res.HostMinS, res.HostMedianS, res.HostMaxS = spread(hostDone)
	res.Items, res.MinS, res.MedianS, res.MaxS = spread(resolved)
	res.Unresolved = len(items) - res.Items
	return nil
}

// spread returns how many durations m holds and their min, median (nearest rank) and max in s; zeros for none.
func spread[K comparable](m map[K]time.Duration) (n int, minS, medianS, maxS float64) {
	ds := slices.Sorted(maps.Values(m))
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	return len(ds), ds[0].Seconds(), ds[(len(ds)-1)/2].Seconds(), ds[len(ds)-1].Seconds()
}
