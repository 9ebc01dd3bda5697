// Package report holds what crawlbench measured, the shape of its results.json, and renders it:
// the table of every figure against its target and BENCHMARKS.md around it (table.md.tmpl,
// benchmarks.md.tmpl). Nothing here measures; the driver (package main) fills these structs.
package report

import (
	"slices"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
)

// Results is everything the benchmark measured, written as results.json; a part not run is nil.
type Results struct {
	Started, Finished time.Time
	Machine           Machine
	Command, OutDir   string    // the command line that ran the benchmark; its --out
	WarmupS           []float64 // warm-up crawl of each shared ZooKeeper
	SharedZKJavaOpts  []string  // JVM flags added for the ZooKeeper of parts 1, 2 and 5
	PartS             []PartTime
	Synth             *Synth
	Real              *Real
	Queued            *Queued
	Big               *Big
	Trap              *Trap
	Ceiling           *Ceiling
	Takeover          *Takeover
	Errors            []string // "part N: error" of each part that failed
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs                                  int
	MemoryGiB                             float64
	CPUModel, Kernel, Go, ZooKeeper, Java string
	LoadStart, LoadEnd                    string // /proc/loadavg: 1, 5 and 15 minute averages
}

// PartTime is how long one part took, in seconds.
type PartTime struct {
	Part string
	S    float64
}

// ZKFootprint is one reading of a ZooKeeper server's data and memory.
type ZKFootprint struct {
	DataBytes int64 // mntr zk_approximate_data_size: data plus path bytes of every znode
	Znodes    int64 // mntr zk_znode_count
	RSSKB     int64 // the JVM's VmRSS
}

// Server is the shared ZooKeeper of a run of parts 1, 2 and 5: a standalone server with
// forceSync=yes or =no, or the 3-node ensemble on loopback, forceSync=yes (Quorum).
type Server struct {
	ForceSync bool
	Ensemble  bool `json:",omitempty"`
}

// The shared servers, in the order the table shows them.
var Fsync, NoFsync, Quorum = Server{ForceSync: true}, Server{}, Server{ForceSync: true, Ensemble: true}

// Label names s in logs and tables (not String: the runs embedding it would print as it).
func (s Server) Label() string {
	return map[Server]string{Fsync: "forceSync=yes", NoFsync: "forceSync=no", Quorum: "3-node ensemble"}[s]
}

// Synth is part 1: the synthetic web crawled by 1, 2 and 3 workers.
type Synth struct {
	Hosts, PagesPerHost, LinksPerPage int
	CrossHostShare                    float64
	Scope                             string
	MaxInFlight                       int        // per_host_max_in_flight
	Expected                          int        // ground-truth URLs a correct crawl fetches
	Runs                              []SynthRun // the fastest attempt of each worker count and server
	Attempts                          []SynthRun // every run, in order
	// The --baseline-bin build, 3 workers, same rounds: the fastest per server, and every attempt.
	BaselineName               string
	Baseline, BaselineAttempts []SynthRun
	// --recrawl-ab: 3 workers with config recrawl on, same rounds: the fastest per server, and every
	// attempt, with the plain runs of the pairs past the first (--recrawl-pairs).
	Recrawl, RecrawlAttempts []SynthRun
}

// Add files run with its kind's attempts and, when the fastest of its worker count and server so far,
// in place of that one in Runs, Baseline or Recrawl. The plain run of a pair past the first
// (--recrawl-pairs) joins RecrawlAttempts only: the summary's other rows keep one plain run a round.
func (s *Synth) Add(run SynthRun) {
	attempts, runs := &s.Attempts, &s.Runs
	if run.Baseline {
		attempts, runs = &s.BaselineAttempts, &s.Baseline
	} else if run.Recrawl || run.Pair > 0 {
		attempts, runs = &s.RecrawlAttempts, &s.Recrawl
	}
	*attempts = append(*attempts, run)
	if !run.Recrawl && run.Pair > 0 {
		return
	} else if i := slices.IndexFunc(*runs, func(x SynthRun) bool { return x.Workers == run.Workers && x.Server == run.Server }); i < 0 {
		*runs = append(*runs, run)
	} else if run.PagesPerS > (*runs)[i].PagesPerS {
		(*runs)[i] = run
	}
}

