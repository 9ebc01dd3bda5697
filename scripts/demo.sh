#!/usr/bin/env bash
# scripts/demo.sh: the guided tour of zkcrawl (`make demo` runs it after
# `make deps build`).
#
# It starts a local ZooKeeper (bin/zkserver), a synthetic web on loopback
# (bin/testweb: 10 hosts x 100 pages, with its ground truth), seeds the crawl
# (bin/seeder), runs 3 crawler workers, and then shows, step by step:
# crawlctl status while crawling, a config change applied live by every
# worker, a worker killed with SIGKILL while it holds claims and its claims
# taken over after the session timeout, a replacement worker, and the crawl
# finishing. The last line compares the crawl logs with the ground truth:
# "crawled N pages of M expected".
#
# Output (WARC files, crawl logs, process logs) stays in DEMO_DIR
# (default ./out/demo-<timestamp>). Every process it starts is stopped on
# exit, Ctrl-C or SIGTERM. Every wait is bounded; the tour takes about
# 30 seconds.
#
# Environment: DEMO_DIR (output folder), BIN (default ./bin),
# NO_COLOR (plain output).
set -uo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

need_bins zkserver testweb seeder crawler crawlctl

# The tour's settings.
CRAWL=demo
HOSTS=10
PAGES=100
SESSION_TIMEOUT=4s   # with --tick 200ms ZooKeeper allows 0.4 s .. 4 s
START_RATE=5         # requests/s per host: 10 hosts -> ~50 pages/s, slow enough to watch
SLOW_RATE=2
FAST_RATE=50
STAMP=$(date +%Y%m%d-%H%M%S)
DEMO_DIR=${DEMO_DIR:-$ZKC_ROOT/out/demo-$STAMP}
mkdir -p "$DEMO_DIR" || die "cannot create $DEMO_DIR"
DEMO_DIR=$(cd "$DEMO_DIR" && pwd)
ZKC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zkcrawl-demo.XXXXXX")
trap 'cleanup_all; rm -rf "$ZKC_TMP"' EXIT
trap 'echo; warn "interrupted: stopping everything"; exit 130' INT
trap 'exit 143' TERM

declare -A WPID=() # worker id -> pid
CFG_VERSION=0      # R/config znode version: the seeder writes version 0

# start_worker ID: one crawler worker in the background, its own --out dir.
start_worker() {
	local id=$1
	start_bg "crawler $id" "$DEMO_DIR/$id.log" "$BIN/crawler" --zk "$ZK" --crawl "$CRAWL" \
		--id "$id" --out "$DEMO_DIR/$id" --session-timeout "$SESSION_TIMEOUT" --exit-when-done
	WPID[$id]=$LAST_PID
}

live_workers() {
	local id
	for id in "${!WPID[@]}"; do alive "${WPID[$id]}" && printf '%s\n' "$id"; done | sort
}

# applied ID VERSION: worker ID logged that config VERSION is in force.
applied() { grep -q "msg=\"crawl config applied\".* version=$2 " "$DEMO_DIR/$1.log"; }

all_applied() {
	local id
	for id in $(live_workers); do applied "$id" "$1" || return 1; done
}

# set_config KEY=VALUE...: crawlctl config set, then waits (bounded) until
# every live worker has put the new version in force.
set_config() {
	local out v
	printf '  %s$ crawlctl --zk %s --crawl %s config set %s%s\n' "$C_DIM" "$ZK" "$CRAWL" "$*" "$C_OFF"
	out=$(ctl config set "$@" 2>&1) || die "crawlctl config set $* failed: $out"
	printf '%s\n' "$out" | sed 's/^/    /'
	# crawlctl prints "config version A -> B".
	v=$(printf '%s\n' "$out" | sed -nE 's/.*config version [0-9]+ -> ([0-9]+).*/\1/p' | tail -1)
	CFG_VERSION=${v:-$((CFG_VERSION + 1))}
	if wait_until 15 "every worker to apply config version $CFG_VERSION" all_applied "$CFG_VERSION"; then
		for id in $(live_workers); do
			say "$id: $(grep "msg=\"crawl config applied\".* version=$CFG_VERSION " "$DEMO_DIR/$id.log" | tail -1 |
				sed -E 's/^time=[^ ]+ level=[A-Z]+ //')"
		done
	fi
}

# status_view [HOLDER]: crawlctl status, its claims table cut to 6 rows, or
# to the rows of HOLDER when given.
status_view() {
	printf '  %s$ crawlctl --zk %s --crawl %s status%s\n' "$C_DIM" "$ZK" "$CRAWL" "$C_OFF"
	ctl status 2>&1 | awk -v holder="${1:-}" '
		/^claims:/ { inclaims = 1; print; next }
		inclaims && /SHARD\/ITEM/ { print; next }
		inclaims && NF >= 3 {
			n++
			show = (holder != "") ? ($2 == holder) : (n <= 6)
			if (show) print; else hidden++
			next
		}
		{ print }
		END {
			if (hidden) {
				what = (holder != "") ? " held by other workers" : ""
				printf "  ... and %d more claims%s\n", hidden, what
			}
		}
	' | sed 's/^/    /'
}

