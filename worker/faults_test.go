package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Session expiry while fetching: the worker behind a partitioned proxy loses
// its session, abandons its in-flight items uncompleted, rejoins under a new
// session, and the crawl still ends with every ground-truth page fetched.
func TestCrawlSurvivesSessionExpiry(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	proxy := testenv.ProxyFor(t, zk.Addr())
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 5, Hosts: 4, PagesPerHost: 30, LinksPerPage: 4})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 10
	cfg.PerHostMaxInFlight = 1
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	c := newCrawl(t, zk.Addr(), "expiry", cfg, frontier.Layout{Shards: 8, Spread: 2}, web.Seeds())

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// w1 talks to ZooKeeper through the proxy (its address twice, so the
	// client redials at once after a cut); w2 directly.
	var w1log syncBuffer
	d1 := c.startWorker(ctx, "w1", func(o *Options) {
		o.Servers = proxy.Addr() + "," + proxy.Addr()
		o.Logger = slog.New(slog.NewTextHandler(&w1log, nil))
	})
	d2 := c.startWorker(ctx, "w2", nil)
	time.Sleep(1500 * time.Millisecond)
	before := len(c.logs())
	if err := testenv.ExpireSession(ctx, proxy, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, d := range []<-chan error{d1, d2} {
		if err := <-d; err != nil {
			t.Errorf("worker w%d: %v", i+1, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("crawl did not finish")
	}
	for _, want := range []string{"ZooKeeper session expired", "shard ownership"} {
		if !strings.Contains(w1log.String(), want) {
			t.Errorf("w1's log lacks %q: the expiry was not seen or not followed by a rejoin", want)
		}
	}
	final, _ := finalStatus(c.logs())
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("after a session expiry the crawl differs from the ground truth:\n%s", firstN(bad, 20))
	}
	if before == 0 || before >= len(truth) {
		t.Fatalf("the expiry did not happen mid-crawl: %d of %d pages logged before it", before, len(truth))
	}
	st, err := c.queue.Pending(context.Background())
	if err != nil || st.Queued != 0 || st.Claimed != 0 {
		t.Fatalf("after the crawl: %+v, %v; want nothing queued or claimed", st, err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Graceful stop: cancelling Run (what SIGTERM does) finishes or releases the
// in-flight items and closes the session, so no claim of the stopped worker
// is left for the session timeout to clean up, and another worker finishes
// the crawl.
func TestGracefulStopReleasesClaimsAtOnce(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 9, Hosts: 3, PagesPerHost: 20, LinksPerPage: 3})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 5
	cfg.PerHostMaxInFlight = 1
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	c := newCrawl(t, zk.Addr(), "graceful", cfg, frontier.Layout{Shards: 8, Spread: 2}, web.Seeds())
	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	d1 := c.startWorker(ctx1, "w1", func(o *Options) { o.ExitWhenDone = false; o.SessionTimeout = 4 * time.Second })
	time.Sleep(1500 * time.Millisecond)
	stopped := time.Now()
	stop1()
	if err := <-d1; err != nil {
		t.Fatalf("w1: %v", err)
	}
	took := time.Since(stopped)
	held, err := c.queue.Claims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range held {
		t.Errorf("claim %s/%s of %s outlived the graceful stop", coord.ShardName(cl.Shard), cl.Item, cl.Owner)
	}
	if took > 3*time.Second {
		t.Errorf("graceful stop took %v, want well under the 4s session timeout", took)
	}
	if p, err := c.front.Pending(context.Background()); err != nil || p.Empty() {
		t.Fatalf("the crawl finished before the stop (%+v, %v); the test proves nothing", p, err)
	}
	ctx2, stop2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop2()
	if err := <-c.startWorker(ctx2, "w2", nil); err != nil {
		t.Fatalf("w2: %v", err)
	}
	final, _ := finalStatus(c.logs())
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("crawl differs from the ground truth:\n%s", firstN(bad, 20))
	}
}
