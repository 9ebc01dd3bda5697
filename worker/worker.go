// Package worker runs one zkcrawl crawler worker: it joins a crawl in
// ZooKeeper, owns a share of the frontier's shards by rendezvous hashing over
// the live workers, claims their items, fetches them politely, writes WARC
// records and crawl log lines, enqueues the links it finds and completes the
// items. The protocols are those of docs/design.md.
package worker

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// Options configure one worker. Servers, Crawl and OutDir are required.
type Options struct {
	// Servers is the ZooKeeper connect string "host:port,host:port[/chroot]".
	Servers string
	// Crawl is the crawl name; its root znode is coord.Root(Crawl).
	Crawl string
	// OutDir receives the WARC files and crawl.log; created if missing.
	OutDir string
	// ID names this worker in R/workers, claims and the crawl log; default
	// "<hostname>-<pid>".
	ID string
	// SessionTimeout is the ZooKeeper session timeout asked for (default
	// DefaultSessionTimeout): how long a killed worker's claims
	// outlive it. The server may grant another (it clamps to [2, 20] x
	// tickTime by default); the disconnection guard follows the granted one.
	SessionTimeout time.Duration
	// ExitWhenDone makes Run return nil once the whole crawl is done: no
	// ready item, claim, inbox post or unheld backlog record anywhere and
	// nothing in flight here, read as one consistent snapshot from
	// ZooKeeper watches (waitDone; docs/design.md, "When a batch crawl is
	// done"), typically within a few hundred milliseconds of the last
	// completion.
	ExitWhenDone bool
	// QuietPeriod is how much longer the crawl must stay done before
	// ExitWhenDone exits (default DefaultQuietPeriod, 0; negative counts as
	// 0). The done check needs none: it reads a consistent snapshot, and
	// done is stable (only a worker holding a claim, or an operator
	// seeding, creates work). A positive value lets workers started before
	// the seeder wait for the seeds.
	QuietPeriod time.Duration
	// StopTimeout bounds how long in-flight items may finish after Run's
	// context is cancelled before they are abandoned (default
	// DefaultStopTimeout).
	StopTimeout time.Duration
	// HeartbeatInterval is how often the R/workers status node is
	// refreshed (default DefaultHeartbeatInterval).
	HeartbeatInterval time.Duration
	// WARCMaxBytes rotates WARC files past this size (default
	// storage.DefaultMaxFileBytes).
	WARCMaxBytes int64
	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// Metrics, if set, receives counters and gauges (see Metrics).
	Metrics *Metrics
	// ProgressInterval is how often Run logs a progress line (pages,
	// pages/s, bytes, errors by class, claims, owned shards); 0 means
	// DefaultProgressInterval, negative turns the lines off. Run always logs
	// a summary when it returns.
	ProgressInterval time.Duration
	// Version is the zkcrawl version written to every WARC file's warcinfo
	// ("software: zkcrawl/<Version>") and the status node; "" means "dev".
	Version string
	// ZK is the worker's coord.Connect configuration: its Username and
	// Password (then every znode the worker creates is readable and
	// writable by those credentials only) and TLS; Run sets its
	// SessionTimeout, Logger, Observer and Owner from the options above.
	ZK coord.Config
	// ForbidPrivateNetworks refuses private, loopback, link-local and other
	// special addresses (fetch.BlockedAddr) whatever the crawl config's
	// allow_private_networks says: whoever can write the config cannot
	// point this worker at its own network.
	ForbidPrivateNetworks bool

	// rootCAs verifies https servers' certificates (fetch.Options.RootCAs);
	// nil: the system's roots. Set by this package's tests, whose TLS
	// servers on loopback have their own certificates.
	rootCAs *x509.CertPool
}

