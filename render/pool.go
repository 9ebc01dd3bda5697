package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// Defaults of Options, applied by New to zero fields.
const (
	// DefaultConcurrency is Options.Concurrency's default: pages at once.
	DefaultConcurrency = 2
	// DefaultMemoryMB is Options.MemoryMB's default, in MiB.
	DefaultMemoryMB = 1024
	// DefaultTimeout is Options.Timeout's default: one page's render.
	DefaultTimeout = 30 * time.Second
	// DefaultIdleQuiet is Options.IdleQuiet's default: no request for
	// this long is network idle.
	DefaultIdleQuiet = 500 * time.Millisecond
	// DefaultIdleMax is Options.IdleMax's default: one idle wait's bound.
	DefaultIdleMax = 5 * time.Second
	// DefaultMaxScrolls is Options.MaxScrolls's default: viewport-high
	// scroll steps.
	DefaultMaxScrolls = 20
	// DefaultViewportW and DefaultViewportH are the window's default
	// size in CSS pixels.
	DefaultViewportW = 1280
	DefaultViewportH = 800
	// DefaultExecPath is Debian's chromium; New falls back to "chromium",
	// "chromium-browser", "google-chrome" and "google-chrome-stable" on $PATH.
	DefaultExecPath = "/usr/bin/chromium"
)

// Options configure a Pool.
type Options struct {
	// ExecPath is the Chromium binary; "" finds one (FindChromium).
	ExecPath string
	// Concurrency is the most pages rendering at once (>= 1).
	Concurrency int
	// MemoryMB is the browser's memory budget in MiB (the summed RSS of
	// its process tree): over it one page renders at a time, and an idle
	// browser is restarted.
	MemoryMB int
	// Timeout bounds one page's whole render, its Fetcher calls included,
	// from when it has a page slot and a running browser.
	Timeout time.Duration
	// IdleQuiet is how long no request may be in flight or start for the
	// network to count as idle; IdleMax bounds one wait for it (a page
	// that polls for ever is read when IdleMax is over).
	IdleQuiet, IdleMax time.Duration
	// MaxScrolls bounds the viewport-high scroll steps (0 = default; a
	// negative value turns scrolling off).
	MaxScrolls int
	// ViewportW and ViewportH are the window size in CSS pixels.
	ViewportW, ViewportH int
	// Logger receives the pool's logs; default slog.Default().
	Logger *slog.Logger
}

// ErrNoChromium is returned by FindChromium and New when no Chromium binary
// is found.
var ErrNoChromium = errors.New("render: no chromium binary found (install Debian's chromium: make deps)")

// FindChromium returns the Chromium binary to run: path if it is given and
// exists, else DefaultExecPath, else chromium, chromium-browser or
// google-chrome(-stable) on $PATH; ErrNoChromium if none is.
func FindChromium(path string) (string, error) {
	if path != "" {
		if p, err := exec.LookPath(path); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%w: %s is not an executable", ErrNoChromium, path)
	}
	for _, name := range []string{DefaultExecPath, "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Pool renders pages in one headless Chromium process, started on the
// first Render and again after one was killed. Safe for concurrent use.
type Pool struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	b      *instance     // the running browser; nil until needed
	active int           // pages rendering now
	freed  chan struct{} // closed (and replaced) when a page ends
	closed bool
}

// instance is one running browser process.
type instance struct {
	ctx         context.Context // the browser's chromedp context
	cancel      context.CancelFunc
	cancelAlloc context.CancelFunc
	pid         int
	pages       int // pages rendering in it
	dead        bool
	// gone ends when the process is seen dead (watch) or is killed.
	gone     context.Context
	markGone context.CancelFunc
}

// watch polls every 200 ms whether b's process still runs and ends
// b.gone when it does not (a crash, a kill -9, the OOM killer).
func (b *instance) watch() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.gone.Done():
			return
		case <-t.C:
			if !alive(b.pid) {
				b.markGone()
				return
			}
		}
	}
}

// New returns a pool (no browser starts until the first Render). Errors:
// ErrNoChromium, or an option out of range, naming it.
func New(opts Options) (*Pool, error) {
	exe, err := FindChromium(opts.ExecPath)
	if err != nil {
		return nil, err
	}
	opts.ExecPath = exe
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&opts.Concurrency, DefaultConcurrency)
	def(&opts.MemoryMB, DefaultMemoryMB)
	def(&opts.MaxScrolls, DefaultMaxScrolls)
	def(&opts.ViewportW, DefaultViewportW)
	def(&opts.ViewportH, DefaultViewportH)
	for _, d := range []struct {
		v *time.Duration
		d time.Duration
	}{{&opts.Timeout, DefaultTimeout}, {&opts.IdleQuiet, DefaultIdleQuiet}, {&opts.IdleMax, DefaultIdleMax}} {
		if *d.v == 0 {
			*d.v = d.d
		}
	}
	switch {
	case opts.Concurrency < 1:
		return nil, fmt.Errorf("render: concurrency %d is below 1", opts.Concurrency)
	case opts.MemoryMB < 1:
		return nil, fmt.Errorf("render: memory budget %d MiB is below 1", opts.MemoryMB)
	case opts.Timeout < 0 || opts.IdleQuiet < 0 || opts.IdleMax < 0:
		return nil, errors.New("render: a negative timeout, idle quiet or idle max")
	case opts.ViewportW < 1 || opts.ViewportH < 1:
		return nil, fmt.Errorf("render: viewport %dx%d is empty", opts.ViewportW, opts.ViewportH)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Pool{opts: opts, log: opts.Logger, freed: make(chan struct{})}, nil
}

