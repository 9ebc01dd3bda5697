package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
)

// Defaults and limits of WebConfig.
const (
	// WebDefaultHosts is the number of virtual hosts when WebConfig.Hosts is 0.
	WebDefaultHosts = 5
	// WebDefaultPagesPerHost is the number of /p/<n> pages per host when
	// WebConfig.PagesPerHost is 0.
	WebDefaultPagesPerHost = 50
	// WebDefaultSlowDelay is how long /slow.html sleeps when WebConfig.SlowDelay is 0.
	WebDefaultSlowDelay = 2 * time.Second
	// WebDefaultLargeBytes is the size in bytes of /large.html when
	// WebConfig.LargeBytes is 0 (3 MiB).
	WebDefaultLargeBytes = 3 << 20

	// webMaxHosts bounds the listeners (one file descriptor each, plus one
	// per client connection): 20,000 fits the usual hard RLIMIT_NOFILE,
	// which Go raises the soft limit to at start-up (os package, Go 1.19+).
	webMaxHosts        = 20_000
	webMaxPagesPerHost = 1_000_000
	webMaxLinksPerPage = 1000
	webMinLargeBytes   = 1 << 10
)

// Paths of the special pages served on every host when WebConfig.Features is
// on. Each entry path is linked from one of the pages /p/0../p/3, so with the
// chain p/n -> p/n+1 an entry is at most 5 hops from the host's seed and the
// pages behind it at most 6.
const (
	// WebPathRedirect answers 301 to /redirect/302, which answers 302 to
	// WebPathRedirectFinal (a 200 HTML page without links).
	WebPathRedirect = "/redirect/301"
	// WebPathRedirectFinal is the end of the redirect chain.
	WebPathRedirectFinal = "/redirect/final.html"
	// WebPathLoop answers 302 to /loop/b, which answers 302 back to /loop/a.
	WebPathLoop = "/loop/a"
	// WebPathMissing answers 404 (so does every unknown path).
	WebPathMissing = "/missing.html"
	// WebPathFlaky answers 500 to its first request per host and 200 (HTML
	// linking to /flaky/child.html, reachable only that way) afterwards.
	WebPathFlaky = "/flaky.html"
	// WebPathSlow sleeps WebConfig.SlowDelay before answering 200, honouring
	// the request context.
	WebPathSlow = "/slow.html"
	// WebPathLarge is a text/html page of exactly WebConfig.LargeBytes bytes
	// without links.
	WebPathLarge = "/large.html"
	// WebPathCalendar starts the calendar trap: /cal/YYYY/MM links to the next
	// month, forever.
	WebPathCalendar = "/cal/2024/01"
	// WebPathPrivate is a directory whose index links to /hidden/child.html
	// (reachable only from it). Put WebPathPrivate into
	// WebConfig.RobotsDisallow to get a page reachable only via a
	// robots-disallowed path.
	WebPathPrivate = "/private/"
)

