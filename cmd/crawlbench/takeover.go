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
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// runTakeover runs part 6: three workers crawl a rate-limited web, the one
// holding the most claims is killed, and the driver watches its items
// until other workers hold them.
func (b *bench) runTakeover(ctx context.Context) (*report.Takeover, error) {
	o := b.opts
	res := &report.Takeover{TickMS: o.killTick.Milliseconds(), Hosts: o.killHosts, PagesPerHost: o.killPages, SessionTimeoutS: o.killSession.Seconds(), RatePerS: o.killRate}
	b.log.Info("part 6: kill-to-takeover", "tick", o.killTick, "session_timeout", o.killSession, "rate_per_s", o.killRate)
	web, err := testenv.StartWeb(ctx, testenv.WebConfig{
		Seed: 2, Hosts: o.killHosts, PagesPerHost: o.killPages, LinksPerPage: 8, CrossHostShare: 0.2, Logger: b.quiet,
	})
	if err != nil {
		return nil, err
	}
	defer web.Close()
	bz, err := b.startZK(ctx, filepath.Join("takeover", "zk"), true, o.killTick)
	if err != nil {
		return nil, err
	}
	defer bz.close()
	crawl := fmt.Sprintf("takeover-%d", time.Now().Unix())
	root := crawlRoot(crawl)
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
	dir := filepath.Join(o.outDir, "takeover")
	if err := b.seed(ctx, bz.srv.Addr(), crawl, dir, cfg, web.Seeds()); err != nil {
		return nil, err
	}
	q, err := coord.OpenQueue(ctx, bz.client, root)
	if err != nil {
		return nil, err
	}
	f, err := b.startFleet(ctx, bz.srv.Addr(), crawl, dir, 3, "--session-timeout", o.killSession.String())
	if err != nil {
		return nil, err
	}
	defer f.stop()
	// Let membership settle and the claim loops fill up: every host
	// holds up to per_host_max_in_flight + 1 claims waiting for or in a
	// fetch.
	time.Sleep(5 * time.Second)
	if err := b.killAndWatch(ctx, bz, q, root, f, res); err != nil {
		return nil, err
	}
	b.log.Info("part 6 done", "hosts", res.VictimHosts, "hosts_taken_over", res.HostsTakenOver,
		"host_median_s", round(res.HostMedianS, 2), "host_max_s", round(res.HostMaxS, 2), "shards", res.Shards, "shards_taken_over", res.ShardsTakenOver,
		"shard_median_s", round(res.ShardMedianS, 2), "shard_max_s", round(res.ShardMaxS, 2), "items", res.Items, "unresolved", res.Unresolved, "expired_s", round(res.ExpiredS, 2),
		"min_s", round(res.MinS, 2), "median_s", round(res.MedianS, 2), "max_s", round(res.MaxS, 2))
	return res, nil
}

// killAndWatch kills the worker holding the most claims with SIGKILL and
// polls every 50 ms, until every item, shard and host of the killed worker
// is taken over or the deadline (3 session timeouts + 15 s) passes.
func (b *bench) killAndWatch(ctx context.Context, bz *benchZK, q *coord.Queue, root string, f *fleet, res *report.Takeover) error {
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	victim := b.pickVictim(ctx, bz.srv.Addr(), q, st, f, res)
	if res.ClaimsBefore[res.Victim] == 0 {
		return fmt.Errorf("no worker holds a claim 5 s into the crawl (claims: %v)", res.ClaimsBefore)
	}
	tKill := time.Now()
	if err := victim.Kill(); err != nil {
		return err
	}
	<-victim.Done()
	w, err := newTakeoverWatch(ctx, q, res.Victim, b.log)
	if err != nil {
		return err
	}
	res.VictimClaims = len(w.items)
	b.log.Info("part 6: killed the worker with the most claims", "worker", res.Victim, "claims", len(w.items), "all_before", res.ClaimsBefore,
		"max_claims_per_host", res.MaxClaimsPerHost, "hosts_claimed_by_two_workers", res.HostsWithTwoOwners)
	deadline := tKill.Add(3*b.opts.killSession + 15*time.Second)
	res.DeadlineS = deadline.Sub(tKill).Seconds()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !w.done() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := w.poll(ctx, bz.client, root, time.Since(tKill), res); err != nil {
			return err
		}
	}
	res.LoadAfter = loadavg()
	w.summarize(res)
	return nil
}

