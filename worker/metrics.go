package worker

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
)

// Metrics are a worker's Prometheus metrics (namespace "zkcrawl"). A nil
// *Metrics records nothing, so tests need none.
type Metrics struct {
	fetches        *prometheus.CounterVec // by status class
	fetchBytes     prometheus.Counter
	fetchLatency   prometheus.Histogram
	claims         prometheus.Counter
	completions    prometheus.Counter
	enqueuedLinks  *prometheus.CounterVec // queued / duplicate
	sessionExpiry  prometheus.Counter
	configVersionG prometheus.Gauge
	zkOps          *prometheus.HistogramVec // by op, ZooKeeper requests and queue steps
	zkErrors       *prometheus.CounterVec   // by op
	zkExpected     *prometheus.CounterVec   // by op and outcome
	sessionState   prometheus.Gauge
	linksDropped   *prometheus.CounterVec // by reason
	revisits       *prometheus.CounterVec // by profile (recrawl.go)
	retryAfters    prometheus.Counter     // 429/503 answers whose Retry-After held their key (retryafter.go)
	outputSyncs    prometheus.Histogram   // fsync batches of the crawl log and WARC file (storage.SyncBatch)
	itemStages     *prometheus.HistogramVec
	renders        *prometheus.CounterVec // browser renders by outcome (render.go)
	renderSeconds  prometheus.Histogram
	browserBytes   prometheus.Gauge               // the browser's memory after the last render
	stages         [numStages]prometheus.Observer // itemStages by stage (stages.go)

	gaugeMu sync.Mutex
	gauges  GaugeSource           // set by SetGaugeSource; nil: the gauges read 0
	dns     func() fetch.DNSStats // set by setDNSSource; nil: the DNS metrics read 0
}

// GaugeValues are the crawl as one worker sees it, for the gauges
// zkcrawl_queue_depth, zkcrawl_claims_held and zkcrawl_dead_letters.
type GaugeValues struct {
	// QueueDepth is the items queued in the shards this worker owns.
	QueueDepth int
	// ClaimsHeld is the claims held in the shards this worker owns (its
	// own, and a previous owner's not yet finished).
	ClaimsHeld int
	// DeadLetters is the crawl-wide number of dead letters (R/failed).
	DeadLetters int
}

// GaugeSource returns the latest GaugeValues. It is called at every scrape,
// so it must not block: return a cached value. The worker installs one
// (gauges.go) that reads its owned shards every few seconds; a different
// frontier layout re-points it with SetGaugeSource.
type GaugeSource func() GaugeValues

// SetGaugeSource makes the gauges read f (nil: zero). Safe on a nil
// *Metrics and concurrently with scrapes.
func (m *Metrics) SetGaugeSource(f GaugeSource) {
	if m == nil {
		return
	}
	m.gaugeMu.Lock()
	m.gauges = f
	m.gaugeMu.Unlock()
}

func (m *Metrics) gaugeValues() GaugeValues {
	m.gaugeMu.Lock()
	f := m.gauges
	m.gaugeMu.Unlock()
	if f == nil {
		return GaugeValues{}
	}
	return f()
}

