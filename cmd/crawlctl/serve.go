package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
)

//go:embed web
var webFiles embed.FS

// historyPoints is how many pages/s samples the dashboard's chart keeps.
const historyPoints = 300

// maxDeadLettersShown is how many dead letters the dashboard lists.
const maxDeadLettersShown = 20

var serveCommand = &command{
	name: "serve",
	args: "[--addr 127.0.0.1:8080] [--interval 2s] [--report-dir DIR]...",
	about: `Serves a live dashboard of the crawl at http://ADDR/: the state, every
worker (version, config version, pages, pages/s, errors, claims in flight,
owned shards, heartbeat), the queue depth of every shard as a heat map,
pages per second over time as a chart, the dead letters, and the config with
its version. Buttons and a form pause, resume, drain (and cancel a drain),
requeue the dead letters and set config keys: they run the same code as the
crawlctl commands, with the same validation, and show their output.

The data is read from ZooKeeper once every --interval, whatever the number
of open pages; the page refreshes itself at that pace. The JSON behind it is
at /api/status. Everything the page needs is in the binary (Chart.js is
vendored with Go's embed): no network access, no build step.

There is no login: anyone who can reach ADDR can pause or drain the crawl.
Keep the default loopback address and reach it through an SSH tunnel
(ssh -L 8080:127.0.0.1:8080 host), or put an authenticating proxy in front.
Changes need the page's per-process token (a header the page sends), so
other web sites cannot post to it from a browser.

With --report-dir (the workers' output folders, as 'crawlctl report'
takes), /report shows the crawl reports read from their crawl logs at each
request, and /api/report has them as JSON.`,
	examples: `  crawlctl --crawl docs serve                      # http://127.0.0.1:8080/
  crawlctl --crawl docs serve --addr 127.0.0.1:9000 --interval 5s`,
	setup: func(fs *pflag.FlagSet) runFunc {
		addr := fs.String("addr", "127.0.0.1:8080", "listen address host:port of the dashboard (keep it on loopback unless a proxy guards it)")
		interval := fs.Duration("interval", 2*time.Second, "how often the dashboard reads ZooKeeper and the page refreshes (at least 500ms)")
		reportDirs := fs.StringSlice("report-dir", nil, "workers' output folders whose crawl logs /report reads (repeatable; none: no /report)")
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) > 0 {
				return cli.Usage("serve takes no arguments, got %q", args)
			}
			if *interval < 500*time.Millisecond {
				return cli.Usage("--interval %v: must be at least 500ms", *interval)
			}
			if len(*reportDirs) > 0 {
				if _, err := crawlreport.Find(*reportDirs); err != nil {
					return fmt.Errorf("--report-dir: %w", err)
				}
			}
			ln, err := net.Listen("tcp", *addr)
			if err != nil {
				return fmt.Errorf("--addr %s: %w", *addr, err)
			}
			d, err := newDashboard(ctx, c, *interval)
			if err != nil {
				ln.Close()
				return err
			}
			d.reportDirs = *reportDirs
			if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
				fmt.Fprintf(c.stderr(), "warning: --addr %s is not loopback: anyone who can reach it can pause, drain or reconfigure crawl %s\n", *addr, c.g.crawl)
			}
			fmt.Fprintf(c.stdout(), "dashboard of crawl %s at http://%s/ (Ctrl-C to stop)\n", c.g.crawl, ln.Addr())
			return d.serve(ctx, ln)
		}
	},
}

// dashboard is crawlctl serve's state: the latest snapshot, the pages/s
// history, and the token that guards the actions.
type dashboard struct {
	c        *ctl
	q        *coord.Queue
	interval time.Duration
	token    string
	page     *template.Template
	kick     chan struct{} // an action asks for a refresh now
	// reportDirs are the folders /report reads (serve --report-dir).
	reportDirs []string

	mu      sync.Mutex
	latest  dashboardDoc
	history []historyPoint
}

// dashboardDoc is the JSON of /api/status.
type dashboardDoc struct {
	Status      *statusDoc     `json:"status"`
	Error       string         `json:"error,omitempty"` // the last refresh failed
	ConfigDoc   string         `json:"config_doc"`      // R/config as stored
	DeadLetters string         `json:"dead_letters"`    // 'requeue-failed --list' of the first ones
	History     []historyPoint `json:"history"`
	Interval    float64        `json:"interval_s"`
}

type historyPoint struct {
	Time      time.Time `json:"t"`
	PagesPerS *float64  `json:"pages_per_s"`
}

func newDashboard(ctx context.Context, c *ctl, interval time.Duration) (*dashboard, error) {
	q, err := c.openQueue(ctx)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	page, err := template.ParseFS(webFiles, "web/index.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard template: %w", err)
	}
	return &dashboard{c: c, q: q, interval: interval, token: hex.EncodeToString(tok), page: page, kick: make(chan struct{}, 1)}, nil
}

// handler returns the dashboard's routes.
func (d *dashboard) handler() http.Handler {
	static, _ := fs.Sub(webFiles, "web")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.index)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/status", d.status)
	mux.HandleFunc("POST /api/action", d.action)
	mux.HandleFunc("GET /report", d.report)
	mux.HandleFunc("GET /api/report", d.report)
	return mux
}

// serve refreshes the data every interval and serves HTTP on ln until ctx
// ends (Ctrl-C), which is a normal exit.
func (d *dashboard) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: d.handler(), ReadHeaderTimeout: 5 * time.Second}
	go d.refreshLoop(ctx)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// refreshLoop takes a snapshot every interval (the same data collection as
