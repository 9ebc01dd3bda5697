# zkcrawl: a distributed web crawler coordinated by Apache ZooKeeper.
# `make help` lists the targets.

GO        ?= go
BIN       ?= bin
ZK_JAR    := /usr/share/java/zookeeper.jar
# warcio.js (npm), the independent WARC reader the tests run; keep in step
# with testenv.WarcioVersion.
WARCIO_VERSION := 2.4.11
# ReplayWeb.page (npm package replaywebpage): its prebuilt ui.js and sw.js,
# served by the replay test (worker/replay_test.go) into headless Chromium;
# keep in step with replayWebVersion there. Its npm dependencies are not
# needed (and 2.5.3's warcio ^2.4.12 is not on the registry): npm pack and
# untar.
REPLAYWEB_VERSION := 2.5.3
# CHROMIUM=no keeps make deps from installing Debian's chromium (the replay
# and dashboard browser tests then skip).
CHROMIUM  ?= yes
ZK_PORT   ?= 2181
ZK_DIR    ?= $(or $(TMPDIR),/tmp)/zkcrawl-zk
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT       := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get
# Packages whose tests run under the race detector (all of them; the pure
# ones are cheap).
PKGS      := ./...
CMDS      := seeder crawler crawlctl zkserver testweb

.PHONY: help deps build test vet bench bench-big bench-schedule-big chaos demo demo-real zk-up zk-down clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

deps: ## install ZooKeeper, redis-server and Chromium (Debian packages), warcio.js and ReplayWeb.page (npm, into tools/) when missing, download Go modules
	@if [ ! -f $(ZK_JAR) ] || ! command -v java >/dev/null; then \
	  echo "installing Debian's zookeeper package (ZooKeeper server jars and a Java runtime)"; \
	  $(APT) update -qq && $(APT) install -y -qq zookeeper; \
	fi
	@if ! command -v redis-server >/dev/null && [ ! -x /usr/sbin/redis-server ] && [ ! -x /usr/bin/redis-server ]; then \
	  echo "installing Debian's redis-server (the digest index of dedup_index; tests start their own on a free port)"; \
	  $(APT) update -qq && $(APT) install -y -qq --no-install-recommends redis-server && \
	  if command -v systemctl >/dev/null && systemctl is-active --quiet redis-server 2>/dev/null; then \
	    echo "stopping and disabling the redis-server system service the package started (not used; a crawl's dedup_index names its own server)"; \
	    $(SUDO) systemctl disable --now redis-server; \
	  fi; \
	fi
	@if [ ! -x tools/warcio/node_modules/.bin/warcio ]; then \
	  command -v npm >/dev/null || { echo "installing Debian's npm (for warcio.js, the independent WARC reader of the tests)"; $(APT) update -qq && $(APT) install -y -qq npm; }; \
	  echo "installing warcio.js $(WARCIO_VERSION) into tools/warcio (independent WARC reader for the tests)"; \
	  npm install --silent --no-audit --no-fund --no-save --prefix tools/warcio warcio@$(WARCIO_VERSION); \
	fi
	@if [ ! -f tools/replayweb/ui.js ] || [ ! -f tools/replayweb/sw.js ] || [ "$$(cat tools/replayweb/VERSION 2>/dev/null)" != $(REPLAYWEB_VERSION) ]; then \
	  command -v npm >/dev/null || { echo "installing Debian's npm (for ReplayWeb.page)"; $(APT) update -qq && $(APT) install -y -qq npm; }; \
	  echo "fetching ReplayWeb.page $(REPLAYWEB_VERSION) (ui.js, sw.js) into tools/replayweb (the replay test's client)"; \
	  { rm -rf tools/replayweb && mkdir -p tools/replayweb && \
	  npm pack --silent --pack-destination tools/replayweb replaywebpage@$(REPLAYWEB_VERSION) >/dev/null && \
	  tar -xzf tools/replayweb/replaywebpage-$(REPLAYWEB_VERSION).tgz -C tools/replayweb --strip-components=1 package/ui.js package/sw.js package/LICENSE && \
	  rm tools/replayweb/replaywebpage-$(REPLAYWEB_VERSION).tgz && echo $(REPLAYWEB_VERSION) > tools/replayweb/VERSION; } || \
	  echo "WARNING: could not fetch ReplayWeb.page: the replay test will be skipped (run make deps again when npm's registry is reachable)"; \
	fi
	@if [ "$(CHROMIUM)" = yes ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null && ! command -v google-chrome-stable >/dev/null; then \
	  echo "installing Debian's chromium (headless browser of the replay, dashboard and browser capture tests; CHROMIUM=no skips it)"; \
	  { $(APT) update -qq && $(APT) install -y -qq --no-install-recommends chromium; } || \
	  echo "WARNING: could not install chromium: the browser tests will be skipped (apt-get install chromium, or CHROMIUM=no to stop trying)"; \
	fi
	$(GO) mod download

# The VCS revision for --version and warcinfo, for builds where the Go
# toolchain stamps none (GOFLAGS=-buildvcs=false, git worktrees).
REVISION  := $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo .dirty)
LDFLAGS   := -X github.com/zkcrawl/zkcrawl/internal/cli.buildRevision=$(REVISION)

