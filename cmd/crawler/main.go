// Command crawler runs one zkcrawl worker. Start as many as you like, on as
// many machines as you like, against the same ZooKeeper and crawl name.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/worker"
)

const about = `Runs one crawler worker of the crawl NAME (created by seeder). It joins the
crawl's worker list in ZooKeeper, owns a share of the queue shards, claims
their URLs with ephemeral znodes, fetches them politely (robots.txt, per-host
rate limits), writes WARC files and crawl.log into --out, enqueues the links it
finds and deletes each finished item. Settings come from the crawl's config
znode and change live (crawlctl config set).

If the worker dies, its ZooKeeper session ends and its claims vanish: other
workers take its URLs over after --session-timeout. SIGINT or SIGTERM stops it
gracefully: no new claims, in-flight fetches get --stop-timeout to finish.

Exit status: 0 stopped (signal, 'crawlctl drain', or --exit-when-done), 1
error (including another live worker with the same --id), 2 bad usage, 3
a drain is pending on the crawl: lift it with 'crawlctl drain --cancel'.`

const examples = `  crawler --zk 127.0.0.1:2181 --crawl docs --out ./out/w1
  crawler --zk zk1:2181,zk2:2181,zk3:2181 --crawl news --out /data/w7 --metrics-addr 127.0.0.1:9100
  crawler --zk 127.0.0.1:2181 --crawl docs --out ./out/w1 --exit-when-done   # batch crawl`

func main() { cli.Main("crawler", run) }

// exitDrainPending is the exit status of a crawler started while the crawl
// has a pending drain (systemd units list it in RestartPreventExitStatus).
const exitDrainPending = 3

func run(ctx context.Context, args []string) error {
	return crawl(ctx, args, os.LookupEnv, os.Stderr)
}

// crawlJob is what one crawler run was asked to do, its flags checked.
type crawlJob struct {
	opts           worker.Options // its Logger is the run's logger too
	connectTimeout time.Duration  // bound on worker.New
	metricsAddr    string         // "": no metrics endpoint
	pprof          bool           // serve /debug/pprof/ beside /metrics
}

// crawl runs the crawler with args, env for flag defaults from the
// environment (ZKCRAWL_*), and logs on stderr, until ctx ends, a drain or
// --exit-when-done stops the worker, or it fails.
func crawl(ctx context.Context, args []string, env func(string) (string, bool), stderr io.Writer) error {
	job, err := parseCrawlFlags(args, env, stderr)
	if err != nil {
		return err
	}
	opts, log := job.opts, job.opts.Logger
	if job.metricsAddr != "" {
		stop, err := serveMetrics(job.metricsAddr, job.pprof, &opts, log)
		if err != nil {
			return err
		}
		defer stop()
	}

	cctx, cancel := context.WithTimeout(ctx, job.connectTimeout)
	w, err := worker.New(cctx, opts)
	cancel()
	if errors.Is(err, worker.ErrUnreachable) {
		return cli.ZKConnectError(opts.Servers, job.connectTimeout, err)
	}
	if errors.Is(err, worker.ErrDrainPending) {
		return cli.WithExitStatus(exitDrainPending, err)
	}
	if err != nil {
		return err
	}
	log.Info("worker starting", "id", w.ID(), "crawl", opts.Crawl, "out", opts.OutDir, "version", opts.Version)
	if err := w.Run(ctx); err != nil {
		return err
	}
	log.Info("worker stopped", "id", w.ID())
	return nil
}

