#!/usr/bin/env bash
# scripts/render-check.sh: how well a crawl with browser rendering captures a
# single-page app, scored against a ground truth found by rendering it live.
#
# It starts a ZooKeeper (bin/zkserver), the SPA fixture (bin/testweb --spa:
# an HTML shell whose script renders content and links from JSON, images
# lazy-loaded on scroll, a history.pushState route, web fonts and images on
# a second host) whose truth testweb renders in Chromium (--truth), seeds a
# crawl with config {"render": RENDER, "page_requisites": true,
# "per_host_rate_per_s": RATE, ...} and runs WORKERS bin/crawler
# --exit-when-done, sampling their RSS and that of the browsers they start,
# then scores:
#
#   pages        truth pages with a response record in the WARCs / truth pages
#                (the pages exist only after script: target 100%)
#   resources    truth resources (everything a live render requested: JSON,
#                script, style sheet, fonts, images incl. the lazy ones) with a
#                response or revisit record / truth resources (target >= 98%)
#   violations   pairs of consecutive requests at one host:port closer than
#                1/RATE s - JITTER_MS, at the server, from the crawl's first
#                request to the workers' exit (robots.txt, pages and every
#                subrequest; target 0); each is listed with the two URLs'
#                fetch starts in the crawl log, which tells a scheduling
#                fault from a request that reached the server late. RATE=0
#                (no rate) measures render pages/s unthrottled; no
#                violations are counted then
#   worker RSS   peak VmRSS of the largest worker (/proc, every 0.5 s)
#   browser RSS  peak of the summed VmRSS (and PSS, which does not count
#                shared pages twice) of the chromium processes descending
#                from the workers, and the most browsers seen at once
#   render/s     crawl-log lines with "render": true / the seconds from the
#                first one's start (ts - duration_ms) to the last one's end
#   replay       the crawl packaged as a WACZ (crawlctl package) and each
#                captured page replayed in ReplayWeb.page in headless Chromium
#                against its live render (worker.TestReplayCheckWACZ, as
#                scripts/replay-check.sh runs it): archive misses and the
#                share of the viewport's pixels that differ (target: no miss,
#                <= 1%); a page never captured cannot replay and counts as
#                not replayed (screenshots of both in OUT/shots)
#
# and prints a table (also written to OUT/table.md, figures in
# OUT/score.json). RENDER=never scores an HTML-only crawl (the shell, its
# script and style sheet only) against the same truth.
#
# Needs make build (zkserver seeder crawler crawlctl testweb), Chromium
# (make deps), python3, warcio.js (tools/warcio or $ZKCRAWL_WARCIO) and,
# for the replay, ReplayWeb.page (tools/replayweb or $ZKCRAWL_REPLAYWEB) and
# go. Environment: PAGES (20), WORKERS (1), RATE (4 requests/s per host),
# JITTER_MS (25, testenv.SPADefaultJitter), RENDER (always), REPLAY (1; 0
# skips the replay), FORCE_SYNC (true: ZooKeeper fsyncs before each ack,
# as in production; default false), SEED_ALL (1: seed every URL of the truth, pages and
# resources, a capture by list without rendering: the upper bound, which
# checks that the fixture replays and that this scoring counts it right),
# TIMEOUT (300 s for the crawl), OUT (default
# ./out/render-check-<timestamp>), RENDER_MD (a file to append the table's
# row to: scripts/bench.sh's). Exits 1 when a target is missed (2 when
# Chromium is missing), 0 when all are met.
set -uo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

PAGES=${PAGES:-20}
WORKERS=${WORKERS:-1}
RATE=${RATE:-4}
JITTER_MS=${JITTER_MS:-25}
RENDER=${RENDER:-always}
REPLAY=${REPLAY:-1}
TIMEOUT=${TIMEOUT:-300}
CRAWL=spa

printf '%sRender check%s: the SPA fixture (%s pages) crawled with render=%s by %s worker(s) at %s/s per host, scored against its live render\n' \
	"$C_BOLD" "$C_OFF" "$PAGES" "$RENDER" "$WORKERS" "$RATE"

