package main

// BENCHMARKS.md's sections, one per part: how each figure was measured and
// the per-run details behind the table. Nothing here measures.

import (
	"fmt"
	"sort"
	"strings"
)

func (r *report) methodSynth(b *strings.Builder) {
	s := r.Synth
	if s == nil {
		return
	}
	b.WriteString("## 1. Synthetic web, rate limits off\n\n")
	fmt.Fprintf(b, "`testenv.StartWeb` in the driver: %d hosts (one loopback port each) × %d pages, %d random links per page plus the chain link, "+
		"%.0f%% of the random links to another host, special pages off; ground truth from `Web.GroundTruth` (scope `%s`, robots.txt obeyed, no depth limit): "+
		"%s URLs. Crawl config: `per_host_rate_per_s 0, per_host_max_in_flight %d, worker_concurrency 64, allow_private_networks true, obey_robots true, "+
		"max_depth -1, scope %s`; default layout (`frontier.DefaultLayout`: 64 shard groups of one shard).\n\n",
		s.Hosts, s.PagesPerHost, s.LinksPerPage, s.CrossHostShare*100, s.Scope, f0(float64(s.Expected)), s.MaxInFlight, s.Scope)
	fmt.Fprintf(b, "Two ZooKeeper 3.8 standalone servers (tickTime 2 s, JVM `%s`), one with `forceSync=yes`, one with `forceSync=no`, serve parts 1, 2 "+
		"and 5. Each is first warmed up by one unrecorded 3-worker crawl of the same web (%s s): a fresh JVM spends seconds in its JIT compilers, "+
		"which a long-running server does not. Each run uses a fresh crawl name, is seeded with `bin/seeder`, and starts N `bin/crawler` processes "+
		"(`--metrics-addr 127.0.0.1:0`). The driver watches the crawl logs and, once they stop growing, reads `frontier.Pending` until nothing "+
		"is ready, claimed, in a backlog or in an inbox, twice in a row; then it scrapes each worker's `/metrics`, reads `/proc/<pid>` and the "+
		"ZooKeeper `srvr` zxid; then it waits until every backlog batch has retired into seen chunks (part 3b), and only then sends SIGTERM.\n\n",
		strings.Join(r.SharedZKJavaOpts, " "), joinFloats(r.WarmupS, 1))
	b.WriteString("- **pages/s** = crawl log lines / (last crawl log write − first worker start).\n" +
		"- **ZooKeeper writes per page**: zxid delta over the run / pages. Every write transaction increments the zxid once, a " +
		"multi counting once (a group-committed multi carries many callers' steps), and so does a failed write; session " +
		"creation and closing and membership count too. Reads do not.\n" +
		"- **fenced steps per multi** (group commit): the workers' `zkcrawl_zk_op_duration_seconds` counts of claims, completions, retries, " +
		"failures, releases, group steps and inbox posts, over the count of ZooKeeper multis they sent (`op=\"multi\"`). " +
		"`coord.Client.CommitStats` gives the same in-process, but the worker does not export it.\n" +
		"- **claim latency**: the workers' `queue_claim` histograms merged bucket by bucket, quantiles interpolated as PromQL's `histogram_quantile` does.\n" +
		"- **correctness**: every ground-truth URL logged exactly once with its status; nothing else logged (`testenv.DiffTruth`).\n\n")
	if len(s.BaselineAttempts) > 0 {
		fmt.Fprintf(b, "**Baseline in the same run**: `scripts/bench.sh` builds `bin/seeder` and `bin/crawler` of %s (the previous frontier "+
			"layout: a JSON znode per queued URL, a seen marker znode per URL, 256 shards, host spread 8) from git into the output "+
			"directory; in every round, right after the new code's 3-worker run on each server, the same crawl runs with those "+
			"binaries (found done by its queue and claims alone). Both face the same machine load. It is checked against today's ground "+
			"truth, so URLs that only the newer crawler fetches (such as each host's /sitemap.xml) count as missing for it.\n\n", s.BaselineName)
	}
	fmt.Fprintf(b, "Every worker count ran %d time(s) on each server; the table shows each count's fastest run (marked ✓).\n\n", max(len(s.Attempts)/max(len(s.Runs), 1), 1))
	b.WriteString("| workers | forceSync | run | pages | wall s | pages/s | pages per worker | worker CPU s | ZK CPU s | ZK writes | steps / multis | links queued / duplicate | dropped | claim mean ms | complete p50 ms | post p50 ms | data Δ B (znodes Δ) | seen keys, chunks, bytes | peak RSS MB | load before → after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range append(s.Attempts, s.BaselineAttempts...) {
		var per, rss []string
		for _, p := range x.PagesPerWorker {
			per = append(per, f0(float64(p)))
		}
		for _, v := range x.PeakRSSMB {
			rss = append(rss, f0(v))
		}
		mark := ""
		for _, y := range s.Runs {
			if y.Crawl == x.Crawl {
				mark = " ✓"
			}
		}
		if x.Baseline {
			mark = " (" + s.BaselineName + ")"
			for _, y := range s.Baseline {
				if y.Crawl == x.Crawl {
					mark += " ✓"
				}
			}
		}
		fmt.Fprintf(b, "| %d | %s | %d%s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s | %s | %s (%s) | %s, %s, %s | %s | %s → %s |\n",
			x.Workers, map[bool]string{true: "yes", false: "no"}[x.ForceSync], x.Attempt, mark, f0(float64(x.Pages)), f2(x.WallS), f0(x.PagesPerS),
			strings.Join(per, ", "), f1(x.WorkerCPUS), f1(x.ZKCPUS), f0(float64(x.ZKWrites)), f0(x.FencedSteps), f0(x.Multis),
			f0(x.LinksQueued), f0(x.LinksDup), orNone(opsLine(x.Dropped, nil)), f1(x.ClaimMeanMs), f1(x.CompleteP50Ms), f1(x.PostP50Ms),
			f0(float64(x.DataDelta)), f0(float64(x.ZnodeDelta)), f0(float64(x.SeenKeys)), f0(float64(x.SeenChunks)), f0(float64(x.SeenChunkBytes)),
			strings.Join(rss, ", "), x.LoadBefore, x.LoadAfter)
	}
	b.WriteString("\n")
	for _, x := range s.Runs {
		if x.Workers == 3 && x.ForceSync {
			fmt.Fprintf(b, "ZooKeeper requests of the 3-worker forceSync=yes run, by op (errors in parentheses): %s.\n\n", opsLine(x.ZKOps, x.ZKOpErrors))
		}
	}
}

