# shellcheck shell=bash
# scripts/lib.sh: shell helpers shared by scripts/demo.sh and
# scripts/demo-real.sh. Source it from bash; it defines functions and a few
# variables and starts nothing by itself.
#
#   banner / say / ok / show / warn / die   output with a step counter
#   free_port / port_free                   loopback ports (python3 bind test)
#   start_bg NAME LOG CMD...                a background process in its own process group
#   track_pid PID                           also stop this pid in cleanup_all
#   cleanup_all                             SIGTERM every process group, SIGKILL after 12 s
#   wait_until SECS DESC CMD...             poll CMD every 0.25 s, bounded
#   need_bins NAME...                       die unless bin/NAME exist
#   start_zk DIR TICK                       bin/zkserver on 2181 (or a free port); sets ZK
#   ctl ARGS...                             bin/crawlctl --zk $ZK --crawl $CRAWL ARGS (bounded)
#   pyscript NAME                           path of an embedded python3 helper (needs ZKC_TMP)
#
# Every process started with start_bg is stopped by cleanup_all, which the
# scripts install as their EXIT trap (their INT and TERM traps exit, which
# runs it).

ZKC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ZKC_ROOT/bin}

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	C_BOLD=$'\e[1m' C_DIM=$'\e[2m' C_GREEN=$'\e[32m' C_RED=$'\e[31m' C_YELLOW=$'\e[33m' C_CYAN=$'\e[36m' C_OFF=$'\e[0m'
else
	C_BOLD='' C_DIM='' C_GREEN='' C_RED='' C_YELLOW='' C_CYAN='' C_OFF=''
fi

ZKC_STEP=0
ZKC_T0=$(date +%s.%N)