// ErrClosed is returned by Render after Close.
var ErrClosed = errors.New("render: pool closed")

// acquire waits for a page slot (Concurrency, or 1 while the browser is
// over its memory budget) and returns the browser to render in, started
// if none runs. Errors: ctx's, ErrClosed, or the browser's start.
func (p *Pool) acquire(ctx context.Context) (*instance, error) {
	budget := int64(p.opts.MemoryMB) << 20
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		limit := p.opts.Concurrency
		if p.b != nil && treeRSS(p.b.pid) > budget {
			limit = 1
			if p.active == 0 {
				p.log.Info("browser over its memory budget while idle: restarting it", "budget_mb", p.opts.MemoryMB)
				p.stopLocked(p.b)
			}
		}
		if p.active < limit {
			if p.b == nil {
				b, err := p.start()
				if err != nil {
					p.mu.Unlock()
					return nil, err
				}
				p.b = b
			}
			p.active++
			p.b.pages++
			b := p.b
			p.mu.Unlock()
			return b, nil
		}
		wait := p.freed
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wait:
		}
	}
}

// release ends a page in b; kill stops b (its process tree killed) so the
// next page starts a fresh browser.
func (p *Pool) release(b *instance, kill bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active--
	b.pages--
	if kill || !alive(b.pid) {
		p.killLocked(b, "its process died")
	}
	close(p.freed)
	p.freed = make(chan struct{})
}

// kill kills b's process tree (killLocked).
func (p *Pool) kill(b *instance, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked(b, why)
}

// killLocked logs why and stops b (stopLocked), once; p.mu held.
func (p *Pool) killLocked(b *instance, why string) {
	if !b.dead {
		p.log.Warn("browser killed: "+why+"; the next page starts a fresh one", "pid", b.pid, "pages_in_it", b.pages)
	}
	p.stopLocked(b)
}

// stopLocked kills b's process tree (once) and forgets it; p.mu held.
func (p *Pool) stopLocked(b *instance) {
	if !b.dead {
		b.dead = true
		b.markGone()
		killTree(b.pid)
		b.cancel()
		go b.cancelAlloc() // waits for the process and removes its profile
	}
	if p.b == b {
		p.b = nil
	}
}

// start launches a browser; p.mu held (one start at a time).
func (p *Pool) start() (*instance, error) {
	o := p.opts
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(o.ExecPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(o.ViewportW, o.ViewportH),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		// Nothing may leave the browser except through the interception:
		// every connection goes to a proxy on a port that refuses it, and
		// no host name resolves.
		chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,ServiceWorkerPaymentApps,BackForwardCache,OptimizationHints,MediaRouter,DialMediaRouteProvider,InterestFeedContentSuggestions"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("js-flags", "--max-old-space-size=512"),
		chromedp.ModifyCmdFunc(browserCmd),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(f string, a ...any) {
		p.log.Debug("chromium: " + fmt.Sprintf(f, a...))
	}))
	// The first call starts the process; it must not carry a timeout
	// (that would end the browser), so it is bounded by a timer instead.
	timer := time.AfterFunc(30*time.Second, cancel)
	_, err := chromedp.CallBrowser(bctx, browser.GetVersion, struct{}{})
	stopped := !timer.Stop()
	if err == nil && stopped {
		err = errors.New("start timed out after 30 s")
	}
	var proc *os.Process
	if err == nil {
		if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil {
			proc = c.Browser.Process()
		}
		if proc == nil {
			err = errors.New("no browser process")
		}
	}
	if err != nil {
		cancel()
		cancelAlloc()
		return nil, fmt.Errorf("render: start %s: %w", o.ExecPath, err)
	}
	p.log.Info("browser started", "exec", o.ExecPath, "pid", proc.Pid)
	b := &instance{ctx: bctx, cancel: cancel, cancelAlloc: cancelAlloc, pid: proc.Pid}
	b.gone, b.markGone = context.WithCancel(context.Background())
	go b.watch()
	return b, nil
}

// PID returns the running browser's process id, 0 when none runs.
func (p *Pool) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.b == nil {
		return 0
	}
	return p.b.pid
}

// RSS returns the running browser's memory in bytes: the summed resident
// set of its process tree (/proc), 0 when none runs.
func (p *Pool) RSS() int64 {
	pid := p.PID()
	if pid == 0 {
		return 0
	}
	return treeRSS(pid)
}

// Active returns the pages rendering now.
func (p *Pool) Active() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active
}

// Close stops the browser and returns once its process has exited and its
// profile directory is removed; renders in progress fail, later ones
// return ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	b := p.b
	p.closed = true
	if b != nil {
		p.stopLocked(b)
	}
	p.mu.Unlock()
	if b != nil {
		b.cancelAlloc()
	}
	return nil
}
