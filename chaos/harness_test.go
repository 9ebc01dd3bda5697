package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// sessionTimeout is the crawlers' ZooKeeper session timeout (testenv's
// 200 ms tickTime allows 0.4 .. 4 s).
const sessionTimeout = 2 * time.Second

// binDir holds the seeder and crawler binaries for the whole test binary run
// (created in TestMain, so every test reuses one build).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkcrawl-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// keepLogs copies dir's process logs (*.log) to $ZKCRAWL_CHAOS_LOGS/<test
// name>/ when the test ends, if that variable names a directory, for
// reading after a run.
func keepLogs(t *testing.T, dir string) {
	keep := os.Getenv("ZKCRAWL_CHAOS_LOGS")
	if keep == "" {
		return
	}
	t.Cleanup(func() {
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Logf("keep logs: %v", err)
			return
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				_ = os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644)
			}
		}
	})
}

// longRun reports whether the long version was asked for (ZKCRAWL_CHAOS=long).
func longRun() bool { return os.Getenv("ZKCRAWL_CHAOS") == "long" }

// binaries builds (once per test binary run) bin/seeder and bin/crawler.
func binaries(t *testing.T) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	bins, err := testenv.BuildCommands(ctx, binDir, "seeder", "crawler")
	if err != nil {
		t.Fatal(err)
	}
	return bins
}

// crawlConfig is the crawl config of the chaos tests: loopback allowed, no
// depth limit, quick retries, the given per-host rate (0 = unlimited).
func crawlConfig(rate float64) config.Config {
	c := config.Default()
	c.AllowPrivateNetworks = true
	c.MaxDepth = -1
	c.PerHostRatePerS = rate
	c.PerHostBurst = 1
	c.PerHostMaxInFlight = 1
	c.WorkerConcurrency = 16
	c.RetryBackoffMS = 100
	c.FetchTimeoutMS = 10000
	c.MaxBodyBytes = 1 << 20
	return c
}

// crawlSpec describes a crawl under test.
type crawlSpec struct {
	name   string
	zk     string // connect string for the seeder, the test's client and (by default) the crawlers
	web    testenv.WebConfig
	config config.Config
	// seederArgs are extra seeder flags (e.g. --shards); none means the
	// seeder's default queue layout.
	seederArgs []string
}

// crawl is one crawl under test: a synthetic web with its ground truth, the
// crawl created by a seeder process, a coord client of the test's own for
// reading the queue, and the crawler processes.
type crawl struct {
	t      *testing.T
	spec   crawlSpec
	dir    string
	bins   map[string]string
	web    *testenv.Web
	truth  map[string]testenv.WebExpect
	root   string
	client *coord.Client
	queue  *coord.Queue

	mu      sync.Mutex
	workers []*workerProc
	started int
}

// workerProc is one crawler process.
type workerProc struct {
	id      string
	out     string // --out directory
	logFile string // stderr and stdout
	proc    *testenv.Proc
	killed  bool
}

// logText returns the worker's process log.
func (w *workerProc) logText() string {
	b, _ := os.ReadFile(w.logFile)
	return string(b)
}

