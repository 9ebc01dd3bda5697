#!/usr/bin/env bash
# scripts/demo-real.sh: zkcrawl against a real site, compared with wget
# (`make demo-real` runs it after `make deps build`).
#
# It serves Debian's PostgreSQL 15 HTML manual (/usr/share/doc/
# postgresql-doc-15/html, about 1,170 pages) with nginx on a free loopback
# port, mirrors it with `wget -r -p -np -nv --warc-file` (pages, their
# requisites and a WARC file, as zkcrawl's default config does) and times that, then crawls the same
# start URL with zkcrawl (a local ZooKeeper, bin/seeder, 3 bin/crawler
# workers with --exit-when-done) and times seed-to-done. It then checks that
# every HTML page wget fetched appears exactly once in the crawl logs with
# status 200 and has exactly one WARC response record, and prints a summary
# table. It exits 1 when a page wget fetched is missing from the crawl.
#
# nginx, postgresql-doc-15 and wget are installed with apt-get when missing
# (with sudo when not root). nginx runs in the foreground of its own process
# group with its config, pid file and logs in a temporary folder; wget's
# mirror lives there too, and the folder is removed on exit (KEEP_TMP=1
# keeps it). The crawl's WARC files, crawl logs and process logs stay in
# REAL_DIR (default ./out/demo-real-<timestamp>). Every process it starts is
# stopped on exit, Ctrl-C or SIGTERM; every wait is bounded.
#
# Environment: REAL_DIR, KEEP_TMP, BIN (default ./bin), NO_COLOR, FORCE_SYNC
# (true: ZooKeeper fsyncs before each ack, as in production), REAL_MD (a
# file to append the summary's markdown table row to, labelled REAL_LABEL:
# scripts/bench.sh's).
set -uo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

DOCS=/usr/share/doc/postgresql-doc-15/html
CRAWL=pgdocs
WORKERS=3
CRAWL_TIMEOUT=600 # seconds: the crawl must finish within this bound

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# install_missing: apt-get install the Debian packages this demo needs.
install_missing() {
	local pkgs=()
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || pkgs+=(nginx)
	[ -f "$DOCS/index.html" ] || pkgs+=(postgresql-doc-15)
	command -v wget >/dev/null || pkgs+=(wget)
	command -v python3 >/dev/null || pkgs+=(python3)
	[ "${#pkgs[@]}" -gt 0 ] || return 0
	say "installing with apt-get: ${pkgs[*]}"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" ||
		die "apt-get install ${pkgs[*]} failed"
}

NGINX=$(command -v nginx || echo /usr/sbin/nginx)

printf '%szkcrawl vs wget%s on the PostgreSQL 15 manual, served by nginx on loopback\n' "$C_BOLD" "$C_OFF"

banner "Check and install what the demo needs (nginx, postgresql-doc-15, wget)"
install_missing
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
need_bins zkserver seeder crawler
[ -f "$DOCS/index.html" ] || die "$DOCS/index.html is missing after installing postgresql-doc-15"
ok "nginx: $("$NGINX" -v 2>&1 | sed 's/.*: //'), docs: $(find "$DOCS" -name '*.html' | wc -l) HTML files in $DOCS, $(wget --version | head -1)"

STAMP=$(date +%Y%m%d-%H%M%S)
REAL_DIR=${REAL_DIR:-$ZKC_ROOT/out/demo-real-$STAMP}
mkdir -p "$REAL_DIR" || die "cannot create $REAL_DIR"
REAL_DIR=$(cd "$REAL_DIR" && pwd)
ZKC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zkcrawl-real.XXXXXX")
chmod 755 "$ZKC_TMP" # nginx workers may run as another user
remove_tmp() {
	if [ -n "${KEEP_TMP:-}" ]; then
		say "kept the temporary folder $ZKC_TMP (nginx logs, wget mirror)"
	else
		rm -rf "$ZKC_TMP"
	fi
}
trap 'cleanup_all; remove_tmp' EXIT
trap 'echo; warn "interrupted: stopping everything"; exit 130' INT
trap 'exit 143' TERM
say "crawl output: $(shorten "$REAL_DIR"); nginx and the wget mirror: $ZKC_TMP"

banner "Start a local ZooKeeper (bin/zkserver)"
start_zk "$REAL_DIR/zk" 2000ms
ok "ZooKeeper serving at $ZK"

banner "Serve $DOCS with nginx on a free loopback port"
PORT=$(free_port)
NG=$ZKC_TMP/nginx
mkdir -p "$NG"
nginx_conf "$NG" "$DOCS" "$PORT"
start_bg nginx "$NG/nginx.out" "$NGINX" -p "$NG" -e "$NG/error.log" -c "$NG/nginx.conf"
BASE=http://127.0.0.1:$PORT/
START_URL=${BASE}index.html
if ! wait_until 20 "nginx to answer on $START_URL" wget -q -O /dev/null "$START_URL"; then
	cat "$NG/nginx.out" "$NG/error.log" >&2 2>/dev/null
	die "nginx did not start"