// parseCrawlFlags parses and checks the crawler's flags into the worker's
// options. Bad usage is a cli.Usage error.
func parseCrawlFlags(args []string, env func(string) (string, bool), stderr io.Writer) (*crawlJob, error) {
	fs := cli.NewFlagSet("crawler", "crawler --zk HOST:PORT[,...] --crawl NAME --out DIR [flags]", about, examples)
	fs.SetOutput(stderr)
	var opts worker.Options
	fs.StringVar(&opts.Servers, "zk", "127.0.0.1:2181", "ZooKeeper connect string host:port[,host:port...][/chroot]")
	fs.StringVar(&opts.Crawl, "crawl", "", "crawl name (required), as given to seeder")
	fs.StringVar(&opts.OutDir, "out", "", "output directory for WARC files and crawl.log (required; one per worker: a second worker on it stops at start)")
	fs.StringVar(&opts.ID, "id", "", "worker id shown in status and logs (default <hostname>-<pid>)")
	fs.DurationVar(&opts.SessionTimeout, "session-timeout", worker.DefaultSessionTimeout, "ZooKeeper session timeout: how long a dead worker's claims outlive it")
	fs.BoolVar(&opts.ExitWhenDone, "exit-when-done", false, "exit 0 once nothing is new and nothing is due: no ready item, claim, inbox post or backlog record is left anywhere but recrawl schedule entries not yet due (config recrawl) and URLs held by a host budget, seen through ZooKeeper watches (batch crawls)")
	fs.DurationVar(&opts.QuietPeriod, "quiet-period", worker.DefaultQuietPeriod, "with --exit-when-done: how much longer the crawl must stay done before exiting (0: at once; the check reads a consistent snapshot)")
	fs.DurationVar(&opts.StopTimeout, "stop-timeout", worker.DefaultStopTimeout, "on SIGINT/SIGTERM: how long in-flight fetches may finish")
	fs.Int64Var(&opts.WARCMaxBytes, "warc-max-bytes", storage.DefaultMaxFileBytes, "rotate WARC files past this size, in bytes")
	fs.DurationVar(&opts.ProgressInterval, "progress-interval", worker.DefaultProgressInterval, "log a progress line (pages, pages/s, bytes, errors by class, claims, owned shards) this often; 0: never (a summary is logged at stop anyway)")
	connectTimeout := fs.Duration("connect-timeout", 30*time.Second, "give up starting when ZooKeeper cannot be reached within this time")
	fs.BoolVar(&opts.ForbidPrivateNetworks, "forbid-private-networks", false, "never fetch from private, loopback, link-local or other special addresses, whatever the crawl config's allow_private_networks says")
	zkAuth := cli.ZKFlags(fs)
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9100; :9100 means every interface); off when empty")
	withPprof := fs.Bool("pprof", false, "with --metrics-addr: also serve Go's profiles (net/http/pprof) at http://ADDR/debug/pprof/ (e.g. go tool pprof http://ADDR/debug/pprof/profile?seconds=8 for 8 s of CPU); they show stacks and command line, so keep ADDR private")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, env); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cli.Usage("unexpected arguments %q", fs.Args())
	}
	if opts.Crawl == "" {
		return nil, cli.Usage("--crawl NAME is required")
	}
	if opts.OutDir == "" {
		return nil, cli.Usage("--out DIR is required")
	}
	log, err := newLogger(stderr)
	if err != nil {
		return nil, cli.Usage("%v", err)
	}
	if err := cli.CheckZK(opts.Servers); err != nil {
		return nil, err
	}
	if *withPprof && *metricsAddr == "" {
		return nil, cli.Usage("--pprof needs --metrics-addr")
	}
	if *connectTimeout <= 0 {
		return nil, cli.Usage("--connect-timeout %v: must be positive", *connectTimeout)
	}
	opts.Logger = log
	switch {
	case opts.ProgressInterval < 0:
		return nil, cli.Usage("--progress-interval %v: must not be negative", opts.ProgressInterval)
	case opts.ProgressInterval == 0:
		opts.ProgressInterval = -1 // the flag's 0 means off; Options' 0 means the default
	}
	opts.Version = cli.Version()
	if opts.ZK, err = zkAuth(); err != nil {
		return nil, err
	}
	return &crawlJob{opts: opts, connectTimeout: *connectTimeout, metricsAddr: *metricsAddr, pprof: *withPprof}, nil
}

// serveMetrics serves Prometheus metrics (the worker's, set in
// opts.Metrics, and the Go runtime's and process's) at
// http://addr/metrics, and with withPprof net/http/pprof's handlers at
// http://addr/debug/pprof/, until the returned func closes the server.
func serveMetrics(addr string, withPprof bool, opts *worker.Options, log *slog.Logger) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opts.Metrics, err = worker.NewMetrics(reg); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { srv.Close() }, nil
}