func (r *report) methodReal(b *strings.Builder) {
	rr := r.Real
	if rr == nil || len(rr.Runs) == 0 {
		return
	}
	b.WriteString("## 2. Real site: the PostgreSQL 15 manual, zkcrawl vs wget -r --warc-file\n\n")
	fmt.Fprintf(b, "`scripts/demo-real.sh`'s setup, timed like part 1: %s (%d worker processes, `sendfile on`, access log off) serves `%s` on loopback; "+
		"`wget -r -np -nv --warc-file=…` (%s) mirrors it from `index.html`, one request at a time on one keep-alive connection, writing every "+
		"response into a gzipped WARC file as zkcrawl does; then `bin/seeder` creates the crawl and 3 `bin/crawler` processes crawl it "+
		"(`per_host_rate_per_s 0, per_host_max_in_flight %d, worker_concurrency %d, max_depth -1, scope same_host`), once on the "+
		"forceSync=yes ZooKeeper and once on the forceSync=no one, against the same wget run. zkcrawl's time runs from the seeder's start to the "+
		"last crawl log line (no `--exit-when-done` quiet period). The manual is one host, hence one shard group with one owner: one worker "+
		"does all the fetching, by design. The pair is run again (forceSync=yes) through a proxy in the driver that holds every response "+
		"back by the added latency, as a server a few milliseconds away would.\n\n",
		rr.Nginx, rr.NginxWorkers, rr.Docs, rr.Wget, rr.MaxInFlight, rr.Concurrency)
	b.WriteString("| added latency ms | forceSync | wget s (WARC MB) | zkcrawl s (seed to last page) | of which seeding s | pauses > 250 ms, s (longest) | ratio | ratio, crawl only | pages wget / zkcrawl | crawl log lines | missing, dup | worker CPU s | ZK CPU s | ZK writes (per line) | claim p50 / p99 ms | load before → after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range rr.Runs {
		fmt.Fprintf(b, "| %s | %s | %s (%s) | %s | %s | %s (%s) | %s | %s | %d / %d | %d | %d, %d | %s | %s | %s (%s) | %s / %s | %s → %s |\n",
			f0(x.LatencyMS), map[bool]string{true: "yes", false: "no"}[x.ForceSync], f2(x.WgetS), f1(x.WgetWARCMB), f2(x.ZKS), f2(x.SeedS),
			f2(x.IdleGapsS), f2(x.LongestGapS), f2(x.Ratio), f2(x.CrawlRatio), x.WgetPages, x.ZKPages, x.ZKLines, x.Missing, x.Dups,
			f2(x.WorkerCPUS), f2(x.ZKCPUS), f0(float64(x.ZKWrites)), f2(x.WritesPerLine), f1(x.ClaimP50Ms), f1(x.ClaimP99Ms), x.LoadBefore, x.LoadAfter)
	}
	if x := realPick(rr.Runs, 0, true); x != nil && x.ZKPages > 0 && x.WgetPages > 0 {
		cpu := (x.WorkerCPUS + x.ZKCPUS) * 1000 / float64(x.ZKPages)
		fmt.Fprintf(b, "\nOn loopback nginx answers a page in well under a millisecond: wget spends %.2f ms of wall time per page. zkcrawl spends "+
			"%.2f ms of CPU per page in the worker and ZooKeeper together (forceSync=yes run).\n\n", x.WgetS*1000/float64(x.WgetPages), cpu)
		fmt.Fprintf(b, "ZooKeeper requests of that crawl, by op (errors in parentheses): %s.\n\n", opsLine(x.ZKOps, x.ZKOpErrors))
	}
}