# status_json: crawlctl status --json, without sampling page rates.
status_json() { ctl status --json --rate-window 0; }

# claims_of ID: the number of claims worker ID holds now (status --json
# lists the 20 oldest claims with their owner; this crawl never holds more
# than 2 per host, 20 in all).
claims_of() { status_json 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
print(sum(1 for c in doc["claims"]["oldest"] if c["owner"] == sys.argv[1]))' "$1"; }

# in_status ID: worker ID is listed in R/workers (its session is alive).
in_status() { status_json 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
sys.exit(0 if any(w["id"] == sys.argv[1] for w in doc["workers"]) else 1)' "$1"; }

# worker_count: the number of workers in R/workers.
worker_count() { status_json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["workers"]))'; }

# shards_of ID: the shards where worker ID holds claims, space-separated.
shards_of() { status_json 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
print(" ".join(sorted({c["shard"] for c in doc["claims"]["oldest"] if c["owner"] == sys.argv[1]})))' "$1"; }

# holders_of "SHARD...": one line per shard, "SHARD: holder,..." ("-" when
# no claim is held in it right now).
holders_of() { status_json 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for s in sys.argv[1].split():
    owners = sorted({c["owner"] for c in doc["claims"]["oldest"] if c["shard"] == s})
    print(s + ": " + (",".join(owners) or "-"))' "$1"; }

# pick_victim: of w1..w3, the worker holding the most claims (w2 on a tie):
# rendezvous hashing may give a worker few or no hosts of this small web.
pick_victim() { status_json 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
n = {w: 0 for w in ("w2", "w1", "w3")}
for c in doc["claims"]["oldest"]:
    if c["owner"] in n:
        n[c["owner"]] += 1
print(max(n, key=lambda w: n[w]))' || echo w2; }

not_in_status() { ! in_status "$1"; }
holds_claims() {
	local c
	c=$(claims_of "$1")
	[ "${c:-0}" -gt 0 ] 2>/dev/null
}
dead() { ! alive "$1"; }
no_live_workers() { [ -z "$(live_workers)" ]; }

# =============================================================================

printf '%szkcrawl demo%s: a distributed crawl of a synthetic web, coordinated by ZooKeeper\n' "$C_BOLD" "$C_OFF"
say "output folder: $(shorten "$DEMO_DIR")"

banner "Start a local ZooKeeper (bin/zkserver, tickTime 200ms so a dead worker's session ends in ${SESSION_TIMEOUT})"
start_zk "$DEMO_DIR/zk" 200ms
ok "ZooKeeper serving at $ZK (data and log in $(shorten "$DEMO_DIR/zk"))"

banner "Start the synthetic web (bin/testweb: $HOSTS hosts x $PAGES pages on loopback) and write its ground truth"
start_bg testweb "$DEMO_DIR/testweb.log" bash -c 'exec "$0" --hosts "$1" --pages "$2" --truth-file "$3" >"$4"' \
	"$BIN/testweb" "$HOSTS" "$PAGES" "$DEMO_DIR/truth.tsv" "$DEMO_DIR/seeds.txt"
seeds_ready() { [ -s "$DEMO_DIR/truth.tsv" ] && [ "$(wc -l <"$DEMO_DIR/seeds.txt")" -ge "$HOSTS" ]; }
wait_until 30 "testweb to print its seeds" seeds_ready || die "testweb did not start; see $DEMO_DIR/testweb.log"
EXPECTED=$(awk -F'\t' '$1 > 0' "$DEMO_DIR/truth.tsv" | wc -l)
say "seed URLs (one per host), in $(shorten "$DEMO_DIR/seeds.txt"):"
head -3 "$DEMO_DIR/seeds.txt" | sed 's/^/    /'
say "    ... ($HOSTS in all)"
ok "ground truth: $EXPECTED pages a correct same-host crawl fetches (truth.tsv: status<TAB>depth<TAB>url)"

banner "Create the crawl and enqueue the seeds (bin/seeder)"
cat >"$DEMO_DIR/config.json" <<EOF
{
  "allow_private_networks": true,
  "per_host_rate_per_s": $START_RATE,
  "max_depth": 20,
  "scope": "same_host",
  "retry_backoff_ms": 500
}
EOF
say "config.json (every other key keeps its default):"
sed 's/^/    /' "$DEMO_DIR/config.json"
show "$BIN/seeder" --zk "$ZK" --crawl "$CRAWL" --config "$DEMO_DIR/config.json" --seeds "$DEMO_DIR/seeds.txt" --log-level warn ||
	die "seeder failed"

banner "Start 3 crawler workers (each with its own --out folder, --session-timeout $SESSION_TIMEOUT, --exit-when-done)"
for id in w1 w2 w3; do start_worker "$id"; done
joined() { [ "$(worker_count)" = 3 ]; }
wait_until 20 "3 workers to join" joined
sleep 1

banner "The crawl is running: crawlctl status (twice)"
say "each worker owns a share of the 128 queue shards; one host's URLs live in one shard, so one worker"
say "enforces that host's rate limit; a worker claims at most per_host_max_in_flight+1 = 2 URLs per host"
status_view
sleep 1
status_view

banner "Change the config live: crawlctl config set per_host_rate_per_s=$SLOW_RATE (no restart; every worker watches R/config)"
set_config per_host_rate_per_s=$SLOW_RATE
status_view

VICTIM=$(pick_victim)
SURVIVORS=$(for id in w1 w2 w3; do [ "$id" = "$VICTIM" ] || printf '%s ' "$id"; done)
SURVIVORS=${SURVIVORS% }
banner "Kill worker $VICTIM with SIGKILL while it holds claims"
wait_until 10 "$VICTIM to hold claims" holds_claims "$VICTIM" || true
VICTIM_SHARDS=$(shards_of "$VICTIM")
say "$VICTIM holds $(claims_of "$VICTIM") claims (ephemeral znodes under R/claims, owned by its ZooKeeper session),"
say "in shards: $VICTIM_SHARDS"
status_view "$VICTIM"
show kill -9 "${WPID[$VICTIM]}"
wait_until 5 "$VICTIM to die" dead "${WPID[$VICTIM]}"
killed_at=$(date +%s.%N)
say "$VICTIM is dead, but ZooKeeper keeps its session, and so its claims, until the session timeout ($SESSION_TIMEOUT):"
status_view "$VICTIM"

banner "After the session timeout: ZooKeeper deletes $VICTIM's claims and status node; ${SURVIVORS/ / and } take its shards over"
if wait_until 20 "$VICTIM's session to expire" not_in_status "$VICTIM"; then
	ok "$VICTIM's session expired $(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s after the kill: its claims and status node are gone"
fi
say "the survivors re-balanced the shards (rendezvous hashing over the live workers):"
for id in $SURVIVORS; do
	grep 'msg="shard ownership"' "$DEMO_DIR/$id.log" | tail -1 | sed -E 's/^time=[^ ]+ level=[A-Z]+ /    /'
done
taken_over() { [ -n "$(holders_of "$VICTIM_SHARDS")" ] && ! holders_of "$VICTIM_SHARDS" | grep -q ': -$'; }
wait_until 10 "$VICTIM's shards to be claimed again" taken_over || true
say "who claims $VICTIM's shards now:"
holders_of "$VICTIM_SHARDS" | sed 's/^/    /'
status_view

banner "Start a replacement worker w4: the shards re-balance over ${SURVIVORS/ /, } and w4"
start_worker w4
wait_until 15 "w4 to join" in_status w4
wait_until 10 "w4 to claim" holds_claims w4 || true
status_view

banner "Raise the rate live: crawlctl config set per_host_rate_per_s=$FAST_RATE, and let the crawl finish"
set_config per_host_rate_per_s=$FAST_RATE
say "waiting for the workers to see the crawl done (empty queue, no claims) and exit (--exit-when-done) ..."
if ! wait_until 90 "the workers to finish the crawl" no_live_workers; then
	warn "asking the workers to drain"
	ctl drain 2>&1 | sed 's/^/    /'
	wait_until 20 "the workers to drain" no_live_workers
fi
for id in $SURVIVORS w4; do
	grep -h 'msg="crawl is done' "$DEMO_DIR/$id.log" | tail -1 | sed -E 's/^time=[^ ]+ level=[A-Z]+ /    /'
done
status_view

banner "Results"
read -r N M EXTRA DUPS < <(python3 "$(pyscript score)" "$DEMO_DIR/truth.tsv" "$DEMO_DIR"/w*/crawl.log 2>"$DEMO_DIR/score-details.txt")
sed 's/^/  /' "$DEMO_DIR/score-details.txt"
say "per worker: crawl.log lines, WARC files"
for id in w1 w2 w3 w4; do
	[ -d "$DEMO_DIR/$id" ] || continue
	printf '    %-3s %5s lines  %s\n' "$id" "$(wc -l <"$DEMO_DIR/$id/crawl.log")" \
		"$(cd "$DEMO_DIR/$id" && ls -- *.warc.gz* 2>/dev/null | tr '\n' ' ')"
done
say "($VICTIM was killed: its WARC file keeps the .open suffix of a file that was never closed)"
say "URLs fetched twice (a worker died after logging, before completing: at-least-once): $DUPS; out-of-truth URLs: $EXTRA"
say "output: $(shorten "$DEMO_DIR") (WARC files and crawl.log per worker, process logs *.log, truth.tsv)"
echo
if [ "${N:-0}" -eq "${M:-1}" ] && [ "${EXTRA:-1}" -eq 0 ]; then
	printf '%scrawled %s pages of %s expected%s\n' "$C_BOLD$C_GREEN" "$N" "$M" "$C_OFF"
	exit 0
fi
printf '%scrawled %s pages of %s expected%s\n' "$C_BOLD$C_RED" "${N:-0}" "${M:-$EXPECTED}" "$C_OFF"
exit 1