// WebConfig describes a synthetic web. The zero value is usable: 5 hosts of
// 50 pages, chain links only, no special pages.
type WebConfig struct {
	// Seed makes the link graph and filler text deterministic: two webs with
	// the same config serve the same pages, apart from the port numbers.
	Seed int64
	// Hosts is the number of virtual hosts, each its own HTTP server on
	// 127.0.0.1:<free port> (so each is its own crawler politeness key,
	// host:port); 0 means WebDefaultHosts, at most 20,000. Each host costs
	// one file descriptor for its listener and one per client connection.
	Hosts int
	// PagesPerHost is the number of pages /p/0 .. /p/<PagesPerHost-1> per
	// host; 0 means WebDefaultPagesPerHost, at most 1,000,000.
	PagesPerHost int
	// HostPages, when non-nil, gives each host its own page count, by host
	// index (len must be Hosts, each 1..1,000,000), overriding PagesPerHost.
	HostPages []int
	// HomeLinksAll makes each host's "/" link every /p/<n> of the host, so
	// all its pages are at depth 1 and known after one fetch (a wide, flat
	// site whose crawl time is bounded by politeness, not by discovery).
	HomeLinksAll bool
	// LinksPerPage is the number of random links on each /p/<n> page, in
	// addition to the chain link to /p/<n+1>; 0 means chain links only.
	LinksPerPage int
	// CrossHostShare in [0,1] is the share of random links that point to a
	// page of another host.
	CrossHostShare float64
	// Features turns on the special pages (see the WebPath* constants and
	// web_graph.go) on every host.
	Features bool
	// RobotsDisallow lists path patterns written as "Disallow:" lines for
	// "User-agent: *" in every host's robots.txt (RFC 9309 section 2.2.2).
	// Each must start with "/" or "*". Default none.
	RobotsDisallow []string
	// RobotsStatus overrides the HTTP status of /robots.txt per host index
	// (2xx, 4xx or 5xx). RFC 9309 section 2.3.1: 4xx means "unavailable"
	// (crawl everything), 5xx means "unreachable" (crawl nothing).
	RobotsStatus map[int]int
	// HostDelay delays every answer of a host, by host index, robots.txt
	// included: a slow host. The handler waits honouring the request's
	// context (a client gone answers 503 at once, as WebPathSlow). Default
	// none.
	HostDelay map[int]time.Duration
	// CrawlDelay, when > 0, is written as "Crawl-delay: <seconds>" into
	// every robots.txt (a non-standard but common extension).
	CrawlDelay time.Duration
	// HostCrawlDelay overrides CrawlDelay per host index (0 writes none).
	HostCrawlDelay map[int]time.Duration
	// Latency, when its Median is > 0, delays every answer (robots.txt
	// included) by a lognormal draw that is fixed per (Seed, host, target),
	// on top of HostDelay; see WebLatency.
	Latency WebLatency
	// HostFault makes hosts, by index, fail at the connection: dead
	// (connection refused), reset (TCP RST after the request is read) or
	// timing out (never answers); see WebFault. Their URLs are in the
	// ground truth with Status 0 and yield nothing.
	HostFault map[int]WebFault
	// SlowDelay is how long WebPathSlow sleeps; 0 means WebDefaultSlowDelay.
	SlowDelay time.Duration
	// LargeBytes is the size in bytes of WebPathLarge; 0 means
	// WebDefaultLargeBytes, at least 1 KiB.
	LargeBytes int
	// Mutate makes every host's "/" and /p/<n> change over time at known
	// random rates, with validators and 304s (web_mutate.go); the zero
	// value means pages never change.
	Mutate WebMutate
	// Logger receives start/stop lines (Info) and one line per request
	// (Debug); nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns cfg with zero fields replaced by their defaults, or an
// error naming the first invalid field.
func (cfg WebConfig) withDefaults() (WebConfig, error) {
	if cfg.Hosts == 0 {
		cfg.Hosts = WebDefaultHosts
	}
	if cfg.PagesPerHost == 0 {
		cfg.PagesPerHost = WebDefaultPagesPerHost
	}
	if cfg.SlowDelay == 0 {
		cfg.SlowDelay = WebDefaultSlowDelay
	}
	if cfg.LargeBytes == 0 {
		cfg.LargeBytes = WebDefaultLargeBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.Hosts < 1 || cfg.Hosts > webMaxHosts:
		return cfg, fmt.Errorf("%w: Hosts %d: want 1..%d", ErrWebConfig, cfg.Hosts, webMaxHosts)
	case cfg.PagesPerHost < 1 || cfg.PagesPerHost > webMaxPagesPerHost:
		return cfg, fmt.Errorf("%w: PagesPerHost %d: want 1..%d", ErrWebConfig, cfg.PagesPerHost, webMaxPagesPerHost)
	case cfg.LinksPerPage < 0 || cfg.LinksPerPage > webMaxLinksPerPage:
		return cfg, fmt.Errorf("%w: LinksPerPage %d: want 0..%d", ErrWebConfig, cfg.LinksPerPage, webMaxLinksPerPage)
	case !(cfg.CrossHostShare >= 0 && cfg.CrossHostShare <= 1):
		return cfg, fmt.Errorf("%w: CrossHostShare %v: want 0..1", ErrWebConfig, cfg.CrossHostShare)
	case cfg.CrawlDelay < 0:
		return cfg, fmt.Errorf("%w: CrawlDelay %v: must not be negative", ErrWebConfig, cfg.CrawlDelay)
	case cfg.SlowDelay < 0:
		return cfg, fmt.Errorf("%w: SlowDelay %v: must not be negative", ErrWebConfig, cfg.SlowDelay)
	case cfg.LargeBytes < webMinLargeBytes:
		return cfg, fmt.Errorf("%w: LargeBytes %d: want at least %d", ErrWebConfig, cfg.LargeBytes, webMinLargeBytes)
	}
	for _, p := range cfg.RobotsDisallow {
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "*") {
			return cfg, fmt.Errorf("%w: RobotsDisallow %q: must start with \"/\" or \"*\" (RFC 9309 section 2.2.2)", ErrWebConfig, p)
		}
		if strings.ContainsAny(p, "\r\n#") {
			return cfg, fmt.Errorf("%w: RobotsDisallow %q: must not contain CR, LF or '#'", ErrWebConfig, p)
		}
	}
	for h, st := range cfg.RobotsStatus {
		if h < 0 || h >= cfg.Hosts {
			return cfg, fmt.Errorf("%w: RobotsStatus host index %d: want 0..%d", ErrWebConfig, h, cfg.Hosts-1)
		}
		if !(st >= 200 && st < 300) && !(st >= 400 && st < 600) {
			return cfg, fmt.Errorf("%w: RobotsStatus[%d] = %d: want 2xx, 4xx or 5xx", ErrWebConfig, h, st)
		}
	}
	if err := cfg.validateWide(); err != nil {
		return cfg, err
	}
	if err := cfg.validateMutate(); err != nil {
		return cfg, err
	}
	for h, d := range cfg.HostDelay {
		if h < 0 || h >= cfg.Hosts {
			return cfg, fmt.Errorf("%w: HostDelay host index %d: want 0..%d", ErrWebConfig, h, cfg.Hosts-1)
		}
		if d < 0 {
			return cfg, fmt.Errorf("%w: HostDelay[%d] = %v: must not be negative", ErrWebConfig, h, d)
		}
	}
	return cfg, nil
}