// pickVictim records the claims each worker holds in st (and per host) and
// returns the worker holding the most, with the session timeout ZooKeeper
// granted it.
func (b *bench) pickVictim(ctx context.Context, addr string, q *coord.Queue, st *coord.QueueStats, f *fleet, res *report.Takeover) *workerProc {
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
	for _, w := range f.workers {
		if victim == nil || res.ClaimsBefore[w.ID] > res.ClaimsBefore[victim.ID] {
			victim = w
		}
	}
	res.Victim = victim.ID
	res.NegotiatedS = negotiatedTimeout(ctx, addr, sessOf[res.Victim])
	return victim
}

// shardItem names a queue item by shard and znode name.
type shardItem struct {
	shard int
	name  string
}

// takeoverWatch follows the killed worker's claimed items: when each is
// claimed by another worker or gone, and likewise their shards and hosts.
// Durations count from the kill; absent or 0 means not yet.
type takeoverWatch struct {
	q           *coord.Queue
	victim      string
	log         *slog.Logger
	items       []shardItem
	resolved    []time.Duration // by item
	left        int             // items not resolved
	shards      map[int]bool
	shardDone   map[int]time.Duration
	hostOf      map[shardItem]string
	victimHosts map[string]bool
	hostDone    map[string]time.Duration
}

// newTakeoverWatch reads the claims the killed worker still holds (they
// stay until its session expires: read after the kill, so items it
// completed just before dying are not counted) and their hosts.
func newTakeoverWatch(ctx context.Context, q *coord.Queue, victim string, log *slog.Logger) (*takeoverWatch, error) {
	st, err := q.Stats(ctx)
	if err != nil {
		return nil, err
	}
	w := &takeoverWatch{q: q, victim: victim, log: log, shards: map[int]bool{}, shardDone: map[int]time.Duration{},
		hostOf: map[shardItem]string{}, victimHosts: map[string]bool{}, hostDone: map[string]time.Duration{}}
	for _, s := range st.Shards {
		for _, c := range s.Claims {
			if c.Owner == victim {
				w.items = append(w.items, shardItem{s.Shard, c.Item})
				w.shards[s.Shard] = true
			}
		}
	}
	w.resolved, w.left = make([]time.Duration, len(w.items)), len(w.items)
	for try := 0; try < 5 && len(w.hostOf) < len(w.items); try++ {
		if try > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		for _, it := range w.items {
			if h := w.host(ctx, it); h != "" {
				w.victimHosts[h] = true
			}
		}
	}
	if len(w.hostOf) < len(w.items) {
		log.Warn("part 6: the hosts of some of the killed worker's items could not be read", "read", len(w.hostOf), "items", len(w.items))
	}
	return w, nil
}

// host returns the host of item it, "" when it cannot be read. Only a
// host found is remembered: a read that failed (a connection loss under
// load) is tried again at the next poll.
func (w *takeoverWatch) host(ctx context.Context, it shardItem) string {
	if h, ok := w.hostOf[it]; ok {
		return h
	}
	h, err := itemHost(ctx, w.q, it)
	if err != nil {
		w.log.Debug("part 6: item unreadable", "shard", it.shard, "item", it.name, "error", err)
		return ""
	}
	w.hostOf[it] = h
	return h
}

// itemHost reads queue item it and returns its URL's host. Errors: the
// item is gone (completed) or unreadable, or does not decode.
func itemHost(ctx context.Context, q *coord.Queue, it shardItem) (string, error) {
	data, err := q.Get(ctx, it.shard, it.name)
	if err != nil {
		return "", err
	}
	fi, err := frontier.DecodeItem(data)
	if err != nil {
		return "", fmt.Errorf("item %s of shard %d: %w", it.name, it.shard, err)
	}
	return frontier.Host(fi.URL), nil
}

