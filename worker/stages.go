package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stage is one step of an item's path through the worker, observed in
// zkcrawl_item_stage_seconds{stage=...}. ready and claim end at the claim;
// the stages from robots to complete follow each other (each starts where
// the one before it ended), so on an item that goes through all of them
// they add up to total.
type stage int

const (
	// stageReady: the item's data last written (created ready by its
	// group's owner, or rescheduled: coord.Claim.ReadySince) to its
	// admission by a taker (not_before waits included).
	stageReady stage = iota
	// stageClaim: admission to the claim's commit (the claim multi's round
	// trip, its group-commit wait included).
	stageClaim
	// stageRobots: claimed to robots.txt answered (obey_robots only; a
	// robots.txt fetch included).
	stageRobots
	// stagePoliteness: the stage before it ended to the request start:
	// waiting for the key's rate and in-flight slots and the request budget.
	stagePoliteness
	// stageFetch: request start to the last body byte (or the error).
	stageFetch
	// stageStore: writing the WARC records.
	stageStore
	// stageParse: extracting the links and sitemap entries.
	stageParse
	// stageLinks: enqueueing them (only items with links).
	stageLinks
	// stageFsync: writing the crawl-log line and waiting for its group
	// fsync of crawl.log and the WARC file.
	stageFsync
	// stageComplete: the finishing multi (complete, retry or dead letter).
	stageComplete
	// stageTotal: claimed to finished (completed, retried or dead-lettered).
	stageTotal
	numStages
)

// stageNames are the stage label values, by stage.
var stageNames = [numStages]string{"ready", "claim", "robots", "politeness", "fetch", "store", "parse", "links", "fsync", "complete", "total"}

// newStageHistogram returns zkcrawl_item_stage_seconds: buckets from
// 0.1 ms growing by 1.5x to about 145 s, fine enough for a p50 of a
// sub-millisecond stage and wide enough for a wide web's waits.
func newStageHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "zkcrawl", Name: "item_stage_seconds",
		Help: "Time one crawl item spent in each stage of its path, in seconds: ready (data written to taken), claim (claim multi), " +
			"robots, politeness (waiting for its request slot), fetch, store (WARC records), parse (link extraction), links (enqueue), " +
			"fsync (crawl-log line and group fsync), complete (finishing multi), total (claimed to finished).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 1.5, 36),
	}, []string{"stage"})
}

// stage records that an item spent d in s. No allocation: the observers
// are resolved once (NewMetrics).
func (m *Metrics) stage(s stage, d time.Duration) {
	if m != nil {
		m.stages[s].Observe(max(d, 0).Seconds())
	}
}

// lap records the time since the attempt's last lap (or its claim) as
// stage s and starts the next stage now.
func (a *attempt) lap(s stage) { a.lapAt(s, time.Now()) }

// lapAt is lap with the stage's end time given.
func (a *attempt) lapAt(s stage, end time.Time) {
	a.w.metrics.stage(s, end.Sub(a.mark))
	a.mark = end
}

// finished records the attempt's finishing multi and its total.
func (a *attempt) finished() {
	now := time.Now()
	a.lapAt(stageComplete, now)
	a.w.metrics.stage(stageTotal, now.Sub(a.claimed))
}
