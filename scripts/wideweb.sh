#!/usr/bin/env bash
# scripts/wideweb.sh: how far a batch crawl of a wide, slow web is from the
# politeness bound, measured as a user runs it (after `make build`).
#
# It starts a ZooKeeper (bin/zkserver), the wide web (bin/testweb --wide:
# HOSTS hosts x PAGES pages, each host's "/" linking all its pages, response
# latency lognormal with median 150 ms and p99 1 s) with its ground truth and
# politeness bound at RATE requests/s per host, and then, for each worker
# count in WORKERS, seeds a fresh crawl (bin/seeder) and runs that many
# bin/crawler --exit-when-done until they exit. Per run it prints:
#
#   makespan       workers' start to the last crawl.log line (the last page)
#   ratio          makespan / politeness bound (the issue's target: <= 1.15)
#   exit_after     last page to the last worker's exit
#   pages          truth URLs logged with their truth status / truth URLs
#   in_flight      mean and peak fetches in flight (from crawl.log intervals)
#   host_gap       per host, time between consecutive request starts (the
#                  rate allows 1/RATE s): median and p90 over all hosts
#   host_first     per host, workers' start to its first logged fetch start
#   link_wait      per page, the end of the fetch that found its link to the
#                  start of its own fetch (queued, claimed, politeness)
#   host_span      per host, the end of its "/" to the end of its last page
#                  (politeness alone needs (pages+1)/RATE s)
#   stage          per item, p50 / p90 / mean ms of each stage of its path
#                  (zkcrawl_item_stage_seconds, all workers): ready (data
#                  written to taken), claim, robots, politeness (waiting for
#                  the host's turn), fetch, store, parse, links (enqueue),
#                  fsync, complete; total is claimed to finished
#   cpu_s, rss_mb  per worker, from the last metrics scrape before its exit
#   flat           per worker, runs of 3 min or more: goroutines, heap in
#                  use (live and garbage not yet collected), heap goal
#                  (the next collection's target, about twice the live
#                  heap: it follows the live heap, not the GC cycle),
#                  open fds and RSS, the peak of the second minute ->
#                  the peak of the last (flat: no per-host growth)
#   site           the site's own view (testweb --arrivals-file): requests
#                  that arrived, robots.txt among them, those with no
#                  crawl.log line (a page's request logged once per line),
#                  violations (two arrivals at a host closer than 1/RATE
#                  less 50 ms) and the gaps between a host's arrivals in
#                  whole intervals (1: on time; 2 and more: a turn missed)
#
# Environment: HOSTS (1000), PAGES (10), WORKERS ("1 3"), RATE (1),
# FORCE_SYNC (true: ZooKeeper fsyncs before each ack, as in production;
# default false), WIDE_DIR (output, default ./out/wideweb-<timestamp>), BIN,
# TIMEOUT (the most seconds one run may take, default 600), WIDE_MD (a file
# to append one markdown table row per run to: scripts/bench.sh's).
# WIDE_DIR must be new or empty (workers append to crawl logs they find).
# Exits 1 when a run misses a page of the ground truth or passes TIMEOUT.
set -uo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

need_bins zkserver testweb seeder crawler
HOSTS=${HOSTS:-1000}
PAGES=${PAGES:-10}
WORKERS=${WORKERS:-"1 3"}
RATE=${RATE:-1}
TIMEOUT=${TIMEOUT:-600}
WIDE_DIR=${WIDE_DIR:-$ZKC_ROOT/out/wideweb-$(date +%Y%m%d-%H%M%S)}
[ -z "$(ls -A "$WIDE_DIR" 2>/dev/null)" ] ||
	die "WIDE_DIR=$WIDE_DIR is not empty (its crawl logs would mix with this run's): name a new folder with WIDE_DIR="
mkdir -p "$WIDE_DIR" || die "cannot create $WIDE_DIR"
WIDE_DIR=$(cd "$WIDE_DIR" && pwd)
ZKC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zkcrawl-wide.XXXXXX")
trap 'cleanup_all; rm -rf "$ZKC_TMP"' EXIT
trap 'echo; warn "interrupted: stopping everything"; exit 130' INT
trap 'exit 143' TERM