// SynthRun is one part 1 crawl with Workers processes.
type SynthRun struct {
	Workers, Attempt int
	Pair             int // --recrawl-pairs: the on/off pair of its round (0: the first)
	Server
	Baseline, Recrawl bool // run with --baseline-bin; with config recrawl on (--recrawl-ab)
	Crawl             string
	Pages             int     // crawl log lines (fetch attempts)
	URLs              int     // distinct URLs logged
	Missing           int     // ground-truth URLs never logged
	Dups              int     // URLs logged more than once
	Extra             int     // URLs logged that a correct crawl does not fetch
	WrongStatus       int     // URLs whose last status differs from the truth
	WallS             float64 // first worker start to the last crawl log line (the crawl then found done)
	PagesPerS         float64
	CrawlFigures
	WorkerCPUMsPerPage, ZKCPUMsPerPage, ZKWritesPerPage float64
	// Group commit: fenced steps (claims, completions, group steps, posts) and the multis carrying them.
	FencedSteps, Multis, StepsPerMulti    float64
	ClaimMeanMs, CompleteP50Ms, PostP50Ms float64
	Stages                                []Stage // zkcrawl_item_stage_seconds, all workers, in the path's order
	// BeyondFetchMs: total p50 - fetch p50; SlotMs: workers x worker_concurrency / pages/s (Little's
	// law); Held: mean claims held per worker, pages/s x mean (claim + total) / workers.
	BeyondFetchMs, SlotMs, Held float64
	LinksQueued, LinksDup       float64
	Dropped                     map[string]float64 // zkcrawl_links_dropped_total by reason
	PeakRSSMB                   []float64          // per worker, VmHWM
	PagesPerWorker              []int
	// Part 3b, once the batches retired: mntr deltas, seeding to the workers' stop; the seen chunks.
	Retired                     bool // every batch retired within the wait (15 s)
	DataDelta, ZnodeDelta       int64
	SeenKeys, SeenChunks        int
	SeenChunkBytes              int64
	DataPerURL, ChunkBytesPerKy float64
}

// Stage is one stage of an item's path (zkcrawl_item_stage_seconds label): p50, p90, mean in ms.
type Stage struct {
	Name                 string
	P50Ms, P90Ms, MeanMs float64
}

// Real is part 2: the PostgreSQL manual, zkcrawl against wget.
type Real struct {
	Docs, Nginx, Wget                      string    // the manual's directory; versions
	NginxWorkers, MaxInFlight, Concurrency int       // nginx workers; per_host_max_in_flight, worker_concurrency
	Runs                                   []RealRun // the loopback pairs (every round) first
}

// RealRun is one wget-vs-zkcrawl pair of part 2.
type RealRun struct {
	LatencyMS     float64 // added to every response by the proxy (0: none)
	Round         int     // 1.. of the loopback pair (--real-repeat); 0 with added latency
	Server                // the ZooKeeper zkcrawl ran on
	WgetWARCMB    float64 // wget's WARC file
	WgetPages     int     // .html files in wget's mirror
	WgetS         float64 // wget -r wall time
	ZKPages       int     // URLs logged with status 200
	ZKLines       int     // crawl log lines
	ZKS           float64 // seeder start to the last crawl log line (then found done)
	ZKCrawlS      float64 // first worker start to the last crawl log line
	SeedS         float64 // the seeder run (crawl creation + 1 seed)
	LongestGapS   float64 // longest pause between two crawl log lines
	IdleGapsS     float64 // summed pauses over 250 ms: nothing fetched at all
	Ratio         float64 // ZKS / WgetS
	CrawlRatio    float64 // ZKCrawlS / WgetS
	Missing, Dups int     // of wget's pages
	Extra         int     // status-200 URLs wget did not fetch
	CrawlFigures          // ZKWrites: seeding included
	WritesPerLine float64 // ZKWrites / ZKLines
}

// CrawlFigures are the figures of a fleet's crawl that parts 1 and 2 share: the workers'
// /metrics and /proc, and the ZooKeeper's zxid and JVM, over the run.
type CrawlFigures struct {
	WorkerCPUS, ZKCPUS     float64            // CPU seconds: the workers (sum) and the ZooKeeper JVM
	ZKWrites               int64              // zxid delta over the run
	FsyncRounds, FsyncS    float64            // group fsync rounds of crawl.log and WARC, all workers; their seconds
	ClaimP50Ms, ClaimP99Ms float64            // queue_claim latency
	ZKOps                  map[string]float64 // requests and queue steps by op, all workers
	ZKOpErrors             map[string]float64 // of which returned an error (NodeExists of a duplicate included)
	LoadBefore, LoadAfter  string
}

// Queued is part 3a: URLs queued through bin/seeder, before and after a paused worker drained them.
type Queued struct {
	URLs, Hosts                            int
	SeederS, SeedPerS                      float64 // bin/seeder wall time (process start to exit) and URLs/s
	SeederOutput                           string
	Base                                   ZKFootprint // before seeding
	Posted                                 ZKFootprint // after seeding: URLs in inbox posts
	Drained                                ZKFootprint // after the paused worker drained and filled ready windows
	DrainS                                 float64     // worker start to drained
	DrainedOK                              bool        // posts 0 and every ready window filled within the wait
	Pending                                frontier.Pending
	Window                                 int // ready items per host the drain waits for: the worker's 4 x per_host_max_in_flight + 1, expected, not measured
	PostedDataPerURL, PostedZnodesPerURL   float64
	DrainedDataPerURL, DrainedZnodesPerURL float64
	LoadBefore, LoadAfter                  string
}