// Defaults of Options, applied by New to zero fields; cmd/crawler's flags
// default to them too.
const (
	// DefaultQuietPeriod is Options.QuietPeriod's default: none, the done
	// check reads a consistent snapshot (waitDone).
	DefaultQuietPeriod = time.Duration(0)
	// DefaultStopTimeout is Options.StopTimeout's default, a third of the
	// default fetch_timeout_ms (config.DefaultFetchTimeoutMS): a fetch
	// slower than that is abandoned at a stop and its item stays queued.
	DefaultStopTimeout = 10 * time.Second
	// DefaultHeartbeatInterval is Options.HeartbeatInterval's default.
	DefaultHeartbeatInterval = 2 * time.Second
	// DefaultSessionTimeout is Options.SessionTimeout's default, the
	// ZooKeeper session timeout asked for: a killed worker's claims and
	// member node outlive it by this long (the server clamps it to
	// [2, 20] x tickTime, by default [4 s, 40 s]).
	DefaultSessionTimeout = 10 * time.Second
)

// workerID is what a worker id may be: as a crawl name (coord.Root).
var workerID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ErrCrawlNotFound is returned by Run when the crawl's znodes do not exist:
// run the seeder first.
var ErrCrawlNotFound = errors.New("crawl not found in ZooKeeper (run the seeder first)")

// ErrUnreachable is returned by New when no ZooKeeper session could be
// established before its context ended (wrapped with the last connection
// error).
var ErrUnreachable = errors.New("ZooKeeper unreachable")

// Worker is one running crawler worker. Create it with New, then call Run.
//
// It only wires its parts: the claimer (claimer.go: claim loops per owned
// shard, keySlots; shards.go: which shards it owns, handoffs), the fetch
// pipeline (process.go, over the seams of seams.go: fetch, store, links,
// finish, one attempt per claimed item), the shard groups' owners
// (groups.go), the config in force (live.go) and what reports on it
// (status.go, progress.go, metrics.go, gauges.go). Each part is held once;
// the exceptions are the pipeline's links seam, which is front in
// production (process_test.go puts a fake there), and ownerState.queue,
// front's queue as the owner loop reads it.
type Worker struct {
	opts   Options
	root   string             // the crawl's root znode, coord.Root(opts.Crawl)
	log    *slog.Logger       // opts.Logger with the worker id
	client *coord.Client      // nil in the in-memory pipeline of process_test.go
	front  *frontier.Frontier // the crawl's frontier: ready queue and backlog; nil in process_test.go
	// layout is the crawl's frontier layout, fixed when the crawl was
	// created (a value: front's, or a test's where there is no frontier).
	layout frontier.Layout

	fetchPipeline              // the pipeline's parts (process.go)
	liveState                  // the config in force (live.go)
	membership                 // this worker among the crawl's workers (shards.go, standby.go)
	slots         *keySlots    // the claimer's claim slots per politeness key (claimer.go)
	owner         groupOwner   // runs the owned shard groups (*frontier.Owner; groups.go)
	reporting                  // running totals, metrics and progress (status.go, progress.go)
	outputs       outputHealth // whether writes to the outputs work (outputs.go)
}

// fetchPipeline is what process (process.go) runs an item through. The
// network, the outputs and the frontier are reached only through the
// seams (seams.go), so a test can put in-memory parts in their place;
// robots.txt, politeness, handoff cooling and link normalization are
// in-process state.
type fetchPipeline struct {
	fetcher pageFetcher   // *fetch.Fetcher, following the live config (fetchConfigurer); or a test's
	store   exchangeStore // *diskStore while Run runs; or a test's
	links   linkSink      // the Worker's frontier; or a test's
	// robots answers robots.txt questions, fetching robots.txt with the
	// *fetch.Fetcher that newWorker made the fetcher.
	robots   *fetch.Robots
	polite   *fetch.Politeness // request spacing and in-flight caps per politeness key
	cookies  *fetch.CookieJars // one cookie jar per politeness key, config cookies (cookies.go)
	handoffs *handoffState     // shards handed over to us, keys already cooled for them
	norm     *normCache        // link URL -> normalized (outlinks)
	dedup    dedupState        // the crawl's digest index, dedup_index (dedup.go)
	renders  renderState       // the browser pool and its response cache (render.go)
}