build: ## build every command into ./bin
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(CMDS))

vet: ## gofmt and go vet every package
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './out/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change these files (run: gofmt -w FILE):"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

test: deps vet ## install what is needed, then run every test under the race detector
	$(GO) test -race -count=1 -timeout 12m $(PKGS)

chaos: deps ## the long fault tests: worker kills, session expiry, ensemble failover, quorum loss, one-way partition, process pause (about 11 minutes)
	ZKCRAWL_CHAOS=long $(GO) test -count=1 -v -timeout 30m ./chaos/

bench: deps build ## the benchmark (pages/s, ZooKeeper writes and bytes per URL, traps, write ceiling, then the wide web and the real site as a user runs them, then recrawling; about 14 minutes); writes BENCHMARKS.md
	./scripts/bench.sh

bench-big: deps build ## part 3c at 100,000,000 URLs: one ZooKeeper (-Xmx4g), seeded, drained by the owners 16 groups at a time, heap after GC, snapshot, restart, then forceSync=no's rates (about 30 minutes on 2 cores; ~12 GB RAM, ~10 GB disk); writes BENCHMARKS-big.md
	$(GO) build -o $(BIN)/crawlbench ./cmd/crawlbench
	$(BIN)/crawlbench --bin $(BIN) --only big --big-urls 100000000 --big-heap 4g --big-wave 16 --big-time 60m --big-nosync \
	  --md BENCHMARKS-big.md --command "make bench-big"

bench-schedule-big: deps ## a recrawl schedule of 10,000,000 URLs in one ZooKeeper (-Xmx1g, forceSync=yes): data, JVM heap, restart time, the owner's heap per URL (go test -bench ScheduleBig ./frontier/; 2 to 6 minutes on 2 cores, ~1.2 GB of temp disk)
	ZKCRAWL_SCHEDULE_BIG=10000000 $(GO) test -count=1 -run '^$$' -bench 'ScheduleBig/forceSync=yes' -benchtime 1x -timeout 3h ./frontier/

demo: deps build ## the guided tour: ZooKeeper, a synthetic web, a seeder and 3 crawlers
	./scripts/demo.sh

demo-real: deps build ## crawl Debian's PostgreSQL 15 HTML docs served by nginx, against wget -r -p --warc-file
	./scripts/demo-real.sh

zk-up: deps build ## start a local standalone ZooKeeper on 127.0.0.1:$(ZK_PORT) (data in $(ZK_DIR))
	@mkdir -p $(ZK_DIR)
	@if [ -f $(ZK_DIR)/pid ] && kill -0 $$(cat $(ZK_DIR)/pid) 2>/dev/null; then \
	  echo "ZooKeeper already running (pid $$(cat $(ZK_DIR)/pid))"; \
	else \
	  nohup $(BIN)/zkserver --dir $(ZK_DIR)/data --port $(ZK_PORT) > $(ZK_DIR)/zkserver.log 2>&1 & echo $$! > $(ZK_DIR)/pid; \
	  pid=$$(cat $(ZK_DIR)/pid); \
	  for i in $$(seq 1 120); do \
	    grep -qx '127.0.0.1:$(ZK_PORT)' $(ZK_DIR)/zkserver.log 2>/dev/null && break; \
	    if ! kill -0 $$pid 2>/dev/null; then \
	      rm -f $(ZK_DIR)/pid; echo "zk-up: ZooKeeper failed to start on 127.0.0.1:$(ZK_PORT); log $(ZK_DIR)/zkserver.log:" >&2; \
	      { grep -E '^zkserver:|Exception' $(ZK_DIR)/zkserver.log | head -n 3 | grep . || tail -n 5 $(ZK_DIR)/zkserver.log; } >&2; echo "zk-up: pick a free port with 'make zk-up ZK_PORT=NNNN'" >&2; exit 1; \
	    fi; \
	    sleep 0.5; \
	  done; \
	  if ! grep -qx '127.0.0.1:$(ZK_PORT)' $(ZK_DIR)/zkserver.log; then \
	    kill $$pid 2>/dev/null; rm -f $(ZK_DIR)/pid; echo "zk-up: ZooKeeper did not serve on 127.0.0.1:$(ZK_PORT) within 60 s; log $(ZK_DIR)/zkserver.log" >&2; exit 1; \
	  fi; \
	  echo "ZooKeeper on 127.0.0.1:$(ZK_PORT) (pid $$pid, log $(ZK_DIR)/zkserver.log)"; \
	fi

zk-down: ## stop the ZooKeeper started by zk-up
	@if [ -f $(ZK_DIR)/pid ]; then kill $$(cat $(ZK_DIR)/pid) 2>/dev/null || true; rm -f $(ZK_DIR)/pid; echo "ZooKeeper stopped"; fi

clean: ## remove build output
	rm -rf $(BIN)
