#!/usr/bin/env bash
# replay-check.sh: crawls 20 pages of Debian's PostgreSQL 15 HTML manual
# (served by nginx on loopback, with their requisites at any depth), packages
# the crawl as a WACZ (crawlctl package, then --verify), stops nginx and
# replays each page in ReplayWeb.page in headless Chromium
# (worker.TestReplayCheckWACZ): the computed style of each page's first
# heading, no archive miss, and at most 1% of the viewport's pixels different
# from the live page. Needs make build and make deps (ReplayWeb.page in
# tools/replayweb, Chromium), nginx and postgresql-doc-15 (installed with
# apt-get when missing). Output: out/replay-check-STAMP/ (crawl, WACZ,
# test log; SHOTS=1 also keeps the screenshots). About 30 s. RECRAWL=1
# crawls with config recrawl on, then runs `crawlctl recrawl --now` and a
# second pass (conditional GETs: server-not-modified revisit records) and
# packages both passes, so each page replays from its latest capture, a
# revisit that ReplayWeb.page must resolve to the first pass's response.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

DOCS=/usr/share/doc/postgresql-doc-15/html
CRAWL=pgreplay
PAGES=${PAGES:-20}

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

printf '%sReplayWeb.page check%s: %s pages of the PostgreSQL 15 manual, crawled, packaged, replayed in Chromium\n' "$C_BOLD" "$C_OFF" "$PAGES"

banner "Check what the check needs"
pkgs=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || pkgs+=(nginx)
[ -f "$DOCS/index.html" ] || pkgs+=(postgresql-doc-15)
if [ "${#pkgs[@]}" -gt 0 ]; then
	say "installing with apt-get: ${pkgs[*]}"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" ||
		die "apt-get install ${pkgs[*]} failed"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
need_bins zkserver seeder crawler crawlctl
[ -f "$ZKC_ROOT/tools/replayweb/ui.js" ] && [ -f "$ZKC_ROOT/tools/replayweb/sw.js" ] ||
	die "ReplayWeb.page is missing from tools/replayweb: run 'make deps'"
command -v chromium >/dev/null || command -v google-chrome >/dev/null ||
	die "Chromium is missing: run 'make deps' (or apt-get install chromium)"
command -v go >/dev/null || die "go is needed to run the replay check (worker.TestReplayCheckWACZ)"
ok "nginx, $DOCS, ReplayWeb.page $(cat "$ZKC_ROOT/tools/replayweb/VERSION" 2>/dev/null), $(chromium --version 2>/dev/null || google-chrome --version)"

STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${OUT:-$ZKC_ROOT/out/replay-check-$STAMP}
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
NG=$(mktemp -d "${TMPDIR:-/tmp}/zkcrawl-replay.XXXXXX")
chmod 755 "$NG"
trap 'cleanup_all; rm -rf "$NG"' EXIT
trap 'echo; warn "interrupted: stopping everything"; exit 130' INT
trap 'exit 143' TERM

banner "Start a local ZooKeeper (bin/zkserver)"
start_zk "$OUT/zk" 2000ms
ok "ZooKeeper serving at $ZK"

banner "Serve $DOCS with nginx on a free loopback port"
PORT=$(free_port)
nginx_conf "$NG" "$DOCS" "$PORT"
start_bg nginx "$NG/nginx.out" "$NGINX" -p "$NG" -e "$NG/error.log" -c "$NG/nginx.conf"
NGINX_PID=$LAST_PID
BASE=http://127.0.0.1:$PORT/
wait_until 20 "nginx to answer on $BASE" python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1])" "${BASE}index.html" ||
	die "nginx did not start: $(cat "$NG/nginx.out" "$NG/error.log" 2>/dev/null)"
ok "nginx serving $BASE"