// liveState is the crawl config in force and what waits for it to change.
type liveState struct {
	live   atomic.Pointer[liveConfig] // the config in force; nil until the first valid version
	cfgErr atomic.Pointer[string]     // why the last version was rejected; "" when none
	wake   broadcast                  // fired when the config changes, a claim slot frees or writes work again
	// claimSlots counts the claim slots taken (tryClaimSlot): claims held
	// or being taken, at most claimCap.
	claimSlots atomic.Int64
	// capWait holds the shards whose items were turned down for want of a
	// claim slot, nudged when one frees.
	capWait shardSet
}

// membership is this worker's place among the crawl's workers.
type membership struct {
	view    atomic.Pointer[string] // the shard assignment ownership follows (assignmentView)
	owned   atomic.Pointer[[]int]  // shards owned now, sorted (gauges.go)
	standby atomic.Bool            // out of the worker list while output writes fail (standby.go)
	// left fires when a member leaves the worker list (its session ended:
	// a finished worker exits, a killed one expires), so waitDone looks
	// again at once instead of at its next poll.
	left broadcast
	// placed is done once this worker has followed a shard assignment
	// that names it (it joined and the balancer counted it): waitDone's
	// first count read waits for it, so that its 256 reads do not queue
	// ahead of the join and the first claims on the one connection.
	placed onceSignal
}

// onceSignal is a channel closed by the first Fire (the zero value is
// ready to use).
type onceSignal struct {
	once sync.Once
	mu   sync.Mutex
	ch   chan struct{}
}

// Wait returns the channel Fire closes.
func (o *onceSignal) Wait() <-chan struct{} { return o.get() }

// Fire closes Wait's channel; later calls do nothing.
func (o *onceSignal) Fire() {
	o.once.Do(func() { close(o.get()) })
}

func (o *onceSignal) get() chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ch == nil {
		o.ch = make(chan struct{})
	}
	return o.ch
}

// reporting is what the status node, the progress lines and the metrics
// show of this worker.
type reporting struct {
	counters counters  // running totals (status.go)
	metrics  *Metrics  // nil: none recorded
	progress *progress // progress lines and the stop summary (progress.go)
}

// liveConfig is one applied config version with what is derived from it.
type liveConfig struct {
	cfg     config.Config
	version int32
	scope   *frontier.Scope
	// reqScope judges page requisites: mode requisites_scope, the same
	// include/exclude/max_depth as scope.
	reqScope *frontier.Scope
	// render says which URLs are rendered (config render, render_rules).
	render *config.RenderMatcher
	// claimCap is claimCap(cfg), the claims this worker may hold, computed
	// once per version: tryClaimSlot reads it per admission, and
	// RequestBudget makes two system calls.
	claimCap int
}

// New validates opts and connects to ZooKeeper. Errors: a missing option,
// a bad crawl name, an unreachable ensemble (ErrUnreachable, after ctx
// ends), a crawl that was never seeded (ErrCrawlNotFound), a pending drain
// (ErrDrainPending) or an id held by a live worker (ErrIDInUse).
func New(ctx context.Context, opts Options) (*Worker, error) {
	opts, root, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: output directory %s: %w", opts.OutDir, err)
	}
	w := newWorker(opts, root)
	zkCfg := opts.ZK
	zkCfg.SessionTimeout, zkCfg.Logger, zkCfg.Observer, zkCfg.Owner = opts.SessionTimeout, w.log, opts.Metrics.ObserveZK, opts.ID
	w.client, err = coord.Connect(ctx, opts.Servers, zkCfg)
	if err != nil {
		return nil, fmt.Errorf("worker: %w: %w", ErrUnreachable, err)
	}
	w.front, err = frontier.Open(ctx, w.client, root)
	if err != nil {
		w.client.Close()
		if errors.Is(err, coord.ErrNotInitialized) {
			return nil, fmt.Errorf("worker: crawl %q at %s: %w", opts.Crawl, root, ErrCrawlNotFound)
		}
		return nil, fmt.Errorf("worker: open the frontier of crawl %q: %w", opts.Crawl, err)
	}
	w.layout, w.links = w.front.Layout(), w.front
	w.owner = w.newOwner() // links of our own groups skip the inbox
	if err := w.preflight(ctx); err != nil {
		w.client.Close()
		return nil, err
	}
	return w, nil
}