// logSize returns the current size of the worker's process log, an offset
// for logSince.
func (w *workerProc) logSize() int64 {
	st, err := os.Stat(w.logFile)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logSince returns the worker's process log from offset on.
func (w *workerProc) logSince(offset int64) string {
	s := w.logText()
	if int64(len(s)) < offset {
		return ""
	}
	return s[offset:]
}

// newCrawl starts the web, runs the seeder process and connects the test's
// coord client.
func newCrawl(t *testing.T, spec crawlSpec) *crawl {
	t.Helper()
	if spec.web.Logger == nil {
		spec.web.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &crawl{t: t, spec: spec, dir: t.TempDir(), bins: binaries(t)}
	keepLogs(t, c.dir)
	c.web = testenv.NewWeb(t, spec.web)
	var err error
	c.truth, err = c.web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	c.root, err = coord.Root(spec.name)
	if err != nil {
		t.Fatal(err)
	}

	cfgFile := filepath.Join(c.dir, "config.json")
	seedFile := filepath.Join(c.dir, "seeds.txt")
	if err := os.WriteFile(cfgFile, spec.config.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seedFile, []byte(strings.Join(c.web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	seeder := testenv.Process(t, testenv.ProcConfig{
		Path: c.bins["seeder"],
		Args: append([]string{"--zk", spec.zk, "--crawl", spec.name, "--config", cfgFile, "--seeds", seedFile,
			"--timeout", "30s"}, spec.seederArgs...),
		LogFile: filepath.Join(c.dir, "seeder.log"),
	})
	if code, err := seeder.Wait(ctx); err != nil || code != 0 {
		t.Fatalf("seeder: exit %d, %v\n%s", code, err, seeder.LogTail(20))
	}

	logf, err := os.Create(filepath.Join(c.dir, "test-coord.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	c.client, err = coord.Connect(ctx, spec.zk, coord.Config{SessionTimeout: 4 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.client.Close)
	c.queue, err = coord.OpenQueue(ctx, c.client, c.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crawl %s: %d hosts x %d pages, %d ground-truth URLs, rate %v/s per host",
		spec.name, c.web.Config().Hosts, c.web.Config().PagesPerHost, len(c.truth), spec.config.PerHostRatePerS)
	return c
}

// workerOpts are per-crawler settings.
type workerOpts struct {
	zk             string        // default: the crawl's connect string
	sessionTimeout time.Duration // default: sessionTimeout
	exitWhenDone   bool
}

// startWorker starts crawler process w<n> with its own id and --out.
func (c *crawl) startWorker(o workerOpts) *workerProc {
	c.t.Helper()
	if o.zk == "" {
		o.zk = c.spec.zk
	}
	if o.sessionTimeout == 0 {
		o.sessionTimeout = sessionTimeout
	}
	c.mu.Lock()
	c.started++
	id := fmt.Sprintf("w%d", c.started)
	c.mu.Unlock()
	w := &workerProc{id: id, out: filepath.Join(c.dir, id), logFile: filepath.Join(c.dir, id+".log")}
	args := []string{"--zk", o.zk, "--crawl", c.spec.name, "--out", w.out, "--id", id,
		"--session-timeout", o.sessionTimeout.String(), "--quiet-period", "1s", "--stop-timeout", "5s"}
	if o.exitWhenDone {
		args = append(args, "--exit-when-done")
	}
	w.proc = testenv.Process(c.t, testenv.ProcConfig{Path: c.bins["crawler"], Args: args, LogFile: w.logFile})
	c.mu.Lock()
	c.workers = append(c.workers, w)
	c.mu.Unlock()
	return w
}

// live returns the workers still running, oldest first.
func (c *crawl) live() []*workerProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*workerProc
	for _, w := range c.workers {
		if !w.proc.Exited() {
			out = append(out, w)
		}
	}
	return out
}

// all returns every worker ever started.
func (c *crawl) all() []*workerProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*workerProc(nil), c.workers...)
}

// setRate writes a new config version with per_host_rate_per_s = rate;
// the workers apply it live.
//
// The write is tried again for up to 60 s: right after a fault (a
// ZooKeeper restart on a loaded machine can take 10-20 s before it answers
// a session handshake) one write's retries (coord's 20 s budget) may not
// be enough, and the harness, unlike a worker, has nothing else to do.
func (c *crawl) setRate(rate float64) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 60*time.Second)
	defer cancel()
	cfg := c.spec.config
	cfg.PerHostRatePerS = rate
	for {
		_, err := coord.Store(c.client, c.root, coord.ConfigNode).Write(ctx, cfg.Encode(), -1)
		if err == nil {
			return
		}
		if ctx.Err() != nil || !errors.Is(err, coord.ErrConnectionLoss) {
			c.t.Fatalf("set per_host_rate_per_s %v: %v", rate, err)
		}
		c.t.Logf("set per_host_rate_per_s %v: %v; trying again", rate, err)
	}
}

// claim is one claim held in the queue, with the URL of its item when it
// could be read.
type claim struct {
	shard int
	item  string
	owner string
	url   string
}

func (cl claim) key() string { return fmt.Sprintf("%d/%s", cl.shard, cl.item) }

// claimsOf returns the claims whose owner is id (all claims when id is "").
func (c *crawl) claimsOf(ctx context.Context, id string) ([]claim, error) {
	held, err := c.queue.Claims(ctx)
	if err != nil {
		return nil, err
	}
	var out []claim
	for _, ci := range held {
		if id == "" || ci.Owner == id {
			out = append(out, claim{shard: ci.Shard, item: ci.Item, owner: ci.Owner})
		}
	}
	return out, nil
}

// killOldest kills the oldest live worker with SIGKILL (no chance to
// release anything), waits for it to die and returns it with its claims
// just before and just after the kill, deduplicated, their URLs filled in
// where the item still exists: a claim taken in between may have been
// fetched and logged too, and the killed session's claims stay readable
// until it expires.
func (c *crawl) killOldest(ctx context.Context) (*workerProc, []claim) {
	c.t.Helper()
	live := c.live()
	if len(live) == 0 {
		c.t.Fatal("no live worker left to kill")
	}
	victim := live[0]
	before, err := c.claimsOf(ctx, victim.id)
	if err != nil {
		c.t.Fatalf("claims of %s: %v", victim.id, err)
	}
	if err := victim.proc.Kill(); err != nil {
		c.t.Fatal(err)
	}
	victim.killed = true
	kctx, kcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = victim.proc.Wait(kctx)
	kcancel()
	if err != nil {
		c.t.Fatalf("%s did not die: %v", victim.id, err)
	}
	after, err := c.claimsOf(ctx, victim.id)
	if err != nil {
		c.t.Fatalf("claims of %s: %v", victim.id, err)
	}
	seen := map[string]bool{}
	var union []claim
	for _, cl := range append(before, after...) {
		if !seen[cl.key()] {
			seen[cl.key()] = true
			union = append(union, cl)
		}
	}
	c.resolveURLs(ctx, union)
	return victim, union
}

// resolveURLs fills in the URL of each claim whose item still exists.
func (c *crawl) resolveURLs(ctx context.Context, cls []claim) {
	for i := range cls {
		data, err := c.queue.Get(ctx, cls[i].shard, cls[i].item)
		if err != nil {
			continue
		}
		if it, err := frontier.DecodeItem(data); err == nil {
			cls[i].url = it.URL
		}
	}
}

// pending reads the queued and claimed counts.
func (c *crawl) pending(ctx context.Context) (coord.QueueStats, error) {
	return c.queue.Pending(ctx)
}

// waitFinished polls the queue until nothing is queued or claimed for
// quiet, failing the test after timeout.
func (c *crawl) waitFinished(timeout, quiet time.Duration) {
	c.t.Helper()
	if err := c.awaitFinished(timeout, quiet); err != nil {
		c.t.Fatal(err)
	}
}

// awaitFinished is waitFinished returning an error instead of failing.
func (c *crawl) awaitFinished(timeout, quiet time.Duration) error {
	ctx, cancel := context.WithTimeout(c.t.Context(), timeout)
	defer cancel()
	var since time.Time
	var last coord.QueueStats
	var lastErr error
	for {
		p, err := c.pending(ctx)
		lastErr = err
		if err == nil {
			last = p
		}
		switch {
		case err != nil || p.Queued != 0 || p.Claimed != 0:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= quiet:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("crawl not finished within %v: last pending %+v (last error %v), %d crawl log lines, %d live workers",
				timeout, last, lastErr, c.logLines(), len(c.live()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopAll waits up to grace for the live workers to exit by themselves
// (--exit-when-done), then sends SIGTERM to the rest; every one must exit 0
// within the stop timeout. Killed workers are skipped.
func (c *crawl) stopAll(grace time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(grace)
	for _, w := range c.live() {
		select {
		case <-w.proc.Done():
		case <-time.After(time.Until(deadline)):
		}
	}
	for _, w := range c.live() {
		_ = w.proc.Signal(syscall.SIGTERM)
	}
	ctx, cancel := context.WithTimeout(c.t.Context(), 20*time.Second)
	defer cancel()
	for _, w := range c.all() {
		if w.killed {
			continue
		}
		code, err := w.proc.Wait(ctx)
		if err != nil || code != 0 {
			c.t.Errorf("worker %s: exit %d, %v; want 0", w.id, code, err)
		}
	}
}

// logs reads every worker's crawl.log, in time order.
func (c *crawl) logs() []storage.LogEntry {
	c.t.Helper()
	all, err := testenv.ReadCrawlLogs(c.dir)
	if err != nil {
		c.t.Fatal(err)
	}
	return all
}

// result summarizes a finished crawl.
type result struct {
	lines   int            // crawl log lines
	urls    int            // distinct URLs logged
	final   map[string]int // URL -> last logged status
	perURL  map[string]int // URL -> lines
	dupURLs int            // URLs logged more than once
	// dups counts repeated fetches of one URL at one attempt number:
	// lines beyond the first per (URL, attempt). A retry (attempt+1) is
	// not a duplicate; an item fetched again after its worker died or lost
	// its session is.
	dups     int
	retries  int // lines with attempt > 1
	byWorker map[string]int
}

// summarize reads the crawl logs.
func (c *crawl) summarize() result {
	entries := c.logs()
	r := result{lines: len(entries), final: map[string]int{}, perURL: map[string]int{}, byWorker: map[string]int{}}
	attempt := map[string]int{}
	for _, e := range entries {
		r.final[e.URL] = e.Status
		r.perURL[e.URL]++
		r.byWorker[e.Worker]++
		k := fmt.Sprintf("%s#%d", e.URL, e.Attempt)
		attempt[k]++
		if attempt[k] > 1 {
			r.dups++
		}
		if e.Attempt > 1 {
			r.retries++
		}
	}
	r.urls = len(r.final)
	for _, n := range r.perURL {
		if n > 1 {
			r.dupURLs++
		}
	}
	return r
}

// verify checks the end state every chaos test demands: the crawl logs
// match the ground truth exactly, nothing is queued, claimed or failed, and
// every page with status 200 has a WARC response record. It returns the
// summary for the test's own figures.
func (c *crawl) verify() result {
	c.t.Helper()
	r := c.summarize()
	if bad := testenv.DiffTruth(c.truth, r.final); len(bad) > 0 {
		c.t.Errorf("the crawl differs from the ground truth (%d problems):\n%s", len(bad), testenv.FirstLines(bad, 20))
	}
	ctx, cancel := context.WithTimeout(c.t.Context(), 30*time.Second)
	defer cancel()
	st, err := c.queue.Pending(ctx)
	if err != nil {
		c.t.Fatalf("queue stats: %v", err)
	}
	if st.Queued != 0 || st.Claimed != 0 || st.Failed != 0 {
		c.t.Errorf("after the crawl: %d queued, %d claimed, %d failed; want none", st.Queued, st.Claimed, st.Failed)
	}
	records, openFiles := c.warcResponses()
	missing := 0
	for u, exp := range c.truth {
		if exp.Status == 200 && records[u] == 0 {
			if missing < 10 {
				c.t.Errorf("no WARC response record for %s", u)
			}
			missing++
		}
	}
	c.t.Logf("crawl %s: %d log lines, %d URLs (%d in the ground truth), %d logged more than once, %d duplicate fetches, %d retry lines; lines by worker %v; WARC files left open by killed workers: %d",
		c.spec.name, r.lines, r.urls, countFetchable(c.truth), r.dupURLs, r.dups, r.retries, r.byWorker, openFiles)
	return r
}

// warcResponses counts response records per target URI over every WARC
// file of every worker, including the ".open" files a killed worker left.
func (c *crawl) warcResponses() (map[string]int, int) {
	c.t.Helper()
	got, open, err := testenv.WARCResponses(c.dir)
	if err != nil {
		c.t.Error(err)
	}
	return got, open
}

func countFetchable(truth map[string]testenv.WebExpect) int {
	n := 0
	for _, e := range truth {
		if e.Status != 0 {
			n++
		}
	}
	return n
}

// waitUntil polls cond every 50 ms until it holds, failing the test with
// what after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sleep pauses for d or until the test ends.
func sleep(t *testing.T, d time.Duration) {
	select {
	case <-t.Context().Done():
	case <-time.After(d):
	}
}

// logLines counts the crawl log lines written so far (newlines, without
// parsing: cheap enough to poll).
func (c *crawl) logLines() int {
	files, _ := filepath.Glob(filepath.Join(c.dir, "*", "crawl.log"))
	n := 0
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			n += bytes.Count(b, []byte{'\n'})
		}
	}
	return n
}

// countOf counts the occurrences of sub in s.
func countOf(s, sub string) int { return strings.Count(s, sub) }