// ErrWebConfig is wrapped by StartWeb's errors about an invalid WebConfig.
var ErrWebConfig = errors.New("testenv: invalid web config")

// WebRequest is one request served by the synthetic web, in the order the
// responses completed.
type WebRequest struct {
	// Host is the virtual host that served it, "127.0.0.1:<port>".
	Host string
	// HostIndex is Host's index in Web.Hosts().
	HostIndex int
	// Path is the request target: escaped path plus "?query" if any.
	Path string
	// Time is when the request arrived.
	Time time.Time
	// UserAgent is the User-Agent header ("" if absent).
	UserAgent string
	// Status is the HTTP status sent; 503 when the slow page was cut short
	// by the request context (client gone or web closing); 0 when nothing
	// was sent (a resetting or timing-out host, see WebFault).
	Status int
}

// Web is a running synthetic web: one HTTP server per virtual host on
// loopback. All methods are safe for concurrent use.
type Web struct {
	cfg   WebConfig
	log   *slog.Logger
	hosts []string // "127.0.0.1:port", by host index

	servers []*http.Server
	served  sync.WaitGroup // Serve goroutines

	// baseCtx is the parent of every request context; cancelled by Close so
	// the slow and large handlers return promptly.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	filler    []string               // paragraphs of filler text
	specials  []map[string]*webRoute // per host, nil without Features
	entries   [][]webLink            // per host: links to the special pages, spread over /p/0../p/3
	homes     []*webRoute            // "/" per host
	robotsTxt [][]byte               // body of /robots.txt per host
	robots    []*robotstxt.RobotsData
	blobs     webBlobs
	flakyHits []atomic.Int64 // requests to WebPathFlaky per host
	// inFlight and maxInFlight count, per host, the requests being served
	// now and the most ever served at once (MaxInFlight).
	inFlight, maxInFlight []atomic.Int64

	mu         sync.Mutex
	reqs       []WebRequest
	arrivalLog io.Writer // nil: none, or after a write error (LogArrivals)

	active  sync.Mutex // guards running and closed
	idle    *sync.Cond // signalled when running drops to 0
	running int        // handlers running
	closed  bool       // Close has begun

	closeOnce sync.Once
	closeErr  error
}