func (r *report) methodFootprint(b *strings.Builder) {
	q, g, s := r.Queued, r.Big, r.Synth
	if q == nil && g == nil && s == nil {
		return
	}
	b.WriteString("## 3. The frontier's footprint in ZooKeeper\n\n")
	b.WriteString("Data is mntr's `zk_approximate_data_size` (the data bytes plus the path bytes of every znode, what the server's heap " +
		"holds per znode apart from its fixed overhead), znodes mntr's `zk_znode_count`; both are read before and after, on a server of the " +
		"part's own, and divided by the URLs.\n\n")
	if q != nil {
		fmt.Fprintf(b, "**3a. Queued URLs.** %s URLs `http://hNNNNN.example/p/N` (%s hosts × %s paths, host by host) in a seeds file given to "+
			"`bin/seeder --seeds` (the real binary, default layout, config `{\"paused\": true}` over the defaults) on a fresh ZooKeeper "+
			"(forceSync=yes, -Xmx1g). The seeding rate is URLs / the seeder process's wall time (start to exit, ZooKeeper connection and "+
			"crawl creation included): %s s, `%s`. Right after seeding the URLs wait as compressed inbox posts. Then one `bin/crawler` "+
			"starts; the crawl is paused, so it claims nothing, but as owner of every shard group it drains the inboxes into backlog "+
			"batches and fills every host's ready window (per_host_max_in_flight + 1 = %d items per host, %s in all): the driver waits "+
			"until `frontier.Pending` shows no posts and that many ready items (%s after %s s: %+v), stops the worker and reads again. "+
			"Data: %s → %s → %s MB; znodes %s → %s → %s; JVM RSS %s → %s → %s MB (base, posted, drained). Load before → after: %s → %s.\n\n",
			f0(float64(q.URLs)), f0(float64(q.Hosts)), f0(float64(q.URLs/max(q.Hosts, 1))), f2(q.SeederS), lastLine(q.SeederOutput), q.Window,
			f0(float64(q.Window*q.Hosts)), map[bool]string{true: "reached", false: "NOT reached"}[q.DrainedOK], f1(q.DrainS), q.Pending,
			mb(q.Base.DataBytes), mb(q.Posted.DataBytes), mb(q.Drained.DataBytes), f0(float64(q.Base.Znodes)), f0(float64(q.Posted.Znodes)),
			f0(float64(q.Drained.Znodes)), f0(float64(q.Base.RSSKB)/1024), f0(float64(q.Posted.RSSKB)/1024), f0(float64(q.Drained.RSSKB)/1024),
			q.LoadBefore, q.LoadAfter)
		if q.Hosts > 0 {
			ready := float64(q.Window * q.Hosts)
			fmt.Fprintf(b, "After the drain, %s of the %s znodes per URL are the ready items themselves (%s per host, one JSON znode each, "+
				"about 100 bytes with their path): a host with fewer queued URLs than the window keeps all of them as ready znodes.\n\n",
				f2(ready/float64(q.URLs)), f2(q.DrainedZnodesPerURL), f0(float64(q.Window)))
		}
	}
	if s != nil && len(s.Runs) > 0 {
		b.WriteString("**3b. Fetched URLs.** Measured on every crawl of part 1: mntr before seeding and after the crawl finished, its backlog " +
			"batches all retired into seen chunks (`Backlog.Stats`: no live batch; the driver waits up to 15 s while the workers, the groups' " +
			"owners, still run) and its workers stopped (their ephemeral znodes gone). What is left is the crawl's seen-set (sorted, " +
			"delta-coded 64-bit fingerprints in `R/backlog/<g>/s-N` chunks), the group cursors and the crawl's fixed parents (config, " +
			"64 queue, claim and inbox parents), divided by the pages fetched. The seen chunks alone: the sum of their `DataLength` over the " +
			"keys they hold.\n\n")
	}
	if g != nil {
		fmt.Fprintf(b, "**3c. A big frontier.** `frontier.Enqueue` in-process (the seeder's own path: 20,000 URLs a call, 3 calls at a time, "+
			"group-committed posts) into a fresh ZooKeeper with `-Xmx%s` (forceSync=yes), URLs `http://hNNNNNN.example/p/N` host by host, "+
			"%s of them asked, seeding stopped after %s s at most: %s URLs in %s s (%s/s)%s. Then mntr (%s MB of data, %s znodes), "+
			"JVM RSS %s MB (peak %s MB), %d snapshot files, largest %s MB, %s MB of transaction logs; then a restart (SIGTERM, start, "+
			"serving again: it reads the latest snapshot and the log after it and writes a fresh snapshot of %s MB): %s s, RSS after %s MB. "+
			"Load before → after: %s → %s.\n\n",
			g.Heap, f0(float64(g.Target)), f0(g.TimeLimitS), f0(float64(g.URLs)), f1(g.SeedS), f0(g.SeedPerS),
			map[bool]string{true: " (stopped by the time limit)", false: ""}[g.StoppedByTimeLimitS],
			mb(g.After.DataBytes), f0(float64(g.After.Znodes)), f0(float64(g.After.RSSKB)/1024), f0(g.JVMPeakMB), g.Snapshots,
			f1(g.LargestSnapshotMB), f0(g.TxnLogMB), f1(g.RestartSnapshotMB), f2(g.RestartS), f0(g.AfterRestartRSSMB), g.LoadBefore, g.LoadAfter)
	}
}