// status) until ctx ends.
func (d *dashboard) refreshLoop(ctx context.Context) {
	rates := newRateTracker()
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		d.refresh(ctx, rates)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.kick:
		}
	}
}

func (d *dashboard) refresh(ctx context.Context, rates *rateTracker) {
	snap, err := d.c.snapshot(ctx, rates)
	doc := dashboardDoc{Interval: d.interval.Seconds()}
	if err != nil {
		doc.Error = err.Error()
	} else {
		doc.Status = snap
		if data, _, err := d.c.readConfig(ctx); err == nil {
			doc.ConfigDoc = string(data)
		}
		doc.DeadLetters = d.deadLetters(ctx)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil && d.latest.Status != nil {
		doc.Status, doc.ConfigDoc, doc.DeadLetters = d.latest.Status, d.latest.ConfigDoc, d.latest.DeadLetters
	}
	if snap != nil {
		d.history = append(d.history, historyPoint{Time: snap.Time, PagesPerS: snap.PagesPerS})
		if len(d.history) > historyPoints {
			d.history = d.history[len(d.history)-historyPoints:]
		}
	}
	d.latest = doc
}

// deadLetters is 'requeue-failed --list' of the first maxDeadLettersShown.
func (d *dashboard) deadLetters(ctx context.Context) string {
	cctx, cancel := context.WithTimeout(ctx, d.c.g.timeout)
	defer cancel()
	names, err := d.q.Failed(cctx)
	if err != nil {
		return "could not list dead letters: " + err.Error()
	}
	if len(names) == 0 {
		return ""
	}
	var buf bytes.Buffer
	shown := d.c.withOutput(&buf)
	if err := shown.listFailed(ctx, d.q, names[:min(len(names), maxDeadLettersShown)]); err != nil {
		return err.Error()
	}
	if len(names) > maxDeadLettersShown {
		fmt.Fprintf(&buf, "(the first %d of %d shown; 'crawlctl requeue-failed --list' lists all)\n", maxDeadLettersShown, len(names))
	}
	return buf.String()
}

func (d *dashboard) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	err := d.page.Execute(w, map[string]any{
		"Crawl": d.c.g.crawl, "Root": d.c.root, "ZK": d.c.g.zk, "Token": d.token,
		"IntervalMS": d.interval.Milliseconds(), "Version": cli.Version(), "Report": len(d.reportDirs) > 0,
	})
	if err != nil {
		d.c.log.Error("dashboard page", "error", err)
	}
}

func (d *dashboard) status(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	doc := d.latest
	doc.History = append([]historyPoint(nil), d.history...)
	d.mu.Unlock()
	writeJSON(w, http.StatusOK, doc)
}

// actionResult is the JSON answer of /api/action: what the crawlctl
// command printed, or its error.
type actionResult struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
}

// actions maps the dashboard's buttons to crawlctl command lines.
var actions = map[string][]string{
	"pause":        {"pause"},
	"resume":       {"resume"},
	"drain":        {"drain"},
	"drain-cancel": {"drain", "--cancel"},
	"requeue-all":  {"requeue-failed", "--all"},
	"config-set":   {"config set"}, // + the form's key=value lines
}

// action runs one change (form field "action", and "assignments" for
// config-set: key=value lines) through the crawlctl command that makes it,
// so it gets the same validation and output. It needs the page's token in
// the X-Zkcrawl-Token header: a cross-site form post cannot send it.
func (d *dashboard) action(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("X-Zkcrawl-Token"); subtle.ConstantTimeCompare([]byte(got), []byte(d.token)) != 1 {
		writeJSON(w, http.StatusForbidden, actionResult{Error: "missing or wrong X-Zkcrawl-Token header: reload the dashboard page"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, actionResult{Error: "form: " + err.Error()})
		return
	}
	name := r.PostForm.Get("action")
	line, ok := actions[name]
	if !ok {
		writeJSON(w, http.StatusBadRequest, actionResult{Error: fmt.Sprintf("unknown action %q", name)})
		return
	}
	args := append([]string(nil), line[1:]...)
	if name == "config-set" {
		for _, l := range strings.Split(r.PostForm.Get("assignments"), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				args = append(args, l)
			}
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*d.c.g.timeout)
	defer cancel()
	out, err := d.run(ctx, line[0], args)
	res := actionResult{OK: err == nil, Output: out}
	status := http.StatusOK
	if err != nil {
		res.Error = err.Error()
		status = http.StatusUnprocessableEntity
	}
	d.c.log.Info("dashboard action", "action", name, "args", args, "remote", r.RemoteAddr, "error", res.Error)
	writeJSON(w, status, res)
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// run runs one crawlctl command with this dashboard's connection and
// returns what it printed.
func (d *dashboard) run(ctx context.Context, name string, args []string) (string, error) {
	cmd := findCommand(name)
	if cmd == nil {
		return "", fmt.Errorf("no command %q", name)
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	var sink bytes.Buffer
	fs.SetOutput(&sink)
	fn := cmd.setup(fs)
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	err := fn(ctx, d.c.withOutput(&buf), fs.Args())
	return buf.String(), err
}

// withOutput returns a copy of c sharing its connection whose commands
// print to w (its close does not close the shared connection: do not call it).
func (c *ctl) withOutput(w *bytes.Buffer) *ctl {
	a := *c.app
	a.stdout, a.stderr = w, w
	cp := *c
	cp.app = &a
	return &cp
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