banner "Pick $PAGES pages (index.html and an even spread of the sorted file names) and crawl them with their requisites"
total=$(find "$DOCS" -maxdepth 1 -name '*.html' | wc -l)
{
	echo "${BASE}index.html"
	find "$DOCS" -maxdepth 1 -name '*.html' ! -name index.html -printf '%f\n' | LC_ALL=C sort |
		awk -v n="$((PAGES - 1))" -v t="$total" -v b="$BASE" 'NR % int(t / n) == 1 && c < n { print b $0; c++ }'
} >"$OUT/pages.txt"
[ "$(wc -l <"$OUT/pages.txt")" = "$PAGES" ] || die "picked $(wc -l <"$OUT/pages.txt") pages, want $PAGES"
sed 's/^/    /' "$OUT/pages.txt" | head -3
say "    ... ($PAGES in $OUT/pages.txt)"
recrawl=""
[ -n "${RECRAWL:-}" ] && recrawl=', "recrawl": true, "recrawl_interval_min_s": 86400'
cat >"$OUT/config.json" <<CONF
{ "allow_private_networks": true, "per_host_rate_per_s": 0, "per_host_max_in_flight": 8, "worker_concurrency": 16, "max_depth": 0, "sitemaps": false$recrawl }
CONF
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL" --config "$OUT/config.json" --log-level warn --seeds "$OUT/pages.txt" || die "seeder failed"
t0=$(date +%s.%N)
start_bg "crawler w1" "$OUT/w1.log" "$BIN/crawler" --zk "$ZK" --crawl "$CRAWL" --id w1 --out "$OUT/w1" --exit-when-done
WPID=$LAST_PID
wait_until 300 "the crawler to finish" bash -c "! kill -0 $WPID" || die "the crawl did not finish in 300 s; log $OUT/w1.log"
ok "crawled $(wc -l <"$OUT/w1/crawl.log") URLs (pages and requisites) in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"

dirs=("$OUT/w1")
if [ -n "${RECRAWL:-}" ]; then
	banner "RECRAWL=1: recrawl --now and a second pass (conditional GETs: revisit records, replayed below as the latest captures)"
	show "$BIN/crawlctl" --zk "$ZK" --crawl "$CRAWL" recrawl --now || die "crawlctl recrawl --now failed"
	start_bg "crawler w2" "$OUT/w2.log" "$BIN/crawler" --zk "$ZK" --crawl "$CRAWL" --id w2 --out "$OUT/w2" --exit-when-done
	WPID=$LAST_PID
	wait_until 300 "the second pass to finish" bash -c "! kill -0 $WPID" || die "the second pass did not finish in 300 s; log $OUT/w2.log"
	ok "second pass: $(wc -l <"$OUT/w2/crawl.log") URLs, $(grep -c '"revisit"' "$OUT/w2/crawl.log") of them revisits"
	dirs+=("$OUT/w2")
fi

banner "Package the crawl as a WACZ and verify it"
show "$BIN/crawlctl" --crawl "$CRAWL" package --out "$OUT/$CRAWL.wacz" "${dirs[@]}" || die "crawlctl package failed"
show "$BIN/crawlctl" package --verify "$OUT/$CRAWL.wacz" || die "crawlctl package --verify failed"

banner "Replay in ReplayWeb.page in headless Chromium, nginx stopped after the live pages are seen"
shots=""
if [ -n "${SHOTS:-}" ]; then shots=$OUT/shots; mkdir -p "$shots"; fi
(cd "$ZKC_ROOT" && ZKCRAWL_REPLAY_WACZ="$OUT/$CRAWL.wacz" ZKCRAWL_REPLAY_URLS="$OUT/pages.txt" \
	ZKCRAWL_REPLAY_SELECTOR="h1, h2, body" ZKCRAWL_REPLAY_STOP_LIVE="kill $NGINX_PID" ZKCRAWL_REPLAY_SHOTS="$shots" \
	go test -count=1 -v -timeout 10m -run '^TestReplayCheckWACZ$' ./worker/) >"$OUT/replay-check.log" 2>&1
rc=$?
grep -E 'replay of|REPLAY-CHECK|^(---|ok|FAIL)' "$OUT/replay-check.log" | sed 's/^ *//; s/^/    /'
[ "$rc" = 0 ] || die "the replay check failed (exit $rc); log $OUT/replay-check.log"
ok "every page replayed as it was served live (log $OUT/replay-check.log)"