// StartWeb starts a synthetic web described by cfg: it listens on one free
// loopback port per host and serves until Close. ctx bounds the start only.
// Errors wrap ErrWebConfig for a bad cfg, or report the failing listener.
func StartWeb(ctx context.Context, cfg WebConfig) (*Web, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	baseCtx, cancel := context.WithCancel(context.Background())
	w := &Web{
		cfg:         cfg,
		log:         cfg.Logger,
		baseCtx:     baseCtx,
		cancelBase:  cancel,
		flakyHits:   make([]atomic.Int64, cfg.Hosts),
		inFlight:    make([]atomic.Int64, cfg.Hosts),
		maxInFlight: make([]atomic.Int64, cfg.Hosts),
	}
	w.idle = sync.NewCond(&w.active)
	var lc net.ListenConfig
	listeners := make([]net.Listener, 0, cfg.Hosts)
	for range cfg.Hosts {
		if err := ctx.Err(); err != nil {
			closeAll(listeners)
			cancel()
			return nil, fmt.Errorf("testenv: start web: %w", err)
		}
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			closeAll(listeners)
			cancel()
			return nil, fmt.Errorf("testenv: start web: listen on 127.0.0.1:0: %w", err)
		}
		listeners = append(listeners, ln)
		w.hosts = append(w.hosts, ln.Addr().String())
	}
	if err := w.build(); err != nil {
		closeAll(listeners)
		cancel()
		return nil, err
	}
	errLog := slog.NewLogLogger(w.log.Handler(), slog.LevelDebug)
	for h, ln := range listeners {
		if cfg.HostFault[h] == WebFaultDead {
			// The port stays this host's name; connecting to it is refused.
			_ = ln.Close()
			w.servers = append(w.servers, nil)
			continue
		}
		srv := &http.Server{
			Handler:           w.handler(h),
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return baseCtx },
			ErrorLog:          errLog,
		}
		w.servers = append(w.servers, srv)
		w.served.Add(1)
		go func() {
			defer w.served.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				w.log.Error("synthetic web: serve failed", "host", w.hosts[h], "err", err)
			}
		}()
	}
	w.log.Info("synthetic web started", "hosts", cfg.Hosts, "pages_per_host", cfg.PagesPerHost,
		"links_per_page", cfg.LinksPerPage, "cross_host_share", cfg.CrossHostShare,
		"features", cfg.Features, "seed", cfg.Seed, "first_host", w.hosts[0],
		"change_min", cfg.Mutate.ChangeMin, "change_max", cfg.Mutate.ChangeMax)
	return w, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}

// NewWeb starts a synthetic web for a test or benchmark and closes it in
// t.Cleanup; it calls t.Fatal if the web cannot start.
func NewWeb(t testing.TB, cfg WebConfig) *Web {
	t.Helper()
	w, err := StartWeb(t.Context(), cfg)
	if err != nil {
		t.Fatalf("testenv.NewWeb: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("testenv: close web: %v", err)
		}
	})
	return w
}

// Close stops every host: it cancels in-flight requests (the slow and large
// pages return at once), closes listeners and connections, and waits for
// running handlers to return. Safe to call more than once; later calls
// return the first result. (http.Server.Shutdown is not used: it waits up to
// 5 s for connections a client opened but never used.)
func (w *Web) Close() error {
	w.closeOnce.Do(func() {
		w.cancelBase()
		var errs []error
		for i, srv := range w.servers {
			if srv == nil {
				continue // a dead host
			}
			if err := srv.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", w.hosts[i], err))
			}
		}
		w.served.Wait()
		w.active.Lock()
		w.closed = true
		for w.running > 0 {
			w.idle.Wait()
		}
		w.active.Unlock()
		w.closeErr = errors.Join(errs...)
		w.log.Info("synthetic web stopped", "hosts", len(w.hosts))
	})
	return w.closeErr
}

// enter registers a running handler; false once Close has begun.
func (w *Web) enter() bool {
	w.active.Lock()
	defer w.active.Unlock()
	if w.closed {
		return false
	}
	w.running++
	return true
}

func (w *Web) leave() {
	w.active.Lock()
	w.running--
	if w.running == 0 {
		w.idle.Broadcast()
	}
	w.active.Unlock()
}

// Config returns the effective configuration (defaults filled in).
func (w *Web) Config() WebConfig { return w.cfg }

// Hosts returns the virtual hosts as "127.0.0.1:port", by host index.
func (w *Web) Hosts() []string { return append([]string(nil), w.hosts...) }

// Seeds returns one seed URL per host, "http://127.0.0.1:port/", by host index.
func (w *Web) Seeds() []string {
	s := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		s[i] = "http://" + h + "/"
	}
	return s
}