# zkc_py_wide_report: the python3 helper that reports one run (pyscript).
zkc_py_wide_report() {
	cat <<'EOF'
"""Report one wide-web run: argv TRUTH BOUND_S T0 RATE RUN_DIR ARRIVALS T_END [MD_FILE LABEL]."""
import glob, json, os, re, statistics, sys
from collections import defaultdict
from datetime import datetime

truth_file, bound, t0, rate, run = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
arrivals_file, t_end = sys.argv[6], float(sys.argv[7])
md_file, md_label = (sys.argv[8], sys.argv[9]) if len(sys.argv) > 9 else ("", "")
truth = {}
for line in open(truth_file):
    st, _, url = line.rstrip("\n").split("\t")
    if int(st) > 0:
        truth[url] = int(st)
entries, via = [], {}
for f in glob.glob(os.path.join(run, "w*", "crawl.log")):
    for line in open(f):
        e = json.loads(line)
        end = datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
        entries.append((end - e["duration_ms"] / 1000, end, e["url"], e["status"]))
        via[e["url"]] = e["via"]
entries.sort(key=lambda e: e[1])
final = {}
for _, _, u, st in entries:
    final[u] = st
ok = sum(1 for u, st in truth.items() if final.get(u) == st)
exits = [float(l.split("\t")[1]) for l in open(os.path.join(run, "exits.tsv")) if l.strip()]
if not entries:
    print("no crawl.log lines"); sys.exit(1)
first, last = min(e[0] for e in entries), max(e[1] for e in entries)
mk = last - t0
# in flight: sweep over fetch intervals
ev = sorted([(s, 1) for s, _, _, _ in entries] + [(e, -1) for _, e, _, _ in entries])
cur = peak = 0
for _, d in ev:
    cur += d; peak = max(peak, cur)
busy = sum(e - s for s, e, _, _ in entries)
hosts = defaultdict(list)
for s, _, u, _ in entries:
    hosts[u.split("/")[2]].append(s)
gaps, firsts = [], []
for h, ss in hosts.items():
    ss.sort()
    firsts.append(ss[0] - t0)
    gaps += [b - a for a, b in zip(ss, ss[1:])]
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")
span = {u: (s, e) for s, e, u, _ in entries}
waits = [span[u][0] - span[v][1] for u, v in via.items() if v in span]
host_span = defaultdict(lambda: [None, 0.0])
for s, e, u, _ in entries:
    h = u.split("/")[2]
    if u == "http://" + h + "/":
        host_span[h][0] = e
    host_span[h][1] = max(host_span[h][1], e)
spans = [b - a for a, b in host_span.values() if a is not None]
def metric(text, name, label=""):
    tot = 0.0
    for m in re.finditer(r"^" + re.escape(name) + r"(\{[^}]*\})? ([0-9.e+-]+)$", text, re.M):
        if label in (m.group(1) or ""):
            tot += float(m.group(2))
    return tot
STAGES = "ready claim robots politeness fetch store parse links fsync complete total".split()
buckets = defaultdict(lambda: defaultdict(float))  # stage -> le -> cumulative count, all workers
ssum = defaultdict(float)
per = []
for f in sorted(glob.glob(os.path.join(run, "metrics", "*.prom"))):
    t = open(f).read()
    for m in re.finditer(r'^zkcrawl_item_stage_seconds_(bucket|sum)\{(?:le="([^"]+)",)?stage="(\w+)"(?:,le="([^"]+)")?\} ([0-9.e+-]+)$', t, re.M):
        kind, le, st, v = m.group(1), m.group(2) or m.group(4), m.group(3), float(m.group(5))
        if kind == "sum":
            ssum[st] += v
        else:
            buckets[st][float(le)] += v
    per.append("cpu_s=%.1f rss_mb=%.0f" % (metric(t, "process_cpu_seconds_total"), metric(t, "process_resident_memory_bytes") / 2**20))
def hq(b, p):
    # PromQL's histogram_quantile: interpolate inside the bucket holding rank p.
    les = sorted(b); n = b[les[-1]] if les else 0
    lo = below = 0.0
    for le in les:
        if b[le] >= p * n and n:
            return lo if le == float("inf") else lo + (le - lo) * (p * n - below) / max(b[le] - below, 1e-12)
        lo, below = le, b[le]
    return float("nan")
print("workers=%d bound_s=%.2f makespan_s=%.2f ratio=%.2f fetch_span_s=%.2f exit_after_s=%.2f" % (
    len(exits), bound, mk, mk / bound, last - first, (max(exits) - last) if exits else float("nan")))
print("pages=%d/%d log_lines=%d in_flight_mean=%.1f in_flight_peak=%d" % (ok, len(truth), len(entries), busy / (last - first), peak))
print("host_gap_s p50=%.2f p90=%.2f max=%.2f (rate allows %.2f)  host_first_s p50=%.2f p90=%.2f max=%.2f" % (
    q(gaps, .5), q(gaps, .9), q(gaps, 1), 1 / rate if rate else 0, q(firsts, .5), q(firsts, .9), q(firsts, 1)))
print("link_wait_s p50=%.2f p90=%.2f max=%.2f  host_span_s p50=%.2f p90=%.2f max=%.2f" % (
    q(waits, .5), q(waits, .9), q(waits, 1), q(spans, .5), q(spans, .9), q(spans, 1)))
print("stage      p50_ms   p90_ms  mean_ms    items")
for st in STAGES:
    b = buckets.get(st, {}); n = b.get(float("inf"), 0)
    print("%-10s %8.1f %8.1f %8.1f %8d" % (st, 1000 * hq(b, .5), 1000 * hq(b, .9), 1000 * ssum[st] / max(n, 1), n))
print(" | ".join(per))
# Flatness (runs of 3 minutes or more): per worker, the peak of each series
# in its second minute, in its last minute, and over the whole run. Flat:
# the last minute's peak within the second minute's plus noise.
for f in sorted(glob.glob(os.path.join(run, "metrics", "*.series"))):
    rows = [list(map(float, l.split())) for l in open(f) if len(l.split()) == 6]
    if not rows or rows[-1][0] - rows[0][0] < 180:
        continue
    t00, tend = rows[0][0], rows[-1][0]
    def peak(i, lo, hi):
        xs = [r[i] for r in rows if lo <= r[0] < hi]
        return max(xs) if xs else float("nan")
    print("flat %s (%.0f s): goroutines %.0f -> %.0f (max %.0f)  heap_inuse_mb %.0f -> %.0f (max %.0f)  heap_goal_mb %.0f -> %.0f (max %.0f)  fds %.0f -> %.0f  rss_mb %.0f -> %.0f (max %.0f)" % (
        os.path.basename(f).split(".")[0], tend - t00,
        peak(1, t00 + 60, t00 + 120), peak(1, tend - 60, tend + 1), peak(1, 0, 1e18),
        peak(2, t00 + 60, t00 + 120) / 2**20, peak(2, tend - 60, tend + 1) / 2**20, peak(2, 0, 1e18) / 2**20,
        peak(5, t00 + 60, t00 + 120) / 2**20, peak(5, tend - 60, tend + 1) / 2**20, peak(5, 0, 1e18) / 2**20,
        peak(3, t00 + 60, t00 + 120), peak(3, tend - 60, tend + 1),
        peak(4, t00 + 60, t00 + 120) / 2**20, peak(4, tend - 60, tend + 1) / 2**20, peak(4, 0, 1e18) / 2**20))
# The site's view: the arrivals of this run (t0..t_end) from testweb's log.
site = defaultdict(list)
for line in open(arrivals_file):
    f = line.rstrip("\n").split("\t")
    if len(f) == 5 and t0 <= float(f[0]) <= t_end:
        site[f[1]].append((float(f[0]), f[2]))
logged = defaultdict(int)
for _, _, u, _ in entries:
    logged[u] += 1
arrived = defaultdict(int)
robots = 0
for h, v in site.items():
    for _, path in v:
        if path == "/robots.txt":
            robots += 1
        else:
            arrived["http://" + h + path] += 1
unlogged = sum(max(0, n - logged.get(u, 0)) for u, n in arrived.items())
turns, violations, sgaps = defaultdict(int), 0, []
for h, v in site.items():
    ts = sorted(t for t, _ in v)
    for a, b in zip(ts, ts[1:]):
        sgaps.append(b - a)
        if rate and b - a < 1 / rate - 0.05:
            violations += 1
        if rate:
            turns[min(4, max(1, round((b - a) * rate)))] += 1
print("site: requests=%d robots=%d no_log_line=%d violations=%d gap_s p50=%.2f p90=%.2f max=%.2f  gaps_in_intervals 1=%d 2=%d 3=%d 4+=%d" % (
    sum(len(v) for v in site.values()), robots, unlogged, violations, q(sgaps, .5), q(sgaps, .9), q(sgaps, 1),
    turns[1], turns[2], turns[3], turns[4]))
if md_file:
    def p50(st):
        return 1000 * hq(buckets.get(st, {}), .5)
    cpu = [metric(open(f).read(), "process_cpu_seconds_total") for f in glob.glob(os.path.join(run, "metrics", "*.prom"))]
    rss = [metric(open(f).read(), "process_resident_memory_bytes") / 2**20 for f in glob.glob(os.path.join(run, "metrics", "*.prom"))]
    with open(md_file, "a") as md:
        md.write("| %s | %d | %.1f | %.1f | **%.2fx** | %.2f | %d/%d | %.2f | %.0f | %s |\n" % (
            md_label, len(exits), bound, mk, mk / bound, (max(exits) - last) if exits else float("nan"),
            ok, len(truth), 1000 * sum(cpu) / max(len(entries), 1), max(rss or [0]),
            " / ".join("%.0f" % p50(st) for st in ("ready", "claim", "robots", "politeness", "fetch", "fsync", "complete"))))
sys.exit(0 if ok == len(truth) else 1)
EOF
}

