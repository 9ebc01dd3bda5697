// Package worker runs one zkcrawl crawler worker: it joins a crawl in
// ZooKeeper, owns a share of the frontier's shards by rendezvous hashing over
// the live workers, claims their items, fetches them politely, writes WARC
// records and crawl log lines, enqueues the links it finds and completes the
// items. The protocols are those of docs/design.md.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
)

// Options configure one worker. Servers, Crawl and OutDir are required.
type Options struct {
	// Servers is the ZooKeeper connect string "host:port,host:port[/chroot]".
	Servers string
	// Crawl is the crawl name; its root znode is Root(Crawl).
	Crawl string
	// OutDir receives the WARC files and crawl.log; created if missing.
	OutDir string
	// ID names this worker in R/workers, claims and the crawl log; default
	// "<hostname>-<pid>".
	ID string
	// SessionTimeout is the ZooKeeper session timeout (default 10s): how
	// long a killed worker's claims outlive it.
	SessionTimeout time.Duration
	// ExitWhenDone makes Run return nil once the whole crawl is done: every
	// queue shard empty and no claim held anywhere for QuietPeriod.
	ExitWhenDone bool
	// QuietPeriod is how long the crawl must look done before ExitWhenDone
	// exits (default 2s).
	QuietPeriod time.Duration
	// StopTimeout bounds how long in-flight items may finish after Run's
	// context is cancelled before they are abandoned (default 10s).
	StopTimeout time.Duration
	// HeartbeatInterval is how often the R/workers status node is
	// refreshed (default 2s).
	HeartbeatInterval time.Duration
	// WARCMaxBytes rotates WARC files past this size (default 1 GiB).
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
	// ZK are extra coord.Connect options, e.g. coord.WithAuth (then every
	// znode the worker creates is readable and writable by those
	// credentials only).
	ZK []coord.Option
	// ForbidPrivateNetworks refuses private, loopback, link-local and other
	// special addresses (fetch.BlockedAddr) whatever the crawl config's
	// allow_private_networks says: whoever can write the config cannot
	// point this worker at its own network.
	ForbidPrivateNetworks bool
}

// CrawlsRoot is the znode under which every crawl's root lives (under the
// connect string's chroot, if any).
const CrawlsRoot = "/zkcrawl"

var crawlName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Root returns the crawl's root znode path, "/zkcrawl/<name>". Errors: the
// name is not 1..128 characters of [A-Za-z0-9._-] starting with a letter or
// digit.
func Root(name string) (string, error) {
	if !crawlName.MatchString(name) {
		return "", fmt.Errorf("crawl name %q: want 1..128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit", name)
	}
	return CrawlsRoot + "/" + name, nil
}

// ErrCrawlNotFound is returned by Run when the crawl's znodes do not exist:
// run the seeder first.
var ErrCrawlNotFound = errors.New("crawl not found in ZooKeeper (run the seeder first)")

// ErrUnreachable is returned by New when no ZooKeeper session could be
// established before its context ended (wrapped with the last connection
// error).
var ErrUnreachable = errors.New("ZooKeeper unreachable")

// Worker is one running crawler worker. Create it with New, then call Run.
type Worker struct {
	opts   Options
	root   string
	log    *slog.Logger
	client *coord.Client
	queue  *coord.Queue
	front  *frontier.Frontier

	fetcher *fetch.Fetcher
	robots  *fetch.Robots
	polite  *fetch.Politeness
	warc    *storage.Writer
	clog    *storage.CrawlLog
	syncer  *storage.GroupSync // group fsync of clog and warc before completions
	outputs outputHealth       // whether writes to clog and warc work

	live   atomic.Pointer[liveConfig] // the config in force
	cfgErr atomic.Pointer[string]     // last rejected config, "" when none
	view   atomic.Pointer[string]     // the member list shard ownership follows (memberView)
	wake   broadcast                  // fired when the config or a host slot changes
	slots  *hostSlots                 // claims held per host, and shards waiting for them
	groups groupWakes                 // wakes the manager of an owned shard group

	dropLogMu  sync.Mutex
	dropLogged map[string]bool // "reason host" already logged

	deadMu    sync.Mutex // guards deadCount, deadAt (deadLettersFull)
	deadCount int64
	deadAt    time.Time

	counters counters
	metrics  *Metrics
	progress *progress             // progress lines and the stop summary (progress.go)
	owned    atomic.Pointer[[]int] // shards owned now, sorted (gauges.go)
	handoffs *handoffState         // shards handed over to us, hosts spent for them
	standby  atomic.Bool           // out of the worker list while output writes fail
}

// liveConfig is one applied config version with what is derived from it.
type liveConfig struct {
	cfg     config.Config
	version int32
	scope   *frontier.Scope
	// reqScope judges page requisites: mode requisites_scope, the same
	// include/exclude/max_depth as scope.
	reqScope *frontier.Scope
}