func (r *report) methodTrap(b *strings.Builder) {
	t := r.Trap
	if t == nil || len(t.Runs) == 0 {
		return
	}
	b.WriteString("## 4. Crawler traps\n\n")
	fmt.Fprintf(b, "`testenv.NewTrapHandler` served on loopback: every page links to %s new unique URLs of about %s characters, each another "+
		"such page, gzipped (about 10 MB for the random flavour, under the crawler's 10 MiB body cap). Flavours: **repetitive** "+
		"(`/t/<page>-<i>/abcdefghij/abcdefghij/…` on the trap's host), **random** (random hex digits on the trap's host: incompressible "+
		"beyond hex's 4 bits per character), **subdomain** (a new host per link: `127.a.b.c:<port>` loopback literals that nothing serves, "+
		"so each is a new host key and fetching it fails at once without leaving the machine; names like `x<random>.trap.invalid` would "+
		"send a DNS query to the machine's resolver, which a loopback-only benchmark must not). One `bin/crawler` crawls each for %s s "+
		"on a fresh ZooKeeper (forceSync=yes, -Xmx1g) with the default config plus `allow_private_networks` (and `scope any` for "+
		"subdomain, else scope drops every link before the frontier sees it). Growth = mntr data at the end − before seeding; peak = the "+
		"largest of the 1 s readings; the driver stops a flavour early past +%s MB. Dropped links are the worker's status node's `dropped` "+
		"map (read after its next 2 s refresh).\n\n", f0(float64(t.Links)), f0(float64(t.URLLength)), f0(t.TimeS), f0(t.AbortMB))
	b.WriteString("| flavour | config over the defaults | ran s | pages (of the trap host) | data growth MB (peak, last 10 s) | znodes | ZK writes | JVM RSS MB | dropped (status node) | dead letters | failed group steps, connection losses | frontier at the end | load after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range t.Runs {
		var cfg []string
		for k, v := range x.Config {
			cfg = append(cfg, fmt.Sprintf("%s %v", k, v))
		}
		sort.Strings(cfg)
		fmt.Fprintf(b, "| %s | %s | %s | %s (%s) | %s (%s, %s) | %s | %s | %s | %s | %s | %d, %d | ready %d, claimed %d, backlog %d, posts %d | %s |\n",
			x.Flavour, strings.Join(cfg, ", "), f0(x.RanS), f0(float64(x.Pages)), f0(float64(x.TrapPages)), f1(x.GrowthMB), f1(x.PeakGrowthMB),
			signed(x.LastTenSMB), f0(float64(x.ZnodeGrowth)), f0(float64(x.ZKWrites)), f0(x.JVMRSSMB), dropLine(x.Dropped), f0(float64(x.DeadLetters)),
			x.GroupFailures, x.ConnLosses, x.Pending.Ready, x.Pending.Claimed, x.Pending.Backlog, x.Pending.Posts, x.LoadAfter)
	}
	b.WriteString("\n")
	for _, x := range t.Runs {
		if x.GroupErrorHint != "" {
			fmt.Fprintf(b, "%s: the first failed group step in the worker's log: `%s`.\n\n", x.Flavour, x.GroupErrorHint)
		}
	}
	b.WriteString("Dead letters (`R/failed`, one znode per URL that failed every attempt, holding the whole item) count against no quota.\n\n")
}