banner "Check what the check needs"
need_bins zkserver seeder crawler crawlctl testweb
BROWSER=$(command -v chromium || command -v chromium-browser || command -v google-chrome || command -v google-chrome-stable) || {
	printf '%sSKIPPED:%s render check NOT run: Chromium is missing: run make deps (or apt-get install chromium)\n' "$C_YELLOW" "$C_OFF" >&2
	exit 2
}
WARCIO=${ZKCRAWL_WARCIO:-$ZKC_ROOT/tools/warcio/node_modules/.bin/warcio}
[ -x "$WARCIO" ] || die "warcio.js is missing ($WARCIO): run 'make deps' or set ZKCRAWL_WARCIO"
REPLAYWEB=${ZKCRAWL_REPLAYWEB:-$ZKC_ROOT/tools/replayweb}
if [ "$REPLAY" = 1 ]; then
	if [ ! -f "$REPLAYWEB/ui.js" ] || [ ! -f "$REPLAYWEB/sw.js" ]; then
		warn "ReplayWeb.page is missing from $REPLAYWEB (make deps, or set ZKCRAWL_REPLAYWEB): the replay is NOT checked"
		REPLAY=0
	elif ! command -v go >/dev/null; then
		warn "go is missing: the replay (worker.TestReplayCheckWACZ) is NOT checked"
		REPLAY=0
	fi
fi
ok "$("$BROWSER" --version 2>/dev/null), warcio $WARCIO$([ "$REPLAY" = 1 ] && echo ", ReplayWeb.page $(cat "$REPLAYWEB/VERSION" 2>/dev/null)")"

STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${OUT:-$ZKC_ROOT/out/render-check-$STAMP}
[ -z "$(ls -A "$OUT" 2>/dev/null)" ] ||
	die "OUT=$OUT is not empty (a run's output: workers would append to its crawl logs): give a new directory or remove it"
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
trap 'cleanup_all' EXIT
trap 'echo; warn "interrupted: stopping everything"; exit 130' INT
trap 'exit 143' TERM

banner "Start a local ZooKeeper (bin/zkserver)"
start_zk "$OUT/zk" 2000ms
ok "ZooKeeper serving at $ZK"

banner "Serve the SPA fixture and render its ground truth in Chromium (bin/testweb --spa --truth)"
start_bg testweb "$OUT/testweb.log" bash -c 'exec "$0" --spa --pages "$1" --truth "$2" --arrivals-file "$3" >"$4"' \
	"$BIN/testweb" "$PAGES" "$OUT/truth.json" "$OUT/arrivals.tsv" "$OUT/seeds.txt"
WEB_PID=$LAST_PID
wait_until 600 "testweb to render the truth and print its seed (log $OUT/testweb.log)" \
	bash -c 'test -s "$0" || ! kill -0 "$1"' "$OUT/seeds.txt" "$WEB_PID" && test -s "$OUT/seeds.txt" ||
	die "testweb did not start: $(tail -5 "$OUT/testweb.log")"
SEED=$(head -1 "$OUT/seeds.txt")
read -r TRUTH_PAGES TRUTH_RES < <(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(len(t["pages"]), len(t["resources"]))' "$OUT/truth.json")
ok "seed $SEED; truth: $TRUTH_PAGES pages, $TRUTH_RES resources ($OUT/truth.json)"

banner "Seed the crawl and run $WORKERS worker(s) with --exit-when-done"
write_config() {
	local render=""
	[ -n "$1" ] && render="\"render\": \"$1\", "
	cat >"$OUT/config.json" <<CONF
{ ${render}"page_requisites": true, "allow_private_networks": true, "per_host_rate_per_s": $RATE, "per_host_max_in_flight": 1, "max_depth": 5, "sitemaps": false }
CONF
}
write_config "$RENDER"
RENDERED=$RENDER
if [ -n "${SEED_ALL:-}" ]; then
	python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print("\n".join([t["seed"]] + t["pages"] + t["resources"]))' "$OUT/truth.json" >"$OUT/seeds.txt"
	SEEDED_BY_LIST=1
	say "SEED_ALL=1: seeding all $(wc -l <"$OUT/seeds.txt") URLs of the truth (a capture by list: checks the fixture's replay and this scoring, not a renderer)"
fi
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL" --config "$OUT/config.json" --log-level warn --seeds "$OUT/seeds.txt" ||
	die "seeder failed (see above)"
[ -n "${SEEDED_BY_LIST:-}" ] && RENDERED="$RENDERED, all truth URLs seeded"
T0=$(date +%s.%N)
pids=() dirs=()
for i in $(seq 1 "$WORKERS"); do
	start_bg "crawler w$i" "$OUT/w$i.log" "$BIN/crawler" --zk "$ZK" --crawl "$CRAWL" --id "w$i" --out "$OUT/w$i" --exit-when-done
	pids+=("$LAST_PID") dirs+=("$OUT/w$i")
done
python3 - "$OUT/mem.json" "${pids[@]}" >"$OUT/sampler.log" 2>&1 <<'PY' &
# Samples, every 0.5 s until every worker exits, each worker's VmRSS and
# the chromium processes descending from the workers (summed VmRSS and
# PSS, and how many browsers: chromium processes whose parent is not one).
import json, os, sys, time
out, workers = sys.argv[1], [int(p) for p in sys.argv[2:]]
def field(pid, name):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])  # kB
    except OSError:
        pass
    return 0
