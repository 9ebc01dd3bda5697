// Package report holds what crawlbench measured, the shape of its
// results.json, and renders it: the one table of every figure against the
// benchmark targets and BENCHMARKS.md around it. Nothing here measures; the
// driver (package main) fills these structs, and --from-json renders an
// earlier run's file again.
package report

import (
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
)

// Results is everything the benchmark measured, written as results.json.
// A part that did not run is nil.
type Results struct {
	Started, Finished time.Time
	Machine           Machine
	Command           string
	OutDir            string
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
	Errors            []string
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs      int
	MemoryGiB float64
	CPUModel  string
	Kernel    string
	Go        string
	ZooKeeper string
	Java      string
	LoadStart string // /proc/loadavg: 1, 5 and 15 minute averages
	LoadEnd   string
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

// Synth is part 1: the synthetic web crawled by 1, 2 and 3 workers.
type Synth struct {
	Hosts, PagesPerHost, LinksPerPage int
	CrossHostShare                    float64
	Scope                             string
	MaxInFlight                       int
	Expected                          int        // ground-truth URLs a correct crawl fetches
	Runs                              []SynthRun // the fastest attempt of each worker count and forceSync
	Attempts                          []SynthRun // every run, in order
	// The previous frontier layout's build (--baseline-bin), 3 workers,
	// run in the same rounds: the fastest per forceSync, and every attempt.
	BaselineName               string
	Baseline, BaselineAttempts []SynthRun
}

// SynthRun is one part 1 crawl with Workers processes.
type SynthRun struct {
	Workers     int
	ForceSync   bool
	Baseline    bool // run with --baseline-bin
	Attempt     int
	Crawl       string
	Pages       int     // crawl log lines (fetch attempts)
	URLs        int     // distinct URLs logged
	Missing     int     // ground-truth URLs never logged
	Dups        int     // URLs logged more than once
	Extra       int     // URLs logged that a correct crawl does not fetch
	WrongStatus int     // URLs whose last status differs from the truth
	WallS       float64 // first worker start to the last crawl log line (the crawl then found done)
	PagesPerS   float64
	// CPU seconds over the run: the workers (sum), the ZooKeeper JVM, and
	// the driver (which serves the synthetic web and polls).
	WorkerCPUS, ZKCPUS, DriverCPUS float64
	WorkerCPUMsPerPage             float64
	ZKCPUMsPerPage                 float64
	ZKWrites                       int64 // zxid delta over the run
	ZKWritesPerPage                float64
	// Group commit, from the workers' metrics: fenced steps (claims,
	// completions, group steps, posts) and the ZooKeeper multis that
	// carried them: the ratio of the two counters.
	FencedSteps, Multis float64
	StepsPerMulti       float64
	// Group fsync of crawl.log and the WARC file before completions (the
	// workers' zkcrawl_output_fsync_duration_seconds): rounds and seconds.
	FsyncRounds, FsyncS      float64
	Claims                   float64 // queue_claim observations, all workers
	ClaimP50Ms, ClaimP99Ms   float64
	ClaimMeanMs              float64
	CompleteP50Ms, PostP50Ms float64
	LinksQueued, LinksDup    float64
	Dropped                  map[string]float64 // zkcrawl_links_dropped_total by reason
	ZKOps                    map[string]float64 // requests and queue steps by op, all workers
	ZKOpErrors               map[string]float64 // of which returned an error
	PeakRSSMB                []float64          // per worker, VmHWM
	PagesPerWorker           []int
	LoadBefore, LoadAfter    string
	FirstWorkerReadyS        float64 // until every worker served metrics
	DetectS                  float64 // the last crawl log write to done confirmed
	LongestGapS              float64 // longest pause between two crawl log lines
	IdleGapsS                float64 // summed pauses over 250 ms: nothing fetched at all
	// What the finished crawl left in ZooKeeper (part 3b), once its
	// batches retired: mntr data size and znode count delta from before
	// seeding to after the workers stopped, the seen chunks' data and keys.
	Retired                     bool // every batch retired within the wait
	RetireWaitS                 float64
	DataDelta, ZnodeDelta       int64
	SeenKeys, SeenChunks        int
	SeenChunkBytes              int64
	DataPerURL, ChunkBytesPerKy float64
}

// Real is part 2: the PostgreSQL manual, zkcrawl against wget.
type Real struct {
	Docs         string
	Nginx, Wget  string // versions
	NginxWorkers int
	MaxInFlight  int
	Concurrency  int
	Runs         []RealRun // the loopback pairs (every round) first
}

// RealRun is one wget-vs-zkcrawl pair of part 2.
type RealRun struct {
	LatencyMS      float64 // added to every response by the proxy (0: none)
	Round          int     // 1.. of the loopback pair (--real-repeat); 0 with added latency
	ForceSync      bool    // of the ZooKeeper zkcrawl ran on
	WgetWARCMB     float64 // wget's WARC file
	WgetPages      int     // .html files in wget's mirror
	WgetS          float64 // wget -r wall time
	WgetExitStatus int
	ZKPages        int     // URLs logged with status 200
	ZKLines        int     // crawl log lines
	ZKS            float64 // seeder start to the last crawl log line (then found done)
	ZKCrawlS       float64 // first worker start to the last crawl log line
	SeedS          float64 // the seeder run (crawl creation + 1 seed)
	DetectS        float64 // last crawl log line to done confirmed
	LongestGapS    float64 // longest pause between two crawl log lines
	IdleGapsS      float64 // summed pauses over 250 ms: nothing fetched at all
	Ratio          float64 // ZKS / WgetS
	CrawlRatio     float64 // ZKCrawlS / WgetS
	Missing, Dups  int     // of wget's pages
	Extra          int     // status-200 URLs wget did not fetch
	PagesByWorker  map[string]int
	ClaimP50Ms     float64
	ClaimP99Ms     float64
	ZKOps          map[string]float64 // requests and queue steps by op, all workers
	ZKOpErrors     map[string]float64 // of which returned an error (NodeExists of a duplicate included)
	ZKWrites       int64              // zxid delta, seeding included
	WritesPerLine  float64            // ZKWrites / ZKLines
	FsyncRounds    float64            // group fsync rounds of crawl.log and WARC, all workers
	FsyncS         float64            // their fsync time, seconds
	WorkerCPUS     float64
	ZKCPUS         float64
	LoadBefore     string
	LoadAfter      string
}

// Queued is part 3a: URLs queued through bin/seeder, before and after a
// paused worker drained them.
type Queued struct {
	URLs, Hosts         int
	SeederS, SeedPerS   float64 // bin/seeder wall time (process start to exit) and URLs/s
	SeederOutput        string
	Base                ZKFootprint // before seeding
	Posted              ZKFootprint // after seeding: URLs in inbox posts
	Drained             ZKFootprint // after the paused worker drained and filled ready windows
	DrainS              float64     // worker start to drained
	DrainedOK           bool        // posts 0 and every ready window filled within the wait
	Pending             frontier.Pending
	Window              int // ready items per host the drain waits for: the worker's 4 x per_host_max_in_flight + 1, expected, not measured
	PostedDataPerURL    float64
	PostedZnodesPerURL  float64
	DrainedDataPerURL   float64
	DrainedZnodesPerURL float64
	LoadBefore          string
	LoadAfter           string
}

// Big is part 3c: a big frontier in one ZooKeeper, its snapshot and
// restart.
type Big struct {
	Target, URLs        int // asked and enqueued
	Hosts, Paths        int
	TimeLimitS          float64
	SeedS, SeedPerS     float64
	Heap                string
	Base, After         ZKFootprint
	JVMPeakMB           float64
	Snapshots           int
	LargestSnapshotMB   float64
	TxnLogMB            float64
	RestartS            float64 // stop (SIGTERM) to serving again with the data
	RestartSnapshotMB   float64 // the snapshot written at restart
	AfterRestartRSSMB   float64
	DataPerURL          float64
	LoadBefore          string
	LoadAfter           string
	StoppedByTimeLimitS bool
}

// Trap is part 4: crawler traps, one run per flavour.
type Trap struct {
	Links, URLLength int
	TimeS            float64
	AbortMB          float64
	Runs             []TrapRun
}

// TrapRun is one trap flavour of part 4.
type TrapRun struct {
	Flavour      string
	Config       map[string]any
	Base         ZKFootprint
	End          ZKFootprint // at TimeS (or at the abort), worker still running
	GrowthMB     float64     // End - Base, data
	PeakGrowthMB float64     // largest growth seen (1 s polls)
	LastTenSMB   float64     // growth over the last 10 s of the run: still growing?
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
	// Frontier health, from ZooKeeper and the worker's log: dead letters
	// (R/failed children: outside every quota), group steps that failed
	// and made the manager reload, and connection losses.
	DeadLetters    int
	GroupFailures  int
	ConnLosses     int
	GroupErrorHint string // the first group step error logged
}

// Ceiling is part 5: the ZooKeeper's write ceiling, one run per server.
type Ceiling struct {
	Clients, InFlight int
	TimeS             float64
	Runs              []CeilingRun
}

// CeilingRun is one server of part 5.
type CeilingRun struct {
	ForceSync     bool
	Multis        int64
	Errors        int64
	ZxidDelta     int64
	TxPerS        float64
	WritesPerPage float64 // part 1, 3 workers (or the most workers run), same forceSync; 0 if not run
	ImpliedPagesS float64
	LoadAfter     string
}

// Takeover is part 6: how long the items of a SIGKILLed worker wait
// before another worker claims (or completes) them.
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
	// Shards: the killed worker's shards that held its claims; a shard is
	// taken over when another worker holds a claim in it (or it is empty).
	Shards, ShardsTakenOver int
	// Hosts: the hosts of the killed worker's claimed items; a host is
	// taken over when another worker holds a claim on one of its items.
	VictimHosts, HostsTakenOver        int
	HostMinS, HostMedianS, HostMaxS    float64
	ShardMinS, ShardMedianS, ShardMaxS float64
	// Diagnostics at the kill: the most claims one host had (the worker's
	// accept filter holds per_host_max_in_flight + 1 per host until their
	// fetches end, those being completed come on top), and how
	// many hosts had claims held by two or more workers at once.
	MaxClaimsPerHost   int
	HostsWithTwoOwners int
	HostsClaimed       int
	LoadAfter          string
}
