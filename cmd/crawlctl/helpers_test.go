package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/testenv/crawltest"
	"github.com/zkcrawl/zkcrawl/worker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// zkAddr returns the shared server's address (testenv.SharedZooKeeper);
// each test works under its own crawl name.
func zkAddr(t *testing.T) string { return testenv.SharedZooKeeper(t).Addr() }

// testConfig is a fast config that may crawl loopback servers.
func testConfig() config.Config {
	c := config.Default()
	c.AllowPrivateNetworks = true
	c.PerHostRatePerS = 0
	c.WorkerConcurrency = 4
	return c
}

// crawl is a crawl under test, created the way seeder creates one.
type crawl struct {
	t      *testing.T
	zk     string
	name   string
	root   string
	client *coord.Client
	queue  *coord.Queue
}

// crawlSeq makes crawl names unique within the shared ZooKeeper, also
// across -count runs.
var crawlSeq atomic.Int64

func newCrawl(t *testing.T, name string, cfg config.Config, shards int, seeds []string) *crawl {
	t.Helper()
	zk := zkAddr(t)
	name = fmt.Sprintf("%s-%d", name, crawlSeq.Add(1))
	root, err := coord.Root(name)
	if err != nil {
		t.Fatal(err)
	}
	client, front := crawltest.Seed(t, zk, root, cfg, frontier.Layout{Shards: shards, Spread: 1}, seeds, coord.Config{})
	q := front.Queue()
	return &crawl{t: t, zk: zk, name: name, root: root, client: client, queue: q}
}

// startWorker runs a worker in this process until ctx ends, the crawl is
// drained or (exitWhenDone) done; the channel yields Run's error.
func (c *crawl) startWorker(ctx context.Context, id string, exitWhenDone bool) <-chan error {
	c.t.Helper()
	w, err := worker.New(ctx, worker.Options{
		Servers: c.zk, Crawl: c.name, OutDir: filepath.Join(c.t.TempDir(), id), ID: id,
		SessionTimeout: 2 * time.Second, ExitWhenDone: exitWhenDone, QuietPeriod: time.Second,
		HeartbeatInterval: 250 * time.Millisecond, StopTimeout: 5 * time.Second, Logger: testenv.Logger().With("w", id),
	})
	if err != nil {
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return done
}

// result is one in-process crawlctl run.
type result struct {
	stdout, stderr string
	err            error
}

func (r result) String() string {
	return fmt.Sprintf("err=%v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// ctl runs crawlctl against this crawl.
func (c *crawl) ctl(args ...string) result {
	c.t.Helper()
	return c.ctlWith(context.Background(), nil, args...)
}

func (c *crawl) ctlWith(ctx context.Context, hook func(), args ...string) result {
	c.t.Helper()
	return runCtl(ctx, nil, hook, append([]string{"--zk", c.zk, "--crawl", c.name, "--timeout", "20s"}, args...)...)
}

// runCtl runs crawlctl in-process with env as its environment.
func runCtl(ctx context.Context, env map[string]string, hook func(), args ...string) result {
	var out, errOut bytes.Buffer
	a := &app{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		env:         func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		beforeWrite: hook,
	}
	err := a.run(ctx, args)
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

// runCtlTTY runs crawlctl in-process with a stdout that poses as a terminal.
func runCtlTTY(ctx context.Context, args ...string) result {
	var out, errOut bytes.Buffer
	a := &app{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		env:   func(string) (string, bool) { return "", false },
		isTTY: func(io.Writer) bool { return true },
	}
	err := a.run(ctx, args)
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

// status runs status --json and decodes it.
func (c *crawl) status(extra ...string) *statusDoc {
	c.t.Helper()
	r := c.ctl(append([]string{"status", "--json", "--rate-window", "0"}, extra...)...)
	if r.err != nil {
		c.t.Fatalf("status --json: %v", r)
	}
	var d statusDoc
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		c.t.Fatalf("status --json output is not one JSON document: %v\n%s", err, r.stdout)
	}
	return &d
}

// workers reads every live worker's status node.
func (c *crawl) workers() map[string]worker.Status {
	c.t.Helper()
	_, data, err := coord.Members(context.Background(), c.client, c.root)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]worker.Status{}
	for id, d := range data {
		var st worker.Status
		if err := json.Unmarshal(d, &st); err != nil {
			c.t.Fatalf("worker %s status %q: %v", id, d, err)
		}
		out[id] = st
	}
	return out
}

// configVersion reads the config znode's version and data.
func (c *crawl) config() ([]byte, int32) {
	c.t.Helper()
	data, v, err := coord.Store(c.client, c.root, coord.ConfigNode).Read(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return data, v
}

// eventually polls cond every 100 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, timeout, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
