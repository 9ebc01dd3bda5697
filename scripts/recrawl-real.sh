#!/usr/bin/env bash
# scripts/recrawl-real.sh: a recrawl of an unchanged real site (make bench,
# part 8). It serves Debian's PostgreSQL 15 HTML manual with nginx on a
# free loopback port (nginx sends ETag and Last-Modified), crawls it once
# with config recrawl on (pass 1), makes every URL due with `crawlctl
# recrawl --now` and crawls it again (pass 2: conditional GETs), then starts
# a new crawl with `seeder --revisit-from` the first (pass 3). For each
# pass it prints the crawl-log lines, the share of revisit records, the
# WARC bytes and the response body bytes nginx sent (its access log), and
# checks with warcio.js (scripts/revisit-check.mjs) that every revisit
# record resolves to a response record of pass 1. Before pass 1 and after
# it, the same first pass runs with recrawl off (and once more on), for
# the first pass's URLs/s with recrawl on vs off. Targets (issue: recrawl):
# >= 99% revisits, WARC bytes <= 5% and body bytes <= 2% of pass 1's;
# first-pass URLs/s with recrawl on within 5% of off.
#
# Environment: RECRAWL_DIR (default ./out/recrawl-real-<timestamp>), BIN,
# FORCE_SYNC (true: ZooKeeper fsyncs before each ack, as in production),
# RECRAWL_MD (a file to append the markdown rows to, labelled
# RECRAWL_LABEL), WORKERS (default 3). Exits 1 when a target is missed or a
# revisit does not resolve.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

DOCS=/usr/share/doc/postgresql-doc-15/html
CRAWL=pgrecrawl
WORKERS=${WORKERS:-3}
CRAWL_TIMEOUT=600
WARCIO_DIR=$ZKC_ROOT/tools/warcio/node_modules/warcio

printf '%sRecrawl of an unchanged site%s: the PostgreSQL 15 manual via nginx, pass 1, recrawl --now, --revisit-from\n' "$C_BOLD" "$C_OFF"
banner "Check what it needs"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx is missing: run 'make demo-real' once (it installs nginx and postgresql-doc-15)"
[ -f "$DOCS/index.html" ] || die "$DOCS is missing: run 'make demo-real' once (it installs postgresql-doc-15)"
[ -d "$WARCIO_DIR" ] || die "warcio.js is missing from tools/warcio: run 'make deps'"
need_bins zkserver seeder crawler crawlctl

STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${RECRAWL_DIR:-$ZKC_ROOT/out/recrawl-real-$STAMP}
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
ZKC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zkcrawl-recrawl.XXXXXX")
chmod 755 "$ZKC_TMP"
trap 'cleanup_all; rm -rf "$ZKC_TMP"' EXIT
trap 'echo; warn "interrupted: stopping everything"; exit 130' INT
trap 'exit 143' TERM

banner "Start ZooKeeper and nginx"
start_zk "$OUT/zk" 2000ms
NG=$ZKC_TMP/nginx
PORT=$(free_port)
nginx_conf "$NG" "$DOCS" "$PORT"
start_bg nginx "$NG/nginx.out" "$NGINX" -p "$NG" -e "$NG/error.log" -c "$NG/nginx.conf"
START_URL=http://127.0.0.1:$PORT/index.html
wait_until 20 "nginx to answer on $START_URL" python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1])" "$START_URL" ||
	die "nginx did not start: $(cat "$NG/nginx.out" "$NG/error.log" 2>/dev/null)"
: >"$NG/access.log"
ok "ZooKeeper at $ZK, nginx at $START_URL"

cat >"$OUT/config.json" <<CONF
{ "allow_private_networks": true, "per_host_rate_per_s": 0, "per_host_max_in_flight": 8, "worker_concurrency": 16,
  "max_depth": -1, "scope": "same_host", "recrawl": true, "recrawl_interval_min_s": 86400 }
CONF

# crawl_pass NAME CRAWLNAME: runs WORKERS crawlers on CRAWLNAME with
# --exit-when-done into $OUT/NAME/w*, then records the pass's figures.
crawl_pass() {
	local name=$1 crawl=$2 i pids=() t0 t1
	mkdir -p "$OUT/$name"
	t0=$(date +%s.%N)
	for i in $(seq 1 "$WORKERS"); do
		start_bg "crawler $name w$i" "$OUT/$name/w$i.log" "$BIN/crawler" --zk "$ZK" --crawl "$crawl" --id "w$i" \
			--out "$OUT/$name/w$i" --exit-when-done
		pids+=("$LAST_PID")
	done
	local p
	for p in "${pids[@]}"; do
		wait_until "$CRAWL_TIMEOUT" "crawler $p of $name to exit" bash -c "! kill -0 $p 2>/dev/null" ||
			die "$name did not finish within ${CRAWL_TIMEOUT}s; logs in $OUT/$name"
	done
	t1=$(date +%s.%N)
	cp "$NG/access.log" "$OUT/$name/access.log"
	: >"$NG/access.log"
	python3 - "$OUT/$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')" <<'PY' >"$OUT/$name/figures.json"
import glob, json, os, sys
d, secs = sys.argv[1], float(sys.argv[2])
lines = revisits = 0
profiles = {}
for f in glob.glob(os.path.join(d, "w*", "crawl.log")):
    for l in open(f):
        e = json.loads(l)
        lines += 1
        r = e.get("revisit")
        if r:
            revisits += 1
            profiles[r] = profiles.get(r, 0) + 1
warc = sum(os.path.getsize(f) for f in glob.glob(os.path.join(d, "w*", "*.warc.gz")))
body = 0
for l in open(os.path.join(d, "access.log")):
    parts = l.split('"')
    if len(parts) > 2:
        f = parts[2].split()
        if len(f) >= 2 and f[1].isdigit():
            body += int(f[1])
print(json.dumps({"pass": os.path.basename(d), "seconds": secs, "lines": lines, "revisits": revisits,
                  "profiles": profiles, "warc_bytes": warc, "body_bytes": body}))
PY
	ok "$name: $(cat "$OUT/$name/figures.json")"
}