func (r *report) methodCeiling(b *strings.Builder) {
	c := r.Ceiling
	if c == nil || len(c.Runs) == 0 {
		return
	}
	b.WriteString("## 5. ZooKeeper's write ceiling\n\n")
	fmt.Fprintf(b, "On each shared server of parts 1 and 2 (standalone, so no quorum round trip: an ensemble's ceiling is lower), %d sessions with %d "+
		"goroutines each send, for %s s, multis of `create` + `delete` of a znode of their own (one transaction each, nothing left behind) "+
		"straight through go-zookeeper, not through coord's group commit. The implied cluster pages/s is that ceiling over part 1's "+
		"ZooKeeper writes per page with the most workers on the same server: the most pages per second any number of workers could "+
		"finish through this ZooKeeper.\n\n", c.Clients, c.InFlight, f0(c.TimeS))
	b.WriteString("| forceSync | multis | errors | zxid delta | multis/s | writes per page | implied pages/s | load after |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range c.Runs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", map[bool]string{true: "yes", false: "no"}[x.ForceSync],
			f0(float64(x.Multis)), f0(float64(x.Errors)), f0(float64(x.ZxidDelta)), f0(x.TxPerS), f2(x.WritesPerPage), f0(x.ImpliedPagesS), x.LoadAfter)
	}
	b.WriteString("\n")
}

