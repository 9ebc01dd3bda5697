package worker

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
	"github.com/zkcrawl/zkcrawl/testenv/crawltest"
)

// arrivalJitter is how much closer than the politeness interval two
// requests may reach a loopback server's handler: strict politeness counts
// from when a request reached the server as the client can tell
// (fetch.Politeness.Reached: the write on a kept-alive connection), and the
// server's handler may run for one request later after that than for the
// next (scheduling under -race on two loaded cores). A broken limit (two
// owners of a key, a key shared wrongly) shows as gaps near zero.
const arrivalJitter = 50 * time.Millisecond

// crawlEnv is a crawl under test: a real ZooKeeper, a crawl created and
// seeded as the seeder does, and worker output directories.
type crawlEnv struct {
	t      *testing.T
	zk     string
	name   string
	root   string
	client *coord.Client
	queue  *coord.Queue
	front  *frontier.Frontier
	out    string
	zkCfg  coord.Config // the Connect configuration of the crawl's clients and workers
}

// testLogger is testenv.Logger (ZKCRAWL_TEST_LOG).
func testLogger(testing.TB) *slog.Logger { return testenv.Logger() }

// newCrawl creates crawl name on zkAddr with cfg, the shard layout and the
// seeds.
func newCrawl(t *testing.T, zkAddr, name string, cfg config.Config, layout frontier.Layout, seeds []string) *crawlEnv {
	t.Helper()
	return newCrawlWith(t, zkAddr, name, cfg, layout, seeds, coord.Config{})
}

// newCrawlWith is newCrawl whose client and workers connect with zkCfg (e.g.
// its Username and Password).
func newCrawlWith(t *testing.T, zkAddr, name string, cfg config.Config, layout frontier.Layout, seeds []string, zkCfg coord.Config) *crawlEnv {
	t.Helper()
	root, err := coord.Root(name)
	if err != nil {
		t.Fatal(err)
	}
	client, front := crawltest.Seed(t, zkAddr, root, cfg, layout, seeds, zkCfg)
	q := front.Queue()
	return &crawlEnv{t: t, zk: zkAddr, name: name, root: root, client: client, queue: q, front: front, out: t.TempDir(), zkCfg: zkCfg}
}

// setConfig writes a new config version.
func (c *crawlEnv) setConfig(cfg config.Config) {
	c.t.Helper()
	if _, err := coord.Store(c.client, c.root, coord.ConfigNode).Write(context.Background(), cfg.Encode(), -1); err != nil {
		c.t.Fatal(err)
	}
}

// startWorker runs one worker in this process until ctx ends or the crawl is
// done; the returned channel yields Run's error.
func (c *crawlEnv) startWorker(ctx context.Context, id string, mutate func(*Options)) <-chan error {
	c.t.Helper()
	opts := Options{
		Servers: c.zk, Crawl: c.name, OutDir: filepath.Join(c.out, id), ID: id,
		SessionTimeout: 2 * time.Second, ExitWhenDone: true, QuietPeriod: 1500 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, StopTimeout: 5 * time.Second, Logger: testLogger(c.t).With("w", id),
		ZK: c.zkCfg,
	}
	if mutate != nil {
		mutate(&opts)
	}
	w, err := New(ctx, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return done
}

// runWorkers runs n workers until the crawl is done (or the timeout).
func (c *crawlEnv) runWorkers(n int, timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var dones []<-chan error
	for i := range n {
		dones = append(dones, c.startWorker(ctx, fmt.Sprintf("w%d", i+1), nil))
	}
	for i, d := range dones {
		if err := <-d; err != nil {
			c.t.Errorf("worker w%d: %v", i+1, err)
		}
	}
	if ctx.Err() != nil {
		p, err := c.queue.Pending(context.Background())
		var left []string
		for s := range c.queue.Shards() {
			names, _ := c.queue.ReadyNames(context.Background(), s)
			for _, n := range names {
				data, _ := c.queue.Get(context.Background(), s, n)
				left = append(left, fmt.Sprintf("%d/%s %s", s, n, data))
			}
		}
		c.t.Fatalf("crawl did not finish within %v: %d lines logged, pending %+v %v; left:\n%s", timeout, len(c.logs()), p, err, strings.Join(left, "\n"))
	}
}

// logs reads every worker's crawl.log, in time order.
func (c *crawlEnv) logs() []storage.LogEntry {
	c.t.Helper()
	all, err := testenv.ReadCrawlLogs(c.out)
	if err != nil {
		c.t.Fatal(err)
	}
	return all
}

// warcResponses counts response records per target URI over all WARC files.
func (c *crawlEnv) warcResponses() map[string]int {
	c.t.Helper()
	got, _, err := testenv.WARCResponses(c.out)
	if err != nil {
		c.t.Fatal(err)
	}
	return got
}

// Shorter names for the shared checks of package testenv.
var (
	finalStatus = testenv.FinalStatus
	diffTruth   = testenv.DiffTruth
	firstN      = testenv.FirstLines
)