fi
ok "nginx serving $START_URL (config $NG/nginx.conf)"

# now_s: seconds since the epoch with nanoseconds.
now_s() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }

banner "Mirror it with wget -r -p -np -nv --warc-file (pages, their requisites, a WARC file)"
mkdir -p "$ZKC_TMP/wget"
export WGET_WARC=$ZKC_TMP/wget/pgdocs.warc.gz
t0=$(now_s)
(cd "$ZKC_TMP/wget" && wget -r -p -np -nv --warc-file=pgdocs "$START_URL" >"$ZKC_TMP/wget.log" 2>&1)
wget_rc=$?
t1=$(now_s)
WGET_S=$(secs "$t0" "$t1")
MIRROR=$ZKC_TMP/wget/127.0.0.1:$PORT
[ -d "$MIRROR" ] || die "wget mirrored nothing (exit $wget_rc); log: $ZKC_TMP/wget.log"
# wget exits 8 when some URL answered an HTTP error: robots.txt (404 here)
# and the manual's <link rev="made" href="pgsql-docs@lists.postgresql.org">,
# a relative link to a page that does not exist (zkcrawl follows only
# <a>, <area> and <iframe> links). The pages it did fetch still count.
if [ "$wget_rc" != 0 ]; then
	say "wget exited $wget_rc (8: some URLs answered an HTTP error):"
	grep -B1 'ERROR [0-9]' "$ZKC_TMP/wget.log" | grep -o 'http://[^ ]*[^:]' | sort -u | head -5 | sed 's/^/    /'
fi
ok "wget: $(find "$MIRROR" -name '*.html' | wc -l) HTML pages, $(find "$MIRROR" -type f | wc -l) files in ${WGET_S}s"

banner "Crawl it with zkcrawl: seeder + $WORKERS workers (--exit-when-done)"
cat >"$REAL_DIR/config.json" <<EOF
{
  "allow_private_networks": true,
  "per_host_rate_per_s": 0,
  "per_host_max_in_flight": 8,
  "worker_concurrency": 16,
  "max_depth": -1,
  "scope": "same_host"
}
EOF
say "config.json:"
sed 's/^/    /' "$REAL_DIR/config.json"
t0=$(now_s)
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL" --config "$REAL_DIR/config.json" --log-level warn "$START_URL" ||
	die "seeder failed"
WPIDS=()
for i in $(seq 1 "$WORKERS"); do
	start_bg "crawler w$i" "$REAL_DIR/w$i.log" "$BIN/crawler" --zk "$ZK" --crawl "$CRAWL" --id "w$i" \
		--out "$REAL_DIR/w$i" --exit-when-done
	WPIDS+=("$LAST_PID")
done
workers_exited() {
	local p
	for p in "${WPIDS[@]}"; do alive "$p" && return 1; done
	return 0
}
progress() {
	local last=0 now
	while ! workers_exited; do
		now=$(cat "$REAL_DIR"/w*/crawl.log 2>/dev/null | wc -l)
		if [ "$now" != "$last" ]; then
			printf '  %s... %s pages crawled%s\n' "$C_DIM" "$now" "$C_OFF"
			last=$now
		fi
		sleep 2
	done
}
progress &
PROGRESS_PID=$!
track_pid "$PROGRESS_PID"
WAIT_POLL=0.05 wait_until "$CRAWL_TIMEOUT" "the crawl to finish" workers_exited # the exit is timed
crawl_done=$?
t1=$(now_s)
kill "$PROGRESS_PID" 2>/dev/null
wait "$PROGRESS_PID" 2>/dev/null
ZK_S=$(secs "$t0" "$t1")
[ "$crawl_done" = 0 ] || die "the crawl did not finish within ${CRAWL_TIMEOUT}s; logs in $REAL_DIR/w*.log"
for i in $(seq 1 "$WORKERS"); do
	grep -q 'msg="worker stopped"' "$REAL_DIR/w$i.log" || warn "w$i did not stop cleanly; see $REAL_DIR/w$i.log"
done
ok "zkcrawl: $(cat "$REAL_DIR"/w*/crawl.log | wc -l) crawl log lines in ${ZK_S}s (seed to the last worker's exit)"
for i in $(seq 1 "$WORKERS"); do
	say "w$i: $(wc -l <"$REAL_DIR/w$i/crawl.log") crawl log lines"
done
say "(one host is one queue shard, and a shard has one owner: that worker enforces the host's politeness,"
say " so a single-host crawl runs on one worker; the others stand by to take over if it dies)"

banner "Compare: every page wget fetched, once in the crawl logs with status 200 and once in the WARC files"
ZK_T0="$t0" python3 "$(pyscript compare)" "$MIRROR" "$BASE" "$WGET_S" "$ZK_S" "$REAL_DIR"/w* | tee "$REAL_DIR/summary.txt"
rc=${PIPESTATUS[0]}
say "summary, crawl logs and WARC files: $(shorten "$REAL_DIR")"
exit "$rc"