// New validates opts and connects to ZooKeeper. Errors: a missing option,
// a bad crawl name, an unreachable ensemble (ErrUnreachable, after ctx
// ends), a crawl that was never seeded (ErrCrawlNotFound), a pending drain
// (ErrDrainPending) or an id held by a live worker (ErrIDInUse).
func New(ctx context.Context, opts Options) (*Worker, error) {
	if opts.Servers == "" {
		return nil, errors.New("worker: no ZooKeeper servers given (--zk host:port,...)")
	}
	if opts.OutDir == "" {
		return nil, errors.New("worker: no output directory given (--out DIR)")
	}
	root, err := Root(opts.Crawl)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if opts.ID == "" {
		h, _ := os.Hostname()
		opts.ID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if !crawlName.MatchString(opts.ID) {
		return nil, fmt.Errorf("worker: id %q: want 1..128 characters of A-Z a-z 0-9 . _ -", opts.ID)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 10 * time.Second
	}
	if opts.QuietPeriod <= 0 {
		opts.QuietPeriod = 2 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 2 * time.Second
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("worker", opts.ID)
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: output directory %s: %w", opts.OutDir, err)
	}
	w := &Worker{
		opts:     opts,
		root:     root,
		log:      log,
		slots:    newHostSlots(),
		metrics:  opts.Metrics,
		progress: newProgress(),
		handoffs: newHandoffState(),
	}
	w.client, err = coord.Connect(ctx, opts.Servers, append([]coord.Option{coord.WithSessionTimeout(opts.SessionTimeout),
		coord.WithLogger(log), coord.WithObserver(opts.Metrics.ObserveZK), coord.WithOwner(opts.ID)}, opts.ZK...)...)
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
	w.queue = w.front.Queue()
	w.front.SetLocalOwner(w.groups.offer) // links of our own groups skip the inbox
	if err := w.preflight(ctx); err != nil {
		w.client.Close()
		return nil, err
	}
	return w, nil
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
	gctx, stopGauges := context.WithCancel(ctx)
	defer stopGauges()
	go w.feedGauges(gctx)
	if w.opts.ProgressInterval > 0 {
		pctx, stopProgress := context.WithCancel(ctx)
		defer stopProgress()
		go w.logProgress(pctx, w.opts.ProgressInterval)
	}

	go w.reportConnection(ctx)
	if w.metrics != nil {
		go func() {
			for ch := range w.client.Subscribe(ctx) {
				w.metrics.session(ch.State)
			}
		}()
	}

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
	var doneErr atomic.Pointer[error]
	if w.opts.ExitWhenDone {
		go func() {
			if derr := w.waitDone(claimCtx); derr == nil {
				w.log.Info("crawl is done: every shard empty and no claim held", "quiet", w.opts.QuietPeriod)
				w.progress.stopping("crawl done")
				stopClaiming()
			} else if !errors.Is(derr, context.Canceled) {
				doneErr.Store(&derr)
			}
		}()
	}

	var inflight sync.WaitGroup
	for claimCtx.Err() == nil {
		sess, err := w.client.Session(claimCtx)
		if err != nil {
			break
		}
		w.log.Info("session established", "session", sess.String())
		w.runSession(claimCtx, workCtx, sess, &inflight)
		if claimCtx.Err() == nil && sess.Ctx().Err() == nil {
			// Suspended by guardConnection: the session may still live.
			if w.awaitSessionConfirmed(claimCtx, sess) {
				continue
			}
		}
		if claimCtx.Err() == nil {
			w.log.Warn("ZooKeeper session expired: in-flight items abandoned, rejoining", "session", sess.String())
			w.metrics.sessionExpired()
		}
	}

	// Graceful stop: let in-flight items finish, then abandon them.
	finished := make(chan struct{})
	go func() { inflight.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(w.opts.StopTimeout):
		w.log.Warn("stop deadline reached: abandoning in-flight items", "in_flight", w.counters.inFlight.Load())
		stopWork()
		<-finished
	}
	if e := doneErr.Load(); e != nil {
		return *e
	}
	return nil
}

func (w *Worker) openOutputs() error {
	var err error
	w.warc, err = storage.NewWriter(w.opts.OutDir, "zkcrawl-"+w.opts.ID, storage.WriterOptions{
		MaxFileBytes: w.opts.WARCMaxBytes,
		WorkerID:     w.opts.ID,
		Version:      w.opts.Version,
		Description:  "zkcrawl crawl " + w.opts.Crawl,
		Logger:       w.log,
	})
	if err != nil {
		return fmt.Errorf("worker: WARC writer in %s: %w", w.opts.OutDir, err)
	}
	w.clog, err = storage.OpenCrawlLog(filepath.Join(w.opts.OutDir, "crawl.log"))
	if err != nil {
		w.warc.Close()
		return fmt.Errorf("worker: crawl log in %s: %w", w.opts.OutDir, err)
	}
	w.syncer = storage.NewGroupSync(0, w.clog.Sync, w.warc.Sync)
	return nil
}

func (w *Worker) closeOutputs() error {
	var errs []error
	if w.warc != nil {
		errs = append(errs, w.warc.Close())
	}
	if w.clog != nil {
		errs = append(errs, w.clog.Close())
	}
	if w.fetcher != nil {
		w.fetcher.Close()
	}
	return errors.Join(errs...)
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
