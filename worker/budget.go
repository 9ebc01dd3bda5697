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
//  1. half the descriptors left after fdReserve, one per request (the
//     other half is the keep-alive pool's: idlePool);
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
	if ram > 0 && cfg.MaxBodyBytes > 0 {
		n = min(n, ram/2/uint64(cfg.MaxBodyBytes))
	}
	return max(int(n), cfg.WorkerConcurrency, 1)
}

// idleConnBytes is about what one idle keep-alive connection costs a
// worker: the transport's 4 KiB read and write buffers, the stacks of its
// two goroutines, its structures and the wire capture's (measured: 10,000
// hosts at 0.016 requests/s with up to 9,655 connections kept, the worker's
// RSS 600-700 MB against 323-368 MB with 1,024).
const idleConnBytes = 64 << 10

// unratedIdleConns bounds the keep-alive pool without a per-host rate:
// a host's requests then follow each other as fast as claims come, so its
// connections are reused at once, not after an interval, and more idle
// connections than requests in flight are never reused together. A pool
// as large as a rated crawl's kept up to per_host_max_in_flight + 1 idle
// sockets to each of thousands of fast hosts (tens of thousands in all
// from a few workers).
const unratedIdleConns = 1024

// idlePool is the keep-alive pool of a worker with budget requests in
// flight, nofile descriptors (0: defaultNofile) and ram bytes (0: unknown),
// rated when the config sets a per-host rate whose interval is shorter than
// fetch.IdleConnTimeout (a connection idle longer is closed before the
// host's next request, so keeping it only costs memory): the smallest of the
// descriptors left after fdReserve and the budget, ram / 16 /
// idleConnBytes, and fetch.MaxIdleConns; without a rate also of the budget
// and unratedIdleConns; at least 1. Under a rate every host the worker
// crawls needs its connection kept between two requests (one interval): a
// host whose connection was closed as least recently used dials again, and
// its interval then counts from the answer's first byte, not the request's
// send (fetch.Result.Reached), so each of its pages costs the interval plus
// a latency (5,000 hosts at 1 request/s on one worker of 16 cores, a pool
// of 1,024: request gaps of 1.16 s at the median, 1.36x the politeness
// bound; with one connection a host: 1.00 s, 1.16x).
func idlePool(budget int, nofile, ram uint64, rated bool) int {
	if nofile == 0 {
		nofile = defaultNofile
	}
	n := uint64(fetch.MaxIdleConns)
	if !rated {
		n = uint64(min(unratedIdleConns, max(budget, 1)))
	}
	if used := uint64(fdReserve + max(budget, 0)); nofile > used {
		n = min(n, nofile-used)
	} else {
		n = 1
	}
	if ram > 0 {
		n = min(n, ram/16/idleConnBytes)
	}
	return max(int(n), 1)
}

// claimCap is how many claims a worker under cfg may hold at once
// (waiting for their key's politeness turn, in a fetch, or being stored
// and completed): config.ClaimsPerRequest x RequestBudget(cfg).
func claimCap(cfg config.Config) int {
	return config.ClaimsPerRequest * RequestBudget(cfg)
}