// NewMetrics creates the metrics and registers them with reg. Errors: a
// metric of the same name is already registered.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "fetches_total",
			Help: "Fetch attempts by outcome class: 2xx, 3xx, 4xx, 5xx, or error (no HTTP status).",
		}, []string{"class"}),
		fetchBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "fetch_bytes_total", Help: "Response body bytes received, as transferred.",
		}),
		fetchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "zkcrawl", Name: "fetch_duration_seconds",
			Help:    "Time from request start to last body byte, in seconds (politeness waits excluded).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
		claims: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "queue_claims_total", Help: "Queue items claimed by this worker.",
		}),
		completions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "queue_completions_total", Help: "Items finished: completed or moved to failed.",
		}),
		enqueuedLinks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "links_total", Help: "In-scope links offered to the frontier, by result: queued or duplicate.",
		}, []string{"result"}),
		sessionExpiry: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "zk_session_expirations_total", Help: "ZooKeeper session expirations seen by this worker.",
		}),
		configVersionG: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "zkcrawl", Name: "config_version", Help: "Znode version of the crawl config in force.",
		}),
		outputSyncs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "zkcrawl", Name: "output_fsync_duration_seconds",
			Help:    "fsync batches of crawl.log and the WARC file (one batch serves every page finished in its 2 ms gather window; an item is completed in ZooKeeper only after its batch), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "renders_total", Help: "Pages rendered in the browser (config render), by outcome: ok or error (the item retried).",
		}, []string{"outcome"}),
		renderSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "zkcrawl", Name: "render_duration_seconds",
			Help:    "One page's render in the browser, its subrequests' politeness waits and fetches included, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.25, 1.6, 14),
		}),
		browserBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "zkcrawl", Name: "browser_memory_bytes",
			Help: "The render browser's memory after its last render: the proportional set size of its process tree, in bytes (0: none runs).",
		}),
		zkOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "zkcrawl", Name: "zk_op_duration_seconds",
			Help:    "ZooKeeper requests (get, children, exists, create, set, delete, multi, auth) and queue steps (queue_claim, queue_complete, queue_retry, queue_fail, queue_release, group_step, backlog_post), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"op"}),
		zkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "zk_op_errors_total",
			Help: "ZooKeeper requests and queue steps that failed (connection loss, session expiry, timeouts...); expected outcomes are counted in zk_op_expected_total instead.",
		}, []string{"op"}),
		zkExpected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "zk_op_expected_total",
			Help: "ZooKeeper requests and queue steps that ended in an expected outcome the recipes handle, by outcome: node_exists (a duplicate link), claimed (an item another worker claimed first), item_gone and no_node (an item finished meanwhile), bad_version (a lost compare-and-set), not_empty.",
		}, []string{"op", "outcome"}),
		retryAfters: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "zkcrawl", Name: "retry_after_total",
			Help: "429 and 503 answers whose Retry-After held their politeness key (capped at max_retry_after_s).",
		}),
		sessionState: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "zkcrawl", Name: "zk_session_state",
			Help: "ZooKeeper session state: 0 disconnected, 1 connected, 2 expired, 3 closed.",
		}),
	}
	m.itemStages = newStageHistogram()
	m.revisits = newRevisitCounter()
	for s, name := range stageNames {
		m.stages[s] = m.itemStages.WithLabelValues(name)
	}
	m.linksDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "zkcrawl", Name: "links_dropped_total",
		Help: "Links the owner of their shard group did not queue, by reason: duplicate, per_host (max_queued_per_host), total (max_queued_total), bytes (max_frontier_bytes), url_length (max_url_length), bad_record, host_budget (max_pages_per_host with host_budget_action drop), dead_letter_cap (max_dead_letters).",
	}, []string{"reason"})
	gauge := func(name, help string, f func(GaugeValues) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "zkcrawl", Name: name, Help: help},
			func() float64 { return float64(f(m.gaugeValues())) })
	}
	queueDepth := gauge("queue_depth", "URLs queued in the shard groups this worker owns: ready items plus backlog (refreshed every few seconds).",
		func(v GaugeValues) int { return v.QueueDepth })
	claimsHeld := gauge("claims_held", "Claims held in the shards this worker owns (refreshed every few seconds).",
		func(v GaugeValues) int { return v.ClaimsHeld })
	deadLetters := gauge("dead_letters", "Dead letters of the whole crawl, R/failed (refreshed every few seconds).",
		func(v GaugeValues) int { return v.DeadLetters })
	dns := m.dnsCollectors()
	for _, c := range []prometheus.Collector{dns[0], dns[1], dns[2], dns[3], dns[4], m.fetches, m.fetchBytes, m.fetchLatency, m.claims, m.completions, m.enqueuedLinks, m.sessionExpiry, m.configVersionG, m.zkOps, m.zkErrors, m.zkExpected, m.sessionState, m.linksDropped, m.outputSyncs, m.itemStages, m.revisits, m.retryAfters, m.renders, m.renderSeconds, m.browserBytes, queueDepth, claimsHeld, deadLetters} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("worker: register metrics"), err)
		}
	}
	return m, nil
}

// setDNSSource makes the DNS metrics read f, the fetcher's resolver's
// counters. Safe on a nil *Metrics.
func (m *Metrics) setDNSSource(f func() fetch.DNSStats) {
	if m == nil {
		return
	}
	m.gaugeMu.Lock()
	m.dns = f
	m.gaugeMu.Unlock()
}

func (m *Metrics) dnsStats() fetch.DNSStats {
	m.gaugeMu.Lock()
	f := m.dns
	m.gaugeMu.Unlock()
	if f == nil {
		return fetch.DNSStats{}
	}
	return f()
}