// Big is part 3c: a big frontier in one ZooKeeper, its snapshot and restart.
type Big struct {
	Target, URLs          int // asked and enqueued
	Hosts, Paths          int
	TimeLimitS            float64
	SeedS, SeedPerS       float64
	Heap                  string
	After                 ZKFootprint // seeded
	JVMPeakMB             float64
	Snapshots             int
	LargestSnapshotMB     float64
	TxnLogMB              float64 // the transaction logs, summed
	RestartS              float64 // stop (SIGTERM) to serving again with the data
	SnapRestartS          float64 // the same again, from the snapshot the restart wrote
	RestartSnapshotMB     float64 // the snapshot written at restart
	AfterRestartRSSMB     float64
	LoadBefore, LoadAfter string
	StoppedByTimeLimitS   bool // seeding ended at --big-time
	// The owners' drain (to no inbox post and every ready window full:
	// DrainedOK): its time, Pending then, drops, footprint; the JVM's heap
	// after a full GC, MB; the owners' Go heap after GC per URL, B, and RSS,
	// MB. NoSync (--big-nosync): the seeding and drain on forceSync=no.
	DrainS, LiveHeapMB, OwnerHeapBPerURL, OwnerRSSMB float64
	DrainedOK                                        bool
	Pending                                          frontier.Pending
	Dropped                                          int64
	Drained                                          ZKFootprint
	NoSync                                           *Big
	// Seen keys in memory: a seeder's LoadKnown of every group (keys, s)
	// and group 0's seen-set, live heap bytes per key after GC.
	KnownKeys, GroupKeys       int
	KnownS                     float64
	KnownBPerKey, GroupBPerKey float64
}

// Trap is part 4: crawler traps, one run per flavour.
type Trap struct {
	Links, URLLength int     // per trap page; characters per link
	TimeS, AbortMB   float64 // --trap-time; the growth that stops a flavour early
	Runs             []TrapRun
}

// TrapRun is one trap flavour of part 4.
type TrapRun struct {
	Flavour      string
	Config       map[string]any
	GrowthMB     float64 // End - Base, data
	PeakGrowthMB float64 // largest growth seen (1 s polls)
	LastTenSMB   float64 // growth over the last 10 s of the run: still growing?
	ZnodeGrowth  int64
	Aborted      bool // stopped early: growth passed AbortMB
	RanS         float64
	Pages        int              // crawl log lines
	TrapPages    int              // of which pages of the trap host itself
	Dropped      map[string]int64 // status node `dropped`
	Pending      frontier.Pending
	ZKWrites     int64
	JVMRSSMB     float64
	LoadAfter    string
	// Dead letters (R/failed); from the worker's log, failed group steps and connection losses.
	DeadLetters, GroupFailures, ConnLosses int
	GroupErrorHint                         string // the first group step error logged
}

// Ceiling is part 5: the ZooKeeper's write ceiling, one run per server.
type Ceiling struct {
	Clients, InFlight int // sessions, and multis in flight on each
	TimeS             float64
	Runs              []CeilingRun
}

// CeilingRun is one server of part 5.
type CeilingRun struct {
	Server
	Multis, Errors, ZxidDelta int64
	TxPerS                    float64
	WritesPerPage             float64 // part 1, 3 workers (or the most workers run), same server; 0 if not run
	ImpliedPagesS             float64
	LoadAfter                 string
}

// Takeover is part 6: how long a SIGKILLed worker's items wait until another claims (or completes) them.
type Takeover struct {
	TickMS               int64
	Hosts, PagesPerHost  int
	SessionTimeoutS      float64 // --session-timeout asked for
	NegotiatedS          float64 // as granted by ZooKeeper (cons: to=)
	RatePerS             float64
	Victim               string
	VictimClaims         int
	ClaimsBefore         map[string]int // claims per worker at the kill
	ExpiredS             float64        // kill to the victim's R/workers node gone
	DeadlineS            float64        // how long the driver watched after the kill
	Items                int            // victim's items resolved
	Unresolved           int            // still unclaimed at the deadline
	MinS, MedianS, MaxS  float64
	ByOtherClaim, ByGone int
	Shards               int // the killed worker's shards that held its claims
	// The killed worker's claimed items' hosts; taken over once another worker claims one of its items.
	VictimHosts, HostsTakenOver     int
	HostMinS, HostMedianS, HostMaxS float64
	// At the kill: the most claims of one host, the hosts claimed by 2+ workers, the hosts claimed.
	MaxClaimsPerHost, HostsWithTwoOwners, HostsClaimed int
	LoadAfter                                          string
}