banner "ZooKeeper"
start_zk "$WIDE_DIR/zk" 200ms

banner "The wide web: $HOSTS hosts x $PAGES pages, latency median 150ms p99 1s; bound at $RATE/s per host"
start_bg testweb "$WIDE_DIR/testweb.log" bash -c 'exec "$0" --wide --hosts "$1" --pages "$2" --rate "$3" \
	--truth-file "$4" --bound-file "$5" --arrivals-file "$7" >"$6"' \
	"$BIN/testweb" "$HOSTS" "$PAGES" "$RATE" "$WIDE_DIR/truth.tsv" "$WIDE_DIR/bound.tsv" "$WIDE_DIR/seeds.txt" \
	"$WIDE_DIR/arrivals.tsv"
wait_until 120 "testweb to write its bound" test -s "$WIDE_DIR/bound.tsv" || die "testweb did not start; see $WIDE_DIR/testweb.log"
wait_until 30 "testweb to print its seeds" bash -c '[ "$(wc -l <"$0")" -ge "$1" ]' "$WIDE_DIR/seeds.txt" "$HOSTS" ||
	die "testweb printed no seeds"
BOUND=$(awk -F'\t' '$1=="bound_s"{print $2}' "$WIDE_DIR/bound.tsv")
say "politeness bound: ${BOUND}s ($(awk -F'\t' '$1=="requests"{print $2}' "$WIDE_DIR/bound.tsv") requests)"

