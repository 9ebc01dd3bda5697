#!/usr/bin/env bash
# scripts/bench-recrawl.sh: make bench's part 8, recrawling (after `make
# build`; scripts/bench.sh runs it and appends its markdown to
# BENCHMARKS.md; run alone it prints the markdown on stdout):
#
#   - scripts/recrawl-real.sh on forceSync yes and no: the PostgreSQL
#     manual's first pass with recrawl on and off, a `crawlctl recrawl
#     --now` pass and a `--revisit-from` crawl (revisits, WARC and body
#     bytes against the first pass, every revisit resolved by warcio.js);
#   - scripts/recrawl-synth.sh on forceSync yes and no, MAX=SYNTH_MAX
#     (default 6 s): changes of a mutating web captured within MAX, fetches
#     against an oracle;
#   - ZooKeeper bytes per scheduled URL (the frontier's ScheduleBytes
#     benchmark) and one asset at 100 URLs on 100 hosts, 3 workers, with
#     dedup_index (worker TestDedupOneAssetOnManyHosts).
#
# About 6 minutes on 2 cores. Environment: OUT (default
# out/bench-recrawl-STAMP), SYNTH_MAX. A missed target is a row marked NO or
# FAIL; the exit status is 1 only when a run did not finish or a revisit
# did not resolve.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-out/bench-recrawl-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
SYNTH_MAX=${SYNTH_MAX:-6}
rmd=$OUT/recrawl.md
: >"$rmd.real"
: >"$rmd.synth"
rrc=0
for fs in true false; do
	label="forceSync=$([ $fs = true ] && echo yes || echo no)"
	echo "bench: part 8: scripts/recrawl-real.sh, FORCE_SYNC=$fs" >&2
	FORCE_SYNC=$fs RECRAWL_MD=$rmd.real RECRAWL_LABEL=$label RECRAWL_DIR=$OUT/recrawl-real-$fs \
		./scripts/recrawl-real.sh >"$OUT/recrawl-real-$fs.log" 2>&1
	if grep -q 'revisits that do not resolve\|did not finish\|ERROR' "$OUT/recrawl-real-$fs.log"; then rrc=1; fi
	echo "bench: part 8: scripts/recrawl-synth.sh, MAX=$SYNTH_MAX s, FORCE_SYNC=$fs" >&2
	FORCE_SYNC=$fs MAX=$SYNTH_MAX RECRAWL_MD=$rmd.synth RECRAWL_LABEL=$label RECRAWL_DIR=$OUT/recrawl-synth-$fs \
		./scripts/recrawl-synth.sh >"$OUT/recrawl-synth-$fs.log" 2>&1
done
echo "bench: part 8: ZooKeeper bytes per scheduled URL, dedup of one asset on 100 hosts" >&2
go test -count=1 -run '^$' -bench ScheduleBytes -benchtime 1x ./frontier/ >"$OUT/schedule-bytes.log" 2>&1 || rrc=1
go test -count=1 -v -run '^TestDedupOneAssetOnManyHosts$' ./worker/ >"$OUT/dedup-100.log" 2>&1 || rrc=1

echo
echo "## Part 8: recrawling"
echo
echo "\`scripts/recrawl-real.sh\`: the PostgreSQL 15 manual via nginx (ETag and Last-Modified), 3 workers with"
echo "\`--exit-when-done\`, config \`recrawl\` on; pass 2 after \`crawlctl recrawl --now\`, pass 3 a new crawl made by"
echo "\`seeder --revisit-from\`. Body bytes are what nginx logged as sent. Every revisit is resolved by warcio.js"
echo "(\`scripts/revisit-check.mjs\`) to a response record of pass 1. Targets: >= 99% revisits, WARC bytes <= 5%, body"
echo "bytes <= 2% of pass 1's; first-pass URLs/s with recrawl on within 5% of off."
echo
echo "| run | pass | crawl-log lines | revisits | WARC bytes (of pass 1) | body bytes sent (of pass 1) | time | met |"
echo "|---|---|---|---|---|---|---|---|"
cat "$rmd.real"
echo
echo "\`scripts/recrawl-synth.sh\` (MAX = recrawl_interval_max_s = $SYNTH_MAX s, MIN 1 s, 20 x MAX): testweb pages changing"
echo "as Poisson processes of mean intervals log-uniform in [MAX/5, 2 MAX]; rules in the script's header. Targets:"
echo ">= 95% of changes captured within MAX, fetches <= 1.3x an oracle fetching once per change."
echo
echo "| run | pages | run s | captured within MAX | fetches / oracle | fetches / changes | capture delay p50 / p90 s | pages of mean >= MAX: captured / fetches per change | result |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$rmd.synth"
echo
echo "ZooKeeper bytes per scheduled URL (\`go test -run '^\$' -bench ScheduleBytes -benchtime 1x ./frontier/\`; target <= 24 B):"
echo
echo '```'
grep -E '^Benchmark' "$OUT/schedule-bytes.log"
echo '```'
echo
echo "One asset linked from 100 pages on 100 hosts, 3 workers, \`dedup_index\` on (worker TestDedupOneAssetOnManyHosts;"
echo "target: 1 response record and 99 revisits):"
echo
echo '```'
grep -E 'one asset at|^(--- |ok|FAIL)' "$OUT/dedup-100.log" | sed 's/^ *//' | head -3
echo '```'
if [ "$rrc" != 0 ]; then
	echo
	echo "A run of part 8 failed (did not finish, or a revisit did not resolve): see $OUT/recrawl-*.log."
fi
exit "$rrc"
