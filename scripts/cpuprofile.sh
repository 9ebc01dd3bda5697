#!/usr/bin/env bash
# scripts/cpuprofile.sh: a CPU profile of one worker crawling crawlbench
# part 1's synthetic web (100 hosts x 200 pages, rate limits off, on the
# forceSync=yes server). It runs `crawlbench --only synth --workers 1`
# with every crawler's --pprof on (ZKCRAWL_PPROF), waits for the
# one-worker run's log to name its metrics address, takes SECONDS of CPU
# profile from it (OUT/cpu.pprof, then the allocations since the start in
# OUT/allocs.pprof) and prints the CPU profile's top (flat and cumulative).
#
#   ./scripts/cpuprofile.sh              # bin/ built by make build; profile in OUT/cpu.pprof
#   BIN=/tmp/old SECONDS_=6 ./scripts/cpuprofile.sh
#
# Environment: BIN (default ./bin: crawler, seeder), OUT (default
# ./out/cpuprofile-<timestamp>), SECONDS_ (profile length, default 8; the
# crawl takes about 16 s on 2 cores).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=${BIN:-$ROOT/bin}
OUT=${OUT:-out/cpuprofile-$(date +%Y%m%d-%H%M%S)}
SECS=${SECONDS_:-8}
mkdir -p "$OUT"
go build -o "$OUT/crawlbench" ./cmd/crawlbench

ZKCRAWL_PPROF=true "$OUT/crawlbench" --bin "$BIN" --only synth --workers 1 --skip-ensemble \
	--md '' --out "$OUT/bench" >"$OUT/crawlbench.log" 2>&1 &
bench=$!
trap 'kill "$bench" 2>/dev/null || true' EXIT

log="$OUT/bench/synth/w1-fsync-a1/w1.log"
url=""
for _ in $(seq 1 1200); do
	if [ -f "$log" ]; then
		url=$(grep -o 'url=http://[^ ]*/metrics' "$log" | head -1 | sed 's/^url=//; s#/metrics$##') || true
		[ -n "$url" ] && break
	fi
	kill -0 "$bench" 2>/dev/null || { echo "cpuprofile: crawlbench exited early; see $OUT/crawlbench.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$url" ] || { echo "cpuprofile: no metrics address in $log" >&2; exit 1; }
sleep 1 # the worker joins and claims its first pages
curl -sf -o "$OUT/cpu.pprof" "$url/debug/pprof/profile?seconds=$SECS"
curl -sf -o "$OUT/allocs.pprof" "$url/debug/pprof/allocs" || true # since the start
wait "$bench" || true
trap - EXIT
grep -E 'part 1 run done' "$OUT/crawlbench.log" || true
echo "== flat"
go tool pprof -top -nodecount=40 "$BIN/crawler" "$OUT/cpu.pprof" 2>/dev/null | head -50
echo "== cumulative"
go tool pprof -top -cum -nodecount=60 "$BIN/crawler" "$OUT/cpu.pprof" 2>/dev/null | head -70