sed 's/"recrawl": true/"recrawl": false/' "$OUT/config.json" >"$OUT/config-off.json"

banner "First pass with recrawl off and on, alternately, twice each (pages/s of the first pass)"
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL-off1" --config "$OUT/config-off.json" --log-level warn "$START_URL" || die "seeder failed"
crawl_pass off1 "$CRAWL-off1"
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL" --config "$OUT/config.json" --log-level warn "$START_URL" || die "seeder failed"
crawl_pass pass1 "$CRAWL"
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL-off2" --config "$OUT/config-off.json" --log-level warn "$START_URL" || die "seeder failed"
crawl_pass off2 "$CRAWL-off2"
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL-on2" --config "$OUT/config.json" --log-level warn "$START_URL" || die "seeder failed"
crawl_pass on2 "$CRAWL-on2"

banner "Pass 2: crawlctl recrawl --now, then the same crawl again (conditional GETs)"
show "$BIN/crawlctl" --zk "$ZK" --crawl "$CRAWL" recrawl --now || die "crawlctl recrawl --now failed"
crawl_pass pass2 "$CRAWL"

banner "Pass 3: a new crawl with seeder --revisit-from the first"
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL-2" --config "$OUT/config.json" --log-level warn --revisit-from "$CRAWL" ||
	die "seeder --revisit-from failed"
crawl_pass pass3 "$CRAWL-2"

banner "Check with warcio.js that every revisit resolves to a response record of pass 1"
rc=0
for p in pass2 pass3; do
	if node "$ZKC_ROOT/scripts/revisit-check.mjs" "$WARCIO_DIR" "$OUT"/pass1/w*/*.warc.gz "$OUT/$p"/w*/*.warc.gz >"$OUT/$p/revisit-check.json"; then
		ok "$p: $(cat "$OUT/$p/revisit-check.json")"
	else
		warn "$p: revisits that do not resolve: $(cat "$OUT/$p/revisit-check.json")"
		rc=1
	fi
done

banner "Summary"
python3 - "$OUT" "${RECRAWL_MD:-}" "${RECRAWL_LABEL:-forceSync=${FORCE_SYNC:-false}}" <<'PY' || rc=1
import json, os, sys
out, md, label = sys.argv[1], sys.argv[2], sys.argv[3]
p = {n: json.load(open(os.path.join(out, n, "figures.json"))) for n in ("off1", "pass1", "off2", "on2", "pass2", "pass3")}
ok = True
rows = []
rate = lambda n: p[n]["lines"] / p[n]["seconds"]
off, on = max(rate("off1"), rate("off2")), max(rate("pass1"), rate("on2"))
first_met = on >= 0.95 * off
ok = ok and first_met
print(f"first pass, best of two: recrawl off {off:.0f} URLs/s, on {on:.0f} URLs/s = {on/off:.2f}x ({'within 5%' if first_met else 'NOT within 5%'})")
for n in ("pass2", "pass3"):
    f = p[n]
    share = f["revisits"] / f["lines"] if f["lines"] else 0
    warc = f["warc_bytes"] / p["pass1"]["warc_bytes"]
    body = f["body_bytes"] / p["pass1"]["body_bytes"]
    met = share >= 0.99 and warc <= 0.05 and body <= 0.02
    ok = ok and met
    what = "recrawl --now" if n == "pass2" else "--revisit-from"
    rows.append(f"| {label} | {what} | {f['lines']} | {100*share:.1f}% ({', '.join(f'{k} {v}' for k, v in sorted(f['profiles'].items()))}) "
                f"| {f['warc_bytes']:,} B = {100*warc:.2f}% | {f['body_bytes']:,} B = {100*body:.2f}% | {f['seconds']:.1f} s | {'yes' if met else 'NO'} |")
print(f"pass 1: {p['pass1']['lines']} lines, {p['pass1']['warc_bytes']:,} WARC bytes, {p['pass1']['body_bytes']:,} body bytes, {p['pass1']['seconds']:.1f} s")
print("| run | pass | crawl-log lines | revisits | WARC bytes (of pass 1) | body bytes sent (of pass 1) | time | met |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(r)
rows.append(f"| {label} | first pass, recrawl on / off (best of two each) | {p['pass1']['lines']} | - | - | - | {on:.0f} / {off:.0f} URLs/s = {on/off:.2f}x | {'yes' if first_met else 'NO'} |")
print(rows[-1])
if md:
    with open(md, "a") as fh:
        for r in rows:
            fh.write(r + "\n")
sys.exit(0 if ok else 1)
PY
exit "$rc"