// Pages returns the number of normal pages /p/<n> over all hosts (the sum
// of PagesOf); seeds and special pages are not counted.
func (w *Web) Pages() int {
	n := 0
	for h := range w.hosts {
		n += w.PagesOf(h)
	}
	return n
}

// PagesOf returns the number of /p/<n> pages of host index h: HostPages[h],
// or PagesPerHost without HostPages.
func (w *Web) PagesOf(h int) int {
	if w.cfg.HostPages != nil {
		return w.cfg.HostPages[h]
	}
	return w.cfg.PagesPerHost
}

// Requests returns a copy of the request log, in completion order.
func (w *Web) Requests() []WebRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WebRequest(nil), w.reqs...)
}

// MaxInFlight returns, by host index, the most requests the host has
// served at once (robots.txt included; a request counts from the handler's
// start to its end), the measure of per_host_max_in_flight at the site.
func (w *Web) MaxInFlight() []int {
	out := make([]int, len(w.maxInFlight))
	for i := range w.maxInFlight {
		out[i] = int(w.maxInFlight[i].Load())
	}
	return out
}

// enterHost counts a request of host h in flight and returns its undo.
func (w *Web) enterHost(h int) (leave func()) {
	n := w.inFlight[h].Add(1)
	for {
		m := w.maxInFlight[h].Load()
		if n <= m || w.maxInFlight[h].CompareAndSwap(m, n) {
			break
		}
	}
	return func() { w.inFlight[h].Add(-1) }
}

// ResetRequests empties the request log.
func (w *Web) ResetRequests() {
	w.mu.Lock()
	w.reqs = nil
	w.mu.Unlock()
}

// Reset empties the request log and re-arms WebPathFlaky on every host (its
// next request answers 500 again), so a second crawl sees a fresh web.
func (w *Web) Reset() {
	w.ResetRequests()
	for i := range w.flakyHits {
		w.flakyHits[i].Store(0)
	}
}

func (w *Web) record(r WebRequest) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reqs = append(w.reqs, r)
	if w.arrivalLog == nil {
		return
	}
	if err := writeArrival(w.arrivalLog, r.Time, r.Host, r.Path, r.Status, r.UserAgent); err != nil {
		w.arrivalLog = nil
		w.log.Error("synthetic web: arrival log dropped", "err", err)
	}
}

// writeArrival writes one line of an arrival log (Web.LogArrivals,
// SPA.LogArrivals): "unix_seconds<TAB>key<TAB>path<TAB>status<TAB>
// user_agent", the time to the microsecond, tabs and newlines of the user
// agent made spaces. Errors: out's.
func writeArrival(out io.Writer, at time.Time, key, path string, status int, userAgent string) error {
	ua := strings.NewReplacer("\t", " ", "\n", " ").Replace(userAgent)
	_, err := fmt.Fprintf(out, "%.6f\t%s\t%s\t%d\t%s\n", float64(at.UnixMicro())/1e6, key, path, status, ua)
	return err
}

// LogArrivals makes every later request also be written to out as one
// line, "unix_seconds<TAB>host<TAB>path<TAB>status<TAB>user_agent" (the
// arrival time to the microsecond, host "127.0.0.1:<port>", status as
// WebRequest.Status), once it is answered, as SPA.LogArrivals does: the
// site's own view of a crawl's politeness, robots.txt and requests that
// left no crawl-log line included. nil stops it. Writes are serialized;
// after a write error the log is logged once and dropped.
func (w *Web) LogArrivals(out io.Writer) {
	w.mu.Lock()
	w.arrivalLog = out
	w.mu.Unlock()
}

// robotsBody renders the robots.txt of host h (RFC 9309 section 2.2).
func (w *Web) robotsBody(h int) []byte {
	var b strings.Builder
	b.WriteString("# robots.txt of the zkcrawl synthetic web\nUser-agent: *\n")
	if len(w.cfg.RobotsDisallow) == 0 {
		b.WriteString("Disallow:\n")
	}
	for _, p := range w.cfg.RobotsDisallow {
		b.WriteString("Disallow: " + p + "\n")
	}
	if d := w.crawlDelayOf(h); d > 0 {
		b.WriteString("Crawl-delay: " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "\n")
	}
	return []byte(b.String())
}