# elapsed: seconds since the script started, one decimal.
elapsed() { awk -v a="$ZKC_T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

# banner TEXT: a numbered step heading.
banner() {
	ZKC_STEP=$((ZKC_STEP + 1))
	printf '\n%s==== [%d] %s %s(t=%ss)%s\n' "$C_BOLD$C_CYAN" "$ZKC_STEP" "$*" "$C_OFF$C_DIM" "$(elapsed)" "$C_OFF"
}

say() { printf '  %s\n' "$*"; }
ok() { printf '  %sOK%s %s\n' "$C_GREEN" "$C_OFF" "$*"; }
warn() { printf '  %sWARNING:%s %s\n' "$C_YELLOW" "$C_OFF" "$*" >&2; }
die() {
	printf '%sERROR:%s %s\n' "$C_RED" "$C_OFF" "$*" >&2
	exit 1
}

# show CMD...: prints the command, runs it, indents its output; returns its
# status.
show() {
	printf '  %s$ %s%s\n' "$C_DIM" "$(shorten "$*")" "$C_OFF"
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/    /'
	return "$rc"
}

# shorten TEXT: TEXT with $ZKC_ROOT/ replaced by nothing, for readable
# command lines.
shorten() { printf '%s' "${1//$ZKC_ROOT\//}"; }

# port_free PORT: true when nothing listens on 127.0.0.1:PORT.
port_free() {
	python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

# free_port: prints a port that is free on 127.0.0.1 right now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# --- processes -------------------------------------------------------------

ZKC_PIDS=()

# start_bg NAME LOG CMD...: starts CMD in the background in a new session
# and process group (setsid), stdout and stderr to LOG, stdin from
# /dev/null; sets LAST_PID and remembers it for cleanup_all.
start_bg() {
	local name=$1 log=$2
	shift 2
	setsid "$@" >"$log" 2>&1 </dev/null &
	LAST_PID=$!
	# No "Killed" job notices from bash; cleanup_all tracks the pid itself.
	disown "$LAST_PID" 2>/dev/null || true
	ZKC_PIDS+=("$LAST_PID")
	printf '  %sstarted %s (pid %s, log %s)%s\n' "$C_DIM" "$name" "$LAST_PID" "$(shorten "$log")" "$C_OFF"
}

# track_pid PID: also stop PID (and its process group) in cleanup_all.
track_pid() { ZKC_PIDS+=("$1"); }

alive() { kill -0 "$1" 2>/dev/null; }

# signal_tree SIG PID: sends SIG to PID's process group when PID leads one,
# else to PID alone.
signal_tree() {
	local sig=$1 pid=$2 pgid
	pgid=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')
	if [ "$pgid" = "$pid" ]; then
		kill "-$sig" -- "-$pid" 2>/dev/null || true
	else
		kill "-$sig" "$pid" 2>/dev/null || true
	fi
}

# cleanup_all: stops every started process, newest first (workers before
# the web and ZooKeeper), all SIGTERMed at once, SIGKILL for what is left
# after 12 s. Idempotent.
cleanup_all() {
	local i pid left
	[ "${#ZKC_PIDS[@]}" -gt 0 ] || return 0
	for ((i = ${#ZKC_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${ZKC_PIDS[$i]}
		alive "$pid" && signal_tree TERM "$pid"
	done
	for ((i = 0; i < 120; i++)); do
		left=0
		for pid in "${ZKC_PIDS[@]}"; do alive "$pid" && left=1; done
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	for pid in "${ZKC_PIDS[@]}"; do
		if alive "$pid"; then signal_tree KILL "$pid"; fi
	done
	wait 2>/dev/null || true
	ZKC_PIDS=()
}

# wait_until SECS DESC CMD...: runs CMD every WAIT_POLL s (default 0.25) until it succeeds
# (return 0) or SECS pass (return 1, with a warning naming DESC).
wait_until() {
	local secs=$1 desc=$2
	shift 2
	local deadline=$(($(date +%s) + secs))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		if [ "$(date +%s)" -ge "$deadline" ]; then
			warn "gave up after ${secs}s waiting for: $desc"
			return 1
		fi
		sleep "${WAIT_POLL:-0.25}"
	done
}

# --- zkcrawl pieces ----------------------------------------------------------

# need_bins NAME...: dies unless every bin/NAME exists.
need_bins() {
	local b
	for b in "$@"; do
		[ -x "$BIN/$b" ] || die "$BIN/$b is missing: run 'make build' (or 'make demo', which builds)"
	done
	command -v python3 >/dev/null || die "python3 is needed for the port checks and the crawl log analysis"
}

# start_zk DIR TICK: starts bin/zkserver (data in DIR) on 127.0.0.1:2181 when
# that port is free, else on a free port, waits for its connect string and
# sets ZK. Dies when it does not come up within 60 s. FORCE_SYNC=true runs
# it as production does (zkserver --force-sync: fsync before each ack).
start_zk() {
	local dir=$1 tick=$2 port=0
	mkdir -p "$dir"
	rm -f "$dir/connect" # a left-over one (a rerun in the same directory) would pass for the new server's
	if port_free 2181; then port=2181; fi
	start_bg zkserver "$dir/zkserver.log" bash -c 'exec "$0" --dir "$1" --port "$2" --tick "$3" --force-sync="$5" >"$4"' \
		"$BIN/zkserver" "$dir/data" "$port" "$tick" "$dir/connect" "${FORCE_SYNC:-false}"
	local zkpid=$LAST_PID
	if ! wait_until 60 "ZooKeeper to start (log $dir/zkserver.log)" test -s "$dir/connect"; then
		tail -20 "$dir/zkserver.log" >&2
		die "ZooKeeper did not start"
	fi
	ZK=$(head -1 "$dir/connect")
	# The JVM runs in its own process group (testenv); stop it too should
	# zkserver itself die first.
	local java
	for java in $(ps -o pid= --ppid "$zkpid" 2>/dev/null); do track_pid "$java"; done
}

# nginx_conf DIR ROOT PORT: writes DIR/nginx.conf, an nginx serving ROOT on
# 127.0.0.1:PORT in the foreground with its pid file, logs and temp paths
# under DIR (demo-real.sh and replay-check.sh start it with -p DIR).
# NGINX_EXTRA, if set, is added to the server block (e.g. "etag off;
# if_modified_since off;": no validators, so a recrawl gets 200s).
nginx_conf() {
	local dir=$1 root=$2 port=$3
	mkdir -p "$dir"
	cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log $dir/access.log;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    sendfile on;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        root $root;
        ${NGINX_EXTRA:-}
    }
}
CONF
}

# ctl ARGS...: bin/crawlctl against $ZK and $CRAWL, bounded to 30 s.
ctl() { timeout 30 "$BIN/crawlctl" --zk "$ZK" --crawl "$CRAWL" "$@"; }

# pyscript NAME: writes the embedded python3 helper NAME into $ZKC_TMP and
# prints its path.
#   score TRUTH LOG...       compares crawl logs with testweb's ground truth;
#                            prints "N M extra dup_lines" and writes details
#   compare MIRROR BASEURL OUTDIR...
#                            wget mirror vs crawl logs and WARC files (demo-real)
pyscript() {
	local f="$ZKC_TMP/$1.py"
	[ -f "$f" ] || zkc_py_"$1" >"$f"
	printf '%s' "$f"
}

zkc_py_score() {
	cat <<'EOF'
"""Score crawl logs against testweb's ground truth.

argv: TRUTH_FILE CRAWL_LOG... ; prints one line "N M EXTRA DUPS":
N     truth URLs (status > 0) whose final logged status (last attempt by ts)
      equals the truth status,
M     truth URLs with status > 0 (the pages a correct crawl fetches),
EXTRA URLs logged that the truth has as status 0 or not at all,
DUPS  URLs with more than one log line that is not a retry (attempt 1 twice:
      a re-fetch after a worker died between its log line and its completion).
Details (missing, wrong status, extra) go to stderr, at most 10 each.
"""
import json, sys
truth = {}
with open(sys.argv[1]) as f:
    for line in f:
        st, depth, url = line.rstrip("\n").split("\t")
        truth[url] = int(st)
final, firsts = {}, {}
for path in sys.argv[2:]:
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError as err:
                print(f"{path}:{n}: not JSON ({err}); a worker killed mid-line?", file=sys.stderr)
                continue
            u = e["url"]
            if u not in final or e["ts"] >= final[u]["ts"]:
                final[u] = e
            if e.get("attempt", 1) == 1:
                firsts[u] = firsts.get(u, 0) + 1
want = {u: s for u, s in truth.items() if s > 0}
good = [u for u, s in want.items() if u in final and final[u]["status"] == s]
missing = sorted(u for u in want if u not in final)
wrong = sorted(u for u in want if u in final and final[u]["status"] != want[u])
extra = sorted(u for u in final if u not in want)
dups = sorted(u for u, c in firsts.items() if c > 1)
for name, items in (("missing", missing), ("wrong status", wrong), ("extra", extra)):
    for u in items[:10]:
        detail = f" (logged {final[u]['status']}, expected {truth.get(u, 'not at all')})" if u in final else ""
        print(f"  {name}: {u}{detail}", file=sys.stderr)
print(len(good), len(want), len(extra), len(dups))
EOF
}

zkc_py_compare() {
	cat <<'EOF'
"""Compare a wget mirror with zkcrawl's crawl logs and WARC files.

argv: MIRROR_DIR BASE_URL WGET_SECONDS ZKCRAWL_SECONDS OUTDIR...
MIRROR_DIR is wget's host folder (127.0.0.1:PORT); BASE_URL its URL with a
trailing slash. Each OUTDIR holds a worker's crawl.log and *.warc.gz files.
Environment: WGET_WARC, the WARC file wget wrote (for its size), if any.
Pages are .html files (wget) and 2xx text/html URLs (zkcrawl); requisites
are wget's other files (-p) and zkcrawl's URLs whose hop path ends in E.
Prints the summary table; exit status 1 when a page wget fetched is missing
(no crawl log line with status 200, or no WARC response record).
Standard library only: gzip reads the one-gzip-member-per-record files as
one stream (WARC 1.1 annex D), json the crawl log lines.
"""
import glob, gzip, json, os, sys
from collections import Counter
from urllib.parse import quote

mirror, base, wget_s, zk_s, outdirs = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5:]

wget_urls, wget_other = set(), set()
for root, _, files in os.walk(mirror):
    for f in files:
        rel = os.path.relpath(os.path.join(root, f), mirror)
        u = base + quote(rel.replace(os.sep, "/"))
        if f.endswith(".html"):
            wget_urls.add(u)
        elif f != "robots.txt":
            wget_other.add(u)

lines, ok200, bad_json, last_ts = Counter(), Counter(), 0, ""
html_ok, requisites, payload_bytes = set(), set(), 0
for d in outdirs:
    path = os.path.join(d, "crawl.log")
    if not os.path.exists(path):
        continue
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError:
                bad_json += 1
                continue
            lines[e["url"]] += 1
            last_ts = max(last_ts, e.get("ts", ""))
            if e["status"] == 200:
                ok200[e["url"]] += 1
                payload_bytes += e.get("bytes", 0)
                if e.get("hops", "").endswith("E"):
                    requisites.add(e["url"])
                elif e.get("mime") == "text/html":
                    html_ok.add(e["url"])


def warc_records(path):
    """Yields (WARC-Type, WARC-Target-URI) of every record in a .warc.gz."""
    with gzip.open(path, "rb") as f:
        while True:
            line = f.readline()
            if not line:
                return
            if not line.strip():
                continue  # the CRLF CRLF after a block
            if not line.startswith(b"WARC/"):
                raise ValueError(f"{path}: expected a WARC version line, got {line[:40]!r}")
            headers = {}
            while True:
                h = f.readline()
                if not h or h in (b"\r\n", b"\n"):
                    break
                k, _, v = h.decode("utf-8", "replace").partition(":")
                headers[k.strip().lower()] = v.strip()
            f.read(int(headers.get("content-length", "0")))
            yield headers.get("warc-type", ""), headers.get("warc-target-uri", "")


responses, warc_files, warc_bytes = Counter(), 0, 0
for d in outdirs:
    for path in sorted(glob.glob(os.path.join(d, "*.warc.gz")) + glob.glob(os.path.join(d, "*.warc.gz.open"))):
        warc_files += 1
        warc_bytes += os.path.getsize(path)
        for typ, uri in warc_records(path):
            if typ == "response":
                responses[uri.strip("<>")] += 1

crawled = html_ok
missing_log = sorted(u for u in wget_urls if ok200[u] == 0)
missing_warc = sorted(u for u in wget_urls if responses[u] == 0)
missing = sorted(set(missing_log) | set(missing_warc))
dup_log = sorted(u for u in wget_urls if lines[u] > 1)
dup_warc = sorted(u for u in wget_urls if responses[u] > 1)
dups = sorted(set(dup_log) | set(dup_warc))
extra = sorted(crawled - wget_urls)
non200 = sorted(u for u in lines if ok200[u] == 0)

ratio = zk_s / wget_s if wget_s > 0 else float("inf")
# Seed to the last crawl log line (no --exit-when-done quiet period), when
# the caller passed the seeder's start time (epoch seconds) in ZK_T0.
last_page_s = None
if os.environ.get("ZK_T0") and last_ts:
    from datetime import datetime
    last_page_s = datetime.fromisoformat(last_ts.replace("Z", "+00:00")).timestamp() - float(os.environ["ZK_T0"])
wget_warc = os.environ.get("WGET_WARC", "")
wget_warc_bytes = os.path.getsize(wget_warc) if wget_warc and os.path.exists(wget_warc) else 0
rows = [
    ("pages wget (.html files)", f"{len(wget_urls)}"),
    ("pages zkcrawl (text/html, status 200)", f"{len(crawled)}"),
    ("requisites wget (-p: other files)", f"{len(wget_other)}"),
    ("requisites zkcrawl (hop E, status 200)", f"{len(requisites)} ({len(wget_other - requisites - set(ok200))} of wget's not fetched)"),
    ("payload bytes zkcrawl (status 200)", f"{payload_bytes}"),
    ("WARC bytes wget / zkcrawl", f"{wget_warc_bytes} / {warc_bytes}"),
    ("missing (of wget's pages)", f"{len(missing)}"),
    ("duplicates (of wget's pages)", f"{len(dups)}"),
    ("extra (zkcrawl only)", f"{len(extra)}"),
    ("crawl log lines / WARC responses", f"{sum(lines.values())} / {sum(responses.values())} in {warc_files} WARC files"),
    ("wall time wget", f"{wget_s:.2f} s"),
    ("wall time zkcrawl (seed to done)", f"{zk_s:.2f} s"),
    ("ratio zkcrawl / wget", f"{ratio:.2f}"),
]
if last_page_s is not None and wget_s > 0:
    rows += [
        ("wall time zkcrawl (seed to last page)", f"{last_page_s:.2f} s"),
        ("ratio zkcrawl / wget, to last page", f"{last_page_s / wget_s:.2f} (a fresh ZooKeeper's first crawl; make bench: warm, 5 rounds)"),
    ]
if os.environ.get("REAL_MD") and last_page_s is not None and wget_s > 0:
    with open(os.environ["REAL_MD"], "a") as md:
        md.write(f"| {os.environ.get('REAL_LABEL', '')} | {wget_s:.2f} | {zk_s:.2f} | **{ratio:.2f}x** | {last_page_s:.2f} | "
                 f"{last_page_s / wget_s:.2f}x | {zk_s - last_page_s:.2f} | {len(crawled)} / {len(wget_urls)} | {len(missing)} | {len(dups)} |\n")
width = max(len(k) for k, _ in rows)
print(f"  {'':-<{width}}---{'':-<24}")
for k, v in rows:
    print(f"  {k:<{width}} | {v}")
print(f"  {'':-<{width}}---{'':-<24}")
for name, items in (("missing from the crawl log (status 200)", missing_log), ("missing from the WARC files", missing_warc),
                    ("more than one crawl log line", dup_log), ("more than one WARC response", dup_warc),
                    ("crawled by zkcrawl only", extra), ("logged without status 200", non200)):
    if items:
        print(f"  {name}: {len(items)}, e.g. " + ", ".join(items[:5]))
if bad_json:
    print(f"  {bad_json} crawl log lines were not JSON")
if missing:
    print("  RESULT: FAIL, pages are missing")
    sys.exit(1)
print("  RESULT: OK, every page wget fetched is in the crawl log (status 200) and the WARC files" + (", once each" if not dups else ""))
EOF
}