// joinFloats formats values with d decimals, ", " between.
func joinFloats(v []float64, d int) string {
	var out []string
	for _, x := range v {
		out = append(out, num(x, d))
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

func (r *report) methodTakeover(b *strings.Builder) {
	t := r.Takeover
	if t == nil {
		return
	}
	b.WriteString("## 6. Kill-to-takeover\n\n")
	var owners []string
	for k := range t.ClaimsBefore {
		owners = append(owners, k)
	}
	sort.Strings(owners)
	var claims []string
	for _, k := range owners {
		claims = append(claims, fmt.Sprintf("%s %d", k, t.ClaimsBefore[k]))
	}
	fmt.Fprintf(b, "A ZooKeeper with tickTime %d ms (so session timeouts from %s to %s s are granted), a synthetic web of %d hosts × %d pages, "+
		"3 workers with `--session-timeout %ss` and `per_host_rate_per_s %s, per_host_max_in_flight 1`, so items wait for their politeness "+
		"turn while claimed. 5 s into the crawl the claims were: %s. The driver sent SIGKILL to %s and then recorded the claims it still "+
		"held (%d, from `coord.Queue.Stats`; they stay until its session expires). Its membership znode vanished %s s after the kill "+
		"(session expiry). Every 50 ms the driver read the claims and children of those items' shards.\n\n",
		t.TickMS, f1(2*float64(t.TickMS)/1000), f1(20*float64(t.TickMS)/1000), t.Hosts, t.PagesPerHost,
		f1(t.SessionTimeoutS), f1(t.RatePerS), strings.Join(claims, ", "), t.Victim, t.VictimClaims, f2(t.ExpiredS))
	fmt.Fprintf(b, "- A **host** (%d of them) counts as taken over when another worker holds a claim on one of its items. That is failover: "+
		"session expiry, then the handoff (the new owner of a shard group waits until its shards hold no foreign claim, then one "+
		"politeness interval), then the claim.\n"+
		"- A **shard** (%d) counts when another worker holds a claim in it, an **item** when another worker holds its claim (%d items) "+
		"or it is gone, i.e. completed (%d). These also wait for their politeness turn: a host's items are fetched %s per second, "+
		"from a ready window of per_host_max_in_flight + 1 items that the group's new owner refills from the backlog, "+
		"so the last of them come after failover plus their turn. The driver "+
		"stops watching %s s after the kill; %d items were still queued then.\n"+
		"- At the kill %d hosts had claims, at most %d on one host (the ready window holds per_host_max_in_flight + 1 = 2 items per host). "+
		"%d hosts had claims held by two workers at once.\n\nLoad after: %s.\n\n",
		t.VictimHosts, t.Shards, t.ByOtherClaim, t.ByGone, f1(t.RatePerS), f0(t.DeadlineS), t.Unresolved,
		t.HostsClaimed, t.MaxClaimsPerHost, t.HostsWithTwoOwners, t.LoadAfter)
}

// opsLine formats request counts by op, most frequent first.
func opsLine(ops, errs map[string]float64) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range ops {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || list[i].v == list[j].v && list[i].k < list[j].k })
	var parts []string
	for _, e := range list {
		s := e.k + " " + f0(e.v)
		if errs[e.k] > 0 {
			s += " (" + f0(errs[e.k]) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// lastLine returns the last non-empty line of s (a command's summary).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