// checkOptions returns opts with the defaults filled in and the crawl's
// root znode. Errors name the missing or malformed option.
func checkOptions(opts Options) (Options, string, error) {
	if opts.Servers == "" {
		return opts, "", errors.New("worker: no ZooKeeper servers given (--zk host:port,...)")
	}
	if opts.OutDir == "" {
		return opts, "", errors.New("worker: no output directory given (--out DIR)")
	}
	root, err := coord.Root(opts.Crawl)
	if err != nil {
		return opts, "", fmt.Errorf("worker: %w", err)
	}
	if opts.ID == "" {
		h, _ := os.Hostname()
		opts.ID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if !workerID.MatchString(opts.ID) {
		return opts, "", fmt.Errorf("worker: id %q: want 1..128 characters of A-Z a-z 0-9 . _ -", opts.ID)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	opts.QuietPeriod = max(opts.QuietPeriod, 0)
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return opts, root, nil
}

// newWorker returns a worker with its in-process parts (HTTP client,
// robots.txt cache and politeness, unlimited until the first config is
// applied) and no ZooKeeper connection, frontier or outputs: New and Run add
// those; process_test.go plugs in-memory seams instead. opts.Logger must be
// set.
func newWorker(opts Options, root string) *Worker {
	log := opts.Logger.With("worker", opts.ID)
	http := fetch.New(fetch.Options{Logger: log})
	polite, err := fetch.NewPoliteness(fetch.PolitenessOptions{Logger: log})
	if err != nil {
		panic(err) // zero limits are valid
	}
	w := &Worker{
		opts: opts,
		root: root,
		log:  log,
		fetchPipeline: fetchPipeline{
			fetcher:  http,
			polite:   polite,
			cookies:  fetch.NewCookieJars(fetch.CookieLimits{}),
			handoffs: newHandoffState(),
			norm:     newNormCache(),
		},
		slots:     newKeySlots(),
		reporting: reporting{metrics: opts.Metrics, progress: newProgress()},
	}
	w.robots = fetch.NewRobots(http, fetch.RobotsOptions{Logger: log, Gate: w.robotsGate, Fetched: w.robotsFetched})
	opts.Metrics.setDNSSource(func() fetch.DNSStats { return http.Resolver().Stats() })
	return w
}

// ID returns the worker id.
func (w *Worker) ID() string { return w.opts.ID }

// Run crawls until ctx is cancelled (graceful stop: no new claims, in-flight
// items get StopTimeout to finish, then are abandoned and their claims
// released), until a drain is requested (R/drain exists: the same graceful
// stop) or, with ExitWhenDone, until the crawl is done. It closes the
// ZooKeeper session on return, which deletes this worker's claims and
// status node at once. A session expiry is not an error: in-flight items of
// the lost session are abandoned uncompleted and the worker rejoins under
// the new session.
func (w *Worker) Run(ctx context.Context) (err error) {
	defer w.client.Close()
	if err := w.openOutputs(); err != nil {
		return err
	}
	finalTotals := w.keepTotals(ctx)
	defer func() {
		finalTotals()
		err = errors.Join(err, w.closeOutputs())
		w.logSummary()
	}()
	stopReports := w.startReports(ctx)
	defer stopReports()

	// Config first: nothing is fetched before a config is in force.
	cfgCtx, stopCfg := context.WithCancel(context.Background())
	defer stopCfg()
	if err := w.watchConfig(ctx, cfgCtx); err != nil {
		return err
	}

	// workCtx bounds in-flight fetches; it outlives ctx by StopTimeout.
	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	claimCtx, stopClaiming := context.WithCancel(ctx)
	defer stopClaiming()
	go w.watchDrain(claimCtx, stopClaiming)
	doneErr := w.watchDone(claimCtx, stopClaiming)

	var inflight sync.WaitGroup
	w.runSessions(claimCtx, workCtx, &inflight)
	w.awaitInFlight(&inflight, stopWork)
	return doneErr()
}

// startReports starts what reports on the worker while it runs: the
// Prometheus gauges and the progress lines until the returned stop is
// called or ctx ends, and the connection-state log lines and session-state
// metric until ctx ends or the client closes.
func (w *Worker) startReports(ctx context.Context) (stop func()) {
	rctx, stop := context.WithCancel(ctx)
	go w.feedGauges(rctx)
	if w.opts.ProgressInterval > 0 {
		go w.logProgress(rctx, w.opts.ProgressInterval)
	}
	go w.reportConnection(ctx)
	if w.metrics != nil {
		go func() {
			for ch := range w.client.Subscribe(ctx) {
				w.metrics.session(ch.State)
			}
		}()
	}
	return stop
}

// watchDone, with ExitWhenDone, calls stop once the whole crawl is done
// (waitDone). The returned function gives waitDone's error if it failed
// otherwise than by ctx's end, and nil until then or without ExitWhenDone.
func (w *Worker) watchDone(ctx context.Context, stop func()) (failed func() error) {
	var doneErr atomic.Pointer[error]
	if w.opts.ExitWhenDone {
		go func() {
			if derr := w.waitDone(ctx); derr == nil {
				w.log.Info("crawl is done: no ready item, claim, post or backlog left", "quiet", w.opts.QuietPeriod)
				w.progress.stopping("crawl done")
				stop()
			} else if !errors.Is(derr, context.Canceled) {
				doneErr.Store(&derr)
			}
		}()
	}
	return func() error {
		if e := doneErr.Load(); e != nil {
			return *e
		}
		return nil
	}
}

// runSessions runs the worker under one ZooKeeper session after another
// (runSession) until claimCtx ends. After a session expiry it rejoins under
// the client's new session; after the disconnection guard suspended a
// session that may still live, it first waits until the server confirms
// that session (then it goes on in it) or it ends.
func (w *Worker) runSessions(claimCtx, workCtx context.Context, inflight *sync.WaitGroup) {
	for claimCtx.Err() == nil {
		sess, err := w.client.Session(claimCtx)
		if err != nil {
			return
		}
		w.log.Info("session established", "session", sess.String())
		w.runSession(claimCtx, workCtx, sess, inflight)
		if claimCtx.Err() == nil && sess.Ctx().Err() == nil {
			// Suspended by guardConnection: the session may still live.
			if w.awaitSessionConfirmed(claimCtx, sess, time.Now()) {
				continue
			}
		}
		if claimCtx.Err() == nil {
			w.log.Warn("ZooKeeper session expired: in-flight items abandoned, rejoining", "session", sess.String())
			w.metrics.sessionExpired()
		}
	}
}

// awaitInFlight is the graceful stop's end: it lets in-flight items finish
// for StopTimeout, then cancels their work with stopWork (they are
// abandoned and their claims released) and waits until they are.
func (w *Worker) awaitInFlight(inflight *sync.WaitGroup, stopWork func()) {
	finished := make(chan struct{})
	go func() { inflight.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(w.opts.StopTimeout):
		w.log.Warn("stop deadline reached: abandoning in-flight items", "in_flight", w.counters.inFlight.Load())
		stopWork()
		<-finished
	}
}

// openOutputs opens the output directory's WARC writer and crawl log as the
// pipeline's store.
func (w *Worker) openOutputs() error {
	disk, err := openDiskStore(w.opts, w.log)
	if err != nil {
		return err
	}
	disk.syncer.OnRound(w.metrics.outputSynced)
	w.store = disk
	return nil
}

// closeOutputs closes the pipeline's store (storeCloser), the fetcher's
// idle connections (fetcherCloser) and the digest index's.
func (w *Worker) closeOutputs() error {
	w.dedup.close()
	w.renders.close()
	if f, ok := w.fetcher.(fetcherCloser); ok {
		f.Close()
	}
	if s, ok := w.store.(storeCloser); ok {
		return s.Close()
	}
	return nil
}

// broadcast wakes every waiter at once: Wait returns a channel that Fire
// closes. The zero value is ready to use.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns a channel closed by the next Fire.
func (b *broadcast) Wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Fire wakes every current waiter.
func (b *broadcast) Fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
