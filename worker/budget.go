package worker

import (
	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
)

// The in-flight budget (docs/design.md, "In-flight budget"): a worker
// keeps as many requests in flight as its politeness keys' rates and
// latencies need, within a budget of file descriptors and memory. A
// request holds one of the budget's slots only from when its key's
// politeness admits it until its response is read (fetch.Politeness,
// MaxRequests); an item that waits for its key's turn holds a claim, and
// the claims a worker holds are capped at config.ClaimsPerRequest x the
// budget (claimCap).

// fdReserve is the file descriptors a worker keeps for everything but
// requests: the ZooKeeper connection, WARC and crawl-log files, the
// metrics listener, DNS lookups, the Go runtime.
const fdReserve = 256

// autoMaxInFlight bounds the automatic request budget: beyond a few
// thousand requests in flight one process's scheduling and timers, not
// descriptors or memory, become the limit.
const autoMaxInFlight = 4096

// defaultNofile is the descriptor limit assumed when the process's cannot
// be read: the usual soft default of Unix shells.
const defaultNofile = 1024

// RequestBudget returns how many requests a worker under cfg may have in
// flight at once: cfg.MaxInFlight when set (> 0); otherwise automatic,
// autoBudget(cfg, fdLimit(), totalRAM()). Always >= 1.
func RequestBudget(cfg config.Config) int {
	if cfg.MaxInFlight > 0 {
		return cfg.MaxInFlight
	}
	return autoBudget(cfg, fdLimit(), totalRAM())
}

// autoBudget is the automatic request budget for a process with nofile
// file descriptors (its RLIMIT_NOFILE soft limit, which Go raises to the
// hard limit at start on Linux; 0, unknown: defaultNofile) and ram bytes
// of memory (0: unknown): the smallest of
//  1. the descriptors left for requests, one each: nofile less fdReserve
//     and the fetcher's whole keep-alive pool (fetch.MaxIdleConns) when
//     nofile is more than twice those, else half of nofile less fdReserve
//     (the other half for the pool);
//  2. ram / 2 / max_body_bytes, so that even if every request in flight
//     read a body of max_body_bytes the bodies fit in half the memory;
//  3. autoMaxInFlight.
//
// It is never below cfg.WorkerConcurrency (a config's explicit floor) nor
// 1.
func autoBudget(cfg config.Config, nofile, ram uint64) int {
	if nofile == 0 {
		nofile = defaultNofile
	}
	n := min(uint64(autoMaxInFlight), (max(nofile, fdReserve)-fdReserve)/2)
	if spare := uint64(fdReserve + fetch.MaxIdleConns); nofile > 2*spare {
		n = min(uint64(autoMaxInFlight), nofile-spare)
	}
	if ram > 0 && cfg.MaxBodyBytes > 0 {
		n = min(n, ram/2/uint64(cfg.MaxBodyBytes))
	}
	return max(int(n), cfg.WorkerConcurrency, 1)
}

// claimCap is how many claims a worker under cfg may hold at once
// (waiting for their key's politeness turn, in a fetch, or being stored
// and completed): config.ClaimsPerRequest x RequestBudget(cfg).
func claimCap(cfg config.Config) int {
	return config.ClaimsPerRequest * RequestBudget(cfg)
}