def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
peak = {"worker_rss_kb": 0, "browser_rss_kb": 0, "browser_pss_kb": 0, "browsers": 0, "browser_procs": 0, "samples": 0}
while any(os.path.exists(f"/proc/{p}") for p in workers):
    parent, comm = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
            comm[int(d)] = s[s.index("(") + 1:s.rindex(")")]
            parent[int(d)] = int(s[s.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
    def under_worker(p):
        for _ in range(64):
            p = parent.get(p, 0)
            if p in workers:
                return True
            if p <= 1:
                return False
        return False
    chrome = [p for p, c in comm.items() if c.startswith("chrom") and under_worker(p)]
    browsers = [p for p in chrome if not comm.get(parent.get(p, 0), "").startswith("chrom")]
    peak["worker_rss_kb"] = max([peak["worker_rss_kb"]] + [field(p, "VmHWM") for p in workers])
    peak["browser_rss_kb"] = max(peak["browser_rss_kb"], sum(field(p, "VmRSS") for p in chrome))
    peak["browser_pss_kb"] = max(peak["browser_pss_kb"], sum(pss(p) for p in chrome))
    peak["browsers"] = max(peak["browsers"], len(browsers))
    peak["browser_procs"] = max(peak["browser_procs"], len(chrome))
    peak["samples"] += 1
    with open(out + ".tmp", "w") as f:
        json.dump(peak, f)
    os.replace(out + ".tmp", out)
    time.sleep(0.5)
PY
SAMPLER=$!
for pid in "${pids[@]}"; do
	wait_until "$TIMEOUT" "worker pid $pid to finish (--exit-when-done)" bash -c "! kill -0 $pid" ||
		die "the crawl did not finish in $TIMEOUT s; logs $OUT/w*.log"
done
T1=$(date +%s.%N)
wait "$SAMPLER" 2>/dev/null
cp "$OUT/arrivals.tsv" "$OUT/arrivals-crawl.tsv" # the replay's live renders come later
ok "crawled $(cat "$OUT"/w*/crawl.log | wc -l) URLs in $(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.1f", b-a}') s (render=$RENDERED)"

banner "Index the WARCs with warcio.js"
"$WARCIO" index "$OUT"/w*/*.warc.gz -f warc-type,warc-target-uri,http:status >"$OUT/warc-index.jsonl" 2>"$OUT/warcio.err" ||
	die "warcio index failed: $(head -3 "$OUT/warcio.err")"
ok "$(wc -l <"$OUT/warc-index.jsonl") records"

REPLAY_LOG=""
if [ "$REPLAY" = 1 ]; then
	banner "Package the crawl as a WACZ and replay each captured page in ReplayWeb.page against its live render"
	show "$BIN/crawlctl" --crawl "$CRAWL" package --out "$OUT/$CRAWL.wacz" "${dirs[@]}" || die "crawlctl package failed"
	python3 - "$OUT/truth.json" "$OUT/warc-index.jsonl" >"$OUT/replay-urls.txt" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
got = set()
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get("warc-type") == "response" and str(r.get("http:status")) == "200":
        got.add(r["warc-target-uri"])
for u in [t["seed"]] + t["pages"]:
    if u in got:
        print(u)
PY
	say "replaying $(wc -l <"$OUT/replay-urls.txt") captured pages (of $((TRUTH_PAGES + 1)) with the seed)"
	REPLAY_LOG=$OUT/replay-check.log
	if [ -s "$OUT/replay-urls.txt" ]; then
		mkdir -p "$OUT/shots"
		(cd "$ZKC_ROOT" && ZKCRAWL_REPLAY_WACZ="$OUT/$CRAWL.wacz" ZKCRAWL_REPLAY_URLS="$OUT/replay-urls.txt" \
			ZKCRAWL_REPLAYWEB="$REPLAYWEB" ZKCRAWL_REPLAY_SELECTOR="#app[data-ready] h1" ZKCRAWL_REPLAY_STOP_LIVE="kill $WEB_PID" \
			ZKCRAWL_REPLAY_SHOTS="$OUT/shots" go test -count=1 -v -timeout 15m -run '^TestReplayCheckWACZ$' ./worker/) >"$REPLAY_LOG" 2>&1
		grep -E 'REPLAY-CHECK|^(--- |ok|FAIL)' "$REPLAY_LOG" | sed 's/^ *//; s/^/    /'
	else
		: >"$REPLAY_LOG"
	fi
fi

banner "Score"
ZK_LABEL="forceSync=$([ "${FORCE_SYNC:-false}" = true ] && echo yes || echo no)"
python3 - "$OUT" "$RATE" "$JITTER_MS" "$T0" "$T1" "$RENDERED" "$WORKERS" "$REPLAY_LOG" "$ZK_LABEL" >"$OUT/table.md" <<'PY'
import json, re, sys
from datetime import datetime
out, rate, jitter_ms, t0, t1, rendered, workers, replay_log, zk = sys.argv[1:10]
rate, jitter, t0, t1 = float(rate), float(jitter_ms) / 1000, float(t0), float(t1)
truth = json.load(open(f"{out}/truth.json"))
got = set()
for line in open(f"{out}/warc-index.jsonl"):
    r = json.loads(line)
    if (r.get("warc-type") == "response" and str(r.get("http:status")).startswith("2")) or r.get("warc-type") == "revisit":
        got.add(r["warc-target-uri"])
pages = [u for u in truth["pages"] if u in got]
res = [u for u in truth["resources"] if u in got]
missing_pages = sorted(set(truth["pages"]) - set(pages))
missing_res = sorted(set(truth["resources"]) - set(res))
# Politeness at the server: consecutive arrivals per host:port, crawl window only.
arr = {}
for line in open(f"{out}/arrivals-crawl.tsv"):
    f = line.rstrip("\n").split("\t")
    ts = float(f[0])
    if t0 <= ts <= t1:
        arr.setdefault(f[1], []).append((ts, f[2]))
interval = 1 / rate if rate > 0 else 0
viol, gaps = [], []
for key, xs in arr.items():
    xs.sort()
    for (a, pa), (b, pb) in zip(xs, xs[1:]):
        gaps.append(b - a)
        if b - a < interval - jitter:
            viol.append({"key": key, "first": pa, "next": pb, "gap_ms": round((b - a) * 1000, 1)})
requests = sum(len(xs) for xs in arr.values())
# Each violation beside what the crawl logs say of the same two URLs: the
# fetch starts (ts - duration_ms, ms precision; a rendered page's own line
# is left out, its ts is the render's end), which tells a scheduling fault
# (starts too close) from a request that reached the server late (its fetch
# took long before the handler ran).
def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
import glob
fetch = {}
for log in glob.glob(f"{out}/w*/crawl.log"):
    for line in open(log):
        e = json.loads(line)
        if e.get("render") is not True:
            path = "/" + e["url"].split("/", 3)[3] if e["url"].count("/") >= 3 else "/"
            fetch[(e["url"].split("/")[2], path)] = (ts(e["ts"]) - e.get("duration_ms", 0) / 1000, e.get("duration_ms", 0))
for v in viol:
    a, b = fetch.get((v["key"], v["first"])), fetch.get((v["key"], v["next"]))
    if a and b:
        v["log_start_gap_ms"], v["first_fetch_ms"] = round((b[0] - a[0]) * 1000), a[1]
# Render throughput from the crawl logs.
rendered_lines, starts, ends = 0, [], []
for log in glob.glob(f"{out}/w*/crawl.log"):
    for line in open(log):
        e = json.loads(line)
        if e.get("render") is True:
            rendered_lines += 1
            end = ts(e["ts"])
            ends.append(end)
            starts.append(end - e.get("duration_ms", 0) / 1000)
render_s = (max(ends) - min(starts)) if ends else 0
mem = {}
try:
    mem = json.load(open(f"{out}/mem.json"))
except OSError:
    pass
# Replay, from worker.TestReplayCheckWACZ's log.
replay = {"checked": bool(replay_log), "pages": 0, "misses": 0, "worst_pct": None, "failed_pages": []}
if replay_log:
    text = open(replay_log).read()
    for m in re.finditer(r"replay of (\S+): (\d+) requests answered from the archive, (\d+) misses, ([0-9.]+)% of pixels differ", text):
        replay["pages"] += 1
        replay["misses"] += int(m.group(3))
        replay["worst_pct"] = max(replay["worst_pct"] or 0, float(m.group(4)))
    replay["failed_pages"] = sorted(set(re.findall(r"replay of (\S+): (?!\d+ requests answered)", text)))
    replay["fatal"] = re.findall(r"^\s+\S+\.go:\d+: (?!replay of|REPLAY-CHECK).*$", text, re.M)[:3]
score = {
    "render": rendered, "zookeeper": zk, "workers": int(workers), "rate_per_s": rate, "crawl_s": round(t1 - t0, 1),
    "truth_pages": len(truth["pages"]), "pages": len(pages), "missing_pages": missing_pages,
    "truth_resources": len(truth["resources"]), "resources": len(res), "missing_resources": missing_res,
    "requests": requests, "violations": len(viol), "violation_list": viol[:20], "jitter_ms": float(jitter_ms),
    "min_gap_ms": round(min(gaps) * 1000, 1) if gaps else None,
    "rendered_pages": rendered_lines, "render_s": round(render_s, 2),
    "render_pages_per_s": round(rendered_lines / render_s, 2) if render_s > 0 else None,
    "mem": mem, "replay": replay,
}
json.dump(score, open(f"{out}/score.json", "w"), indent=1)
pct = lambda a, b: f"{100 * a / b:.1f}%" if b else "-"
mb = lambda kb: f"{kb / 1024:.0f}" if kb else "-"
rp = replay
replayed = f"{rp['pages']} / {len(truth['pages']) + 1}, {rp['misses']} misses, worst {rp['worst_pct']:.2f}% pixels" if rp["checked"] and rp["worst_pct"] is not None else ("not checked" if not rp["checked"] else f"0 / {len(truth['pages']) + 1}")
row = (f"| {rendered} | {zk} | {workers} | {rate:g} | {len(pages)} / {len(truth['pages'])} ({pct(len(pages), len(truth['pages']))}) "
       f"| {len(res)} / {len(truth['resources'])} ({pct(len(res), len(truth['resources']))}) "
       f"| {len(viol)} of {requests} (min gap {score['min_gap_ms']} ms, interval {interval * 1000:.0f} ms) "
       f"| {mb(mem.get('worker_rss_kb', 0))} | {mb(mem.get('browser_rss_kb', 0))} / {mb(mem.get('browser_pss_kb', 0))} ({mem.get('browsers', 0)} browsers) "
       f"| {score['render_pages_per_s'] if score['render_pages_per_s'] is not None else '-'} ({rendered_lines} in {render_s:.1f} s) "
       f"| {replayed} | {score['crawl_s']} |")
print("| render | ZooKeeper | workers | rate per host, /s | pages (target 100%) | resources (target >= 98%) | politeness violations at the server (target 0) "
      "| worker RSS peak, MB | browser RSS / PSS peak, MB | render pages/s | replay (captured pages / pages, misses, pixels) | crawl, s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
print(row)
ok = (len(pages) == len(truth["pages"]) and len(res) >= 0.98 * len(truth["resources"]) and not viol
      and (not rp["checked"] or (rp["pages"] == len(truth["pages"]) + 1 and rp["misses"] == 0 and (rp["worst_pct"] or 0) <= 1 and not rp["failed_pages"])))
sys.exit(0 if ok else 3)
PY
rc=$?
cat "$OUT/table.md"
[ -n "${RENDER_MD:-}" ] && tail -1 "$OUT/table.md" >>"$RENDER_MD"
python3 - "$OUT/score.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for k in ("missing_pages", "missing_resources"):
    if s[k]:
        print(f"  {k.replace('_', ' ')} ({len(s[k])}): " + " ".join(s[k][:8]) + (" ..." if len(s[k]) > 8 else ""))
for v in s["violation_list"][:8]:
    why = f"; in the crawl log their fetches started {v['log_start_gap_ms']} ms apart, the first took {v['first_fetch_ms']} ms" if "log_start_gap_ms" in v else ""
    print(f"  violation at {v['key']}: {v['first']} then {v['next']} {v['gap_ms']} ms apart at the server{why}")
if s["replay"].get("failed_pages"):
    print("  replay failed for: " + " ".join(s["replay"]["failed_pages"][:8]))
for f in s["replay"].get("fatal", []):
    print("  replay check: " + f.strip())
PY
case $rc in
0) ok "every target met (figures in $OUT/score.json)" ;;
3) warn "a target was missed (render=$RENDERED; figures in $OUT/score.json, logs in $OUT)"; exit 1 ;;
*) die "scoring failed (exit $rc)" ;;
esac