// dnsCollectors returns the fetcher's DNS cache metrics (fetch.Resolver):
// hits, negative hits, misses, lookups in flight, names cached.
func (m *Metrics) dnsCollectors() [5]prometheus.Collector {
	counter := func(name, help string, f func(fetch.DNSStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "zkcrawl", Name: name, Help: help},
			func() float64 { return float64(f(m.dnsStats())) })
	}
	gauge := func(name, help string, f func(fetch.DNSStats) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "zkcrawl", Name: name, Help: help},
			func() float64 { return float64(f(m.dnsStats())) })
	}
	return [5]prometheus.Collector{
		counter("dns_cache_hits_total", "Host name lookups of the fetcher answered from its DNS cache (positive or negative).",
			func(s fetch.DNSStats) uint64 { return s.Hits }),
		counter("dns_cache_negative_hits_total", "DNS cache hits that were a cached \"no such host\".",
			func(s fetch.DNSStats) uint64 { return s.NegativeHits }),
		counter("dns_cache_misses_total", "Host name lookups that waited for a DNS query (their own, or one in flight for the same name).",
			func(s fetch.DNSStats) uint64 { return s.Misses }),
		gauge("dns_lookups_in_flight", "DNS queries running now (at most fetch.DNSMaxConcurrent).",
			func(s fetch.DNSStats) int64 { return s.InFlight }),
		gauge("dns_cache_entries", "Host names in the fetcher's DNS cache (at most fetch.DNSCacheEntries).",
			func(s fetch.DNSStats) int64 { return int64(s.Entries) }),
	}
}

func (m *Metrics) fetched(res *fetch.Result, err error, d time.Duration) {
	if m == nil {
		return
	}
	class := "error"
	if err == nil && res != nil {
		class = strconv.Itoa(res.Status/100) + "xx"
		m.fetchBytes.Add(float64(len(res.Body)))
	}
	m.fetches.WithLabelValues(class).Inc()
	m.fetchLatency.Observe(d.Seconds())
}

// rendered records one render of d: ok or not, and the browser's memory
// after it in bytes.
func (m *Metrics) rendered(ok bool, d time.Duration, browserBytes int64) {
	if m == nil {
		return
	}
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.renders.WithLabelValues(outcome).Inc()
	m.renderSeconds.Observe(d.Seconds())
	m.browserBytes.Set(float64(browserBytes))
}

// outputSynced records one fsync batch that took d.
func (m *Metrics) outputSynced(d time.Duration) {
	if m != nil {
		m.outputSyncs.Observe(d.Seconds())
	}
}

func (m *Metrics) claimed() {
	if m != nil {
		m.claims.Inc()
	}
}

func (m *Metrics) completed() {
	if m != nil {
		m.completions.Inc()
	}
}

func (m *Metrics) enqueued(queued, dups int) {
	if m != nil {
		m.enqueuedLinks.WithLabelValues("queued").Add(float64(queued))
		m.enqueuedLinks.WithLabelValues("duplicate").Add(float64(dups))
	}
}

func (m *Metrics) dropped(reason string, n int) {
	if m != nil && n > 0 {
		m.linksDropped.WithLabelValues(reason).Add(float64(n))
	}
}

func (m *Metrics) retryAfter() {
	if m != nil {
		m.retryAfters.Inc()
	}
}

func (m *Metrics) sessionExpired() {
	if m != nil {
		m.sessionExpiry.Inc()
	}
}

func (m *Metrics) configVersion(v int32) {
	if m != nil {
		m.configVersionG.Set(float64(v))
	}
}

// ObserveZK is a coord.Config.Observer hook recording ZooKeeper request latencies, and
// their failures: expected outcomes (ExpectedOutcome) apart from errors.
func (m *Metrics) ObserveZK(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.zkOps.WithLabelValues(op).Observe(d.Seconds())
	if err == nil {
		return
	}
	if outcome := ExpectedOutcome(err); outcome != "" {
		m.zkExpected.WithLabelValues(op, outcome).Inc()
		return
	}
	m.zkErrors.WithLabelValues(op).Inc()
}

// ExpectedOutcome names an error the recipes of docs/design.md expect and
// handle: ZooKeeper's NODEEXISTS, NONODE, BADVERSION and NOTEMPTY
// ("node_exists", "no_node", "bad_version", "not_empty") and coord's
// ErrClaimed ("claimed": another worker was first) and ErrGone
// ("item_gone": finished meanwhile); "" for a real error.
func ExpectedOutcome(err error) string {
	switch {
	case errors.Is(err, coord.ErrClaimed):
		return "claimed"
	case errors.Is(err, coord.ErrGone):
		return "item_gone"
	case errors.Is(err, zk.ErrNodeExists):
		return "node_exists"
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, coord.ErrNotFound):
		return "no_node"
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, coord.ErrVersionConflict):
		return "bad_version"
	case errors.Is(err, zk.ErrNotEmpty):
		return "not_empty"
	}
	return ""
}

func (m *Metrics) session(s coord.State) {
	if m == nil {
		return
	}
	v := float64(s) // coord.State values are 0..3 in this order
	m.sessionState.Set(v)
}
