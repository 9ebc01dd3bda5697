#!/usr/bin/env bash
# scripts/bench.sh: zkcrawl's benchmark (`make bench` runs it after
# `make deps build`). It installs what part 2 needs when missing (nginx,
# Debian's postgresql-doc-15 and wget, with apt-get), builds the driver
# cmd/crawlbench into bin/, runs it and prints its table. The driver writes
# BENCHMARKS.md (the table, the machine, the load, how to rerun) and keeps
# every log, crawl log and results.json in OUT (default
# ./out/bench-<timestamp>).
#
#   ./scripts/bench.sh                  # all six parts, about 10 minutes on 2 cores
#   ./scripts/bench.sh --skip-big       # without the 10,000,000-URL frontier (1.5 minutes)
#   ./scripts/bench.sh --skip-ensemble  # without the 3-node ensemble's runs of parts 1, 2 and 5
#   ./scripts/bench.sh --only trap      # one part (synth, real, queued, big, trap, ceiling, takeover)
#   ./scripts/bench.sh --workers 3      # any crawlbench flag (see bin/crawlbench --help)
#
# Environment: OUT, BIN (default ./bin), SKIP_BIG=1 (same as --skip-big),
# BASELINE_REV (default 329a982, the last commit of frontier layout 1; "none"
# skips it): part 1 also crawls with that commit's seeder and crawler, built
# here from git into OUT/baseline, so that issue 9's "no slower than today's
# code" is measured in the same run.
# Every process the driver starts (ZooKeeper, nginx, crawlers) is stopped
# when it ends, on Ctrl-C and if it dies (parent-death signal).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=${BIN:-$ROOT/bin}
STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${OUT:-out/bench-$STAMP}
DOCS=/usr/share/doc/postgresql-doc-15/html

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# Part 2 serves the PostgreSQL manual with nginx and mirrors it with wget.
pkgs=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || pkgs+=(nginx)
[ -f "$DOCS/index.html" ] || pkgs+=(postgresql-doc-15)
command -v wget >/dev/null || pkgs+=(wget)
if [ "${#pkgs[@]}" -gt 0 ]; then
	echo "bench: installing with apt-get: ${pkgs[*]}"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi
export PATH=$PATH:/usr/sbin # nginx

for b in seeder crawler; do
	[ -x "$BIN/$b" ] || { echo "bench: $BIN/$b is missing: run 'make build' (make bench does)" >&2; exit 1; }
done
go build -o "$BIN/crawlbench" ./cmd/crawlbench

args=("$@")
extra=()
BASELINE_REV=${BASELINE_REV:-329a982}
if [ "$BASELINE_REV" != none ]; then
	mkdir -p "$OUT/baseline/src"
	echo "bench: building the baseline's seeder and crawler (git $BASELINE_REV) into $OUT/baseline/bin"
	git -C "$ROOT" archive "$BASELINE_REV" | tar -x -C "$OUT/baseline/src"
	basebin=$(cd "$OUT/baseline" && pwd)/bin
	(cd "$OUT/baseline/src" && go build -o "$basebin/" ./cmd/seeder ./cmd/crawler)
	extra+=(--baseline-bin "$basebin" --baseline-name "layout 1 (git $BASELINE_REV)")
fi
[ -n "${SKIP_BIG:-}" ] && args+=(--skip-big)
mkdir -p "$OUT"
echo "bench: $(nproc) CPUs; load average now: $(cut -d' ' -f1-3 /proc/loadavg) (the figures are slower while other jobs run)"
echo "bench: output in $OUT; progress below, the table at the end"
cmdline="make bench"
[ "${#args[@]}" -gt 0 ] && cmdline="./scripts/bench.sh ${args[*]}"
rc=0
"$BIN/crawlbench" --bin "$BIN" --out "$OUT" --md BENCHMARKS.md --command "$cmdline" ${extra[@]+"${extra[@]}"} ${args[@]+"${args[@]}"} \
	>"$OUT/table.md" 2> >(tee "$OUT/crawlbench.log" >&2) || rc=$?
echo
cat "$OUT/table.md"
echo
echo "bench: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$rc" = 0 ]; then
	echo "bench: wrote BENCHMARKS.md; every figure in $OUT/results.json"
else
	echo "bench: crawlbench exited $rc (see $OUT/crawlbench.log); BENCHMARKS.md lists the parts that failed" >&2
fi
exit "$rc"