// done reports whether every item, shard and host has been taken over.
func (w *takeoverWatch) done() bool {
	return w.left == 0 && len(w.shardDone) == len(w.shards) && len(w.hostDone) == len(w.victimHosts)
}

// poll reads, now after the kill, whether the killed worker's membership
// is gone, then the claims and children of its items' shards: a shard is
// taken over once another worker holds a claim in it (or it is empty), a
// host once another worker holds a claim on one of its items, an item once
// another worker claims it or it is gone (completed).
func (w *takeoverWatch) poll(ctx context.Context, client *coord.Client, root string, now time.Duration, res *report.Takeover) error {
	if res.ExpiredS == 0 {
		if ids, _, err := coord.Members(ctx, client, root); err == nil && !slices.Contains(ids, w.victim) {
			res.ExpiredS = now.Seconds()
		}
	}
	owner := map[shardItem]string{}
	present := map[shardItem]bool{}
	for s := range w.shards {
		claims, err := w.q.ShardClaims(ctx, s)
		if err != nil {
			return err
		}
		for _, c := range claims {
			owner[shardItem{s, c.Item}] = c.Owner
			if c.Owner == w.victim {
				continue
			}
			setOnce(w.shardDone, s, now)
			if h := w.host(ctx, shardItem{s, c.Item}); w.victimHosts[h] {
				setOnce(w.hostDone, h, now)
			}
		}
		names, err := w.q.ReadyNames(ctx, s)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			setOnce(w.shardDone, s, now)
		}
		for _, n := range names {
			present[shardItem{s, n}] = true
		}
	}
	for i, it := range w.items {
		if w.resolved[i] != 0 {
			continue
		}
		switch o := owner[it]; {
		case o != "" && o != w.victim:
			w.resolved[i] = now
			res.ByOtherClaim++
			w.left--
		case !present[it]:
			w.resolved[i] = now
			res.ByGone++
			w.left--
		}
	}
	return nil
}

// setOnce sets m[k] = v unless k is already set.
func setOnce[K comparable](m map[K]time.Duration, k K, v time.Duration) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// summarize fills in res's counts and spreads of the takeover times.
func (w *takeoverWatch) summarize(res *report.Takeover) {
	res.Shards = len(w.shards)
	res.VictimHosts = len(w.victimHosts)
	var ds []time.Duration
	for _, d := range w.resolved {
		if d != 0 {
			ds = append(ds, d)
		}
	}
	res.HostsTakenOver, res.HostMinS, res.HostMedianS, res.HostMaxS = spread(slices.Collect(maps.Values(w.hostDone)))
	res.ShardsTakenOver, res.ShardMinS, res.ShardMedianS, res.ShardMaxS = spread(slices.Collect(maps.Values(w.shardDone)))
	res.Items, res.MinS, res.MedianS, res.MaxS = spread(ds)
	res.Unresolved = len(w.items) - len(ds)
}

// perHostClaims reads the item of every claim in st and records, by host,
// how many claims there are and how many workers hold them.
func (b *bench) perHostClaims(ctx context.Context, q *coord.Queue, st *coord.QueueStats, res *report.Takeover) {
	count := map[string]int{}
	owners := map[string]map[string]bool{}
	for _, s := range st.Shards {
		for _, c := range s.Claims {
			h, err := itemHost(ctx, q, shardItem{s.Shard, c.Item})
			if err != nil {
				b.log.Debug("part 6: claimed item unreadable (completed meanwhile?)", "shard", s.Shard, "item", c.Item, "error", err)
				continue
			}
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
	slices.Sort(ds)
	return len(ds), ds[0].Seconds(), exactQuantile(ds, 0.5).Seconds(), ds[len(ds)-1].Seconds()
}