# scrape DIR PORT...: every second, each worker's metrics into DIR/PORT.prom
# (the last good scrape stays), and every 10 s a line "unix_s goroutines
# heap_inuse_bytes open_fds rss_bytes next_gc_bytes" appended to
# DIR/PORT.series (the report's flatness line), until killed.
scrape() {
	local dir=$1 p n=0
	shift
	while :; do
		for p in "$@"; do
			curl -sf --max-time 1 "http://127.0.0.1:$p/metrics" -o "$dir/$p.tmp" && mv "$dir/$p.tmp" "$dir/$p.prom" &&
				[ $((n % 10)) = 0 ] && awk -v t="$(date +%s)" '
					$1=="go_goroutines"{g=$2} $1=="go_memstats_heap_inuse_bytes"{h=$2}
					$1=="process_open_fds"{f=$2} $1=="process_resident_memory_bytes"{r=$2}
					$1=="go_memstats_next_gc_bytes"{x=$2}
					END{print t, g, h, f, r, x}' "$dir/$p.prom" >>"$dir/$p.series"
		done
		n=$((n + 1))
		sleep 1
	done
}

failed=0
for n in $WORKERS; do
	CRAWL=wide-$n-$(date +%s)
	RUN=$WIDE_DIR/run-$n
	mkdir -p "$RUN/metrics"
	banner "Crawl $CRAWL with $n worker(s), per_host_rate_per_s=$RATE, --exit-when-done"
	printf '{"allow_private_networks": true, "per_host_rate_per_s": %s, "max_depth": 5}\n' "$RATE" >"$RUN/config.json"
	show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL" --config "$RUN/config.json" --seeds "$WIDE_DIR/seeds.txt" --log-level warn ||
		die "seeder failed"
	ports=()
	pids=()
	for i in $(seq 1 "$n"); do
		ports+=("$(free_port)") # first: free_port takes a python3 start, and the workers start together
	done
	t0=$(date +%s.%N)
	for i in $(seq 1 "$n"); do
		start_bg "crawler w$i" "$RUN/w$i.log" "$BIN/crawler" --zk "$ZK" --crawl "$CRAWL" --id "w$i" \
			--out "$RUN/w$i" --exit-when-done --metrics-addr "127.0.0.1:${ports[$((i - 1))]}"
		pids+=("$LAST_PID")
	done
	scrape "$RUN/metrics" "${ports[@]}" &
	scraper=$!
	track_pid "$scraper"
	: >"$RUN/exits.tsv"
	deadline=$(($(date +%s) + TIMEOUT)) stop_at=0
	while :; do
		left=0
		for i in "${!pids[@]}"; do
			[ -n "${pids[$i]}" ] || continue
			if alive "${pids[$i]}"; then
				left=1
			else
				printf 'w%s\t%s\n' "$((i + 1))" "$(date +%s.%N)" >>"$RUN/exits.tsv"
				pids[i]=
			fi
		done
		[ "$left" = 0 ] && break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			# TERM once (the workers stop gracefully), KILL 30 s later.
			sig=TERM
			if [ "$deadline" -gt "$stop_at" ]; then
				warn "run with $n worker(s) passed ${TIMEOUT}s: stopping it"
			else
				sig=KILL
			fi
			for pid in "${pids[@]}"; do [ -n "$pid" ] && signal_tree "$sig" "$pid"; done
			deadline=$(($(date +%s) + 30)) stop_at=$deadline
		fi
		sleep 0.05
	done
	kill "$scraper" 2>/dev/null
	wait "$scraper" 2>/dev/null
	python3 "$(pyscript wide_report)" "$WIDE_DIR/truth.tsv" "$BOUND" "$t0" "$RATE" "$RUN" \
		"$WIDE_DIR/arrivals.tsv" "$(date +%s.%N)" "${WIDE_MD:-}" "$HOSTS x $PAGES, ${RATE}/s, forceSync=$([ "${FORCE_SYNC:-false}" = true ] && echo yes || echo no)" >"$RUN/report.txt"
	rc=$?
	cat "$RUN/report.txt"
	[ "$rc" = 0 ] || { warn "run with $n worker(s) missed pages of the ground truth (see $RUN)"; failed=1; }
done
say "output in $(shorten "$WIDE_DIR")"
exit "$failed"
