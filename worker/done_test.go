package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// exitAt runs one worker as startWorker does, with wire applied to the
// Worker before Run, and returns a channel that yields Run's error and the
// time Run returned.
func (c *crawlEnv) exitAt(ctx context.Context, id string, mutate func(*Options), wire func(*Worker)) <-chan exited {
	c.t.Helper()
	opts := Options{
		Servers: c.zk, Crawl: c.name, OutDir: c.out + "/" + id, ID: id,
		SessionTimeout: 2 * time.Second, ExitWhenDone: true,
		HeartbeatInterval: 500 * time.Millisecond, StopTimeout: 5 * time.Second, Logger: testLogger(c.t).With("w", id),
	}
	if mutate != nil {
		mutate(&opts)
	}
	w, err := New(ctx, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	if wire != nil {
		wire(w)
	}
	done := make(chan exited, 1)
	go func() {
		err := w.Run(ctx)
		done <- exited{err: err, at: time.Now()}
	}()
	return done
}

// exited is how a worker's Run ended.
type exited struct {
	err error
	at  time.Time
}

// lastLogLine returns the time of the crawl's last crawl-log line.
func (c *crawlEnv) lastLogLine() time.Time {
	c.t.Helper()
	var last time.Time
	for _, e := range c.logs() {
		if e.TS.After(last) {
			last = e.TS
		}
	}
	return last
}

// With ExitWhenDone (and no quiet period) the workers leave within a second
// of the crawl's last page: the done check follows watches on the shards,
// claims and inboxes instead of polling through a quiet period. Before, they
// left 2 s (the quiet period) plus up to 2 s of polling after it.
func TestExitWhenDoneWithinASecondOfTheLastPage(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 20, Hosts: 4, PagesPerHost: 25, LinksPerPage: 3})
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, zk.Addr(), "donefast", cfg, frontier.Layout{Shards: 8, Spread: 2}, web.Seeds())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var ws []<-chan exited
	for i := range 3 {
		ws = append(ws, c.exitAt(ctx, fmt.Sprintf("w%d", i+1), func(o *Options) { o.QuietPeriod = 0 }, nil))
	}
	var lastExit time.Time
	for i, d := range ws {
		e := <-d
		if e.err != nil {
			t.Errorf("worker w%d: %v", i+1, e.err)
		}
		if e.at.After(lastExit) {
			lastExit = e.at
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the crawl did not finish")
	}
	final, _ := finalStatus(c.logs())
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("the crawl differs from the ground truth:\n%s", firstN(bad, 20))
	}
	lag := lastExit.Sub(c.lastLogLine())
	t.Logf("last worker exit %v after the last crawl-log line", lag.Round(time.Millisecond))
	if lag > 1500*time.Millisecond {
		t.Fatalf("the last worker exited %v after the last page; want <= 1.5 s", lag)
	}
}

// A worker killed mid-claim: its claim lives until its session expires, and
// the crawl is not done while it exists. The live worker neither exits nor
// crawls the item before the claim goes; then it claims the item again,
// crawls the rest and exits soon after the last page.
func TestDoneWaitsForAKilledWorkersClaim(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	proxy := testenv.ProxyFor(t, zk.Addr())
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 21, Hosts: 1, PagesPerHost: 4})
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, zk.Addr(), "donekilled", cfg, frontier.Layout{Shards: 1, Spread: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The seed goes straight to the ready window, as its group's owner
	// moves it there.
	seed, err := frontier.Normalize(web.Seeds()[0])
	if err != nil {
		t.Fatal(err)
	}
	owner, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	readyItems(t, ctx, c, owner, seed)

	// The killed worker: a session that claims the seed, then falls silent
	// (blackholed: the server expires it after its timeout).
	const killedTimeout = 3 * time.Second
	dead, err := coord.Connect(ctx, proxy.Addr(), coord.Config{SessionTimeout: killedTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	sess, err := dead.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dq, err := coord.OpenQueue(ctx, dead, c.root)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := dq.Take(ctx, sess, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	killed := time.Now()
	t.Logf("claimed %s, then killed", claim.Name())

	e := <-c.exitAt(ctx, "w1", func(o *Options) { o.QuietPeriod = 0 }, nil)
	if e.err != nil || ctx.Err() != nil {
		t.Fatalf("worker: %v (ctx %v)", e.err, ctx.Err())
	}
	logs := c.logs()
	final, _ := finalStatus(logs)
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("the crawl differs from the ground truth (the killed claim's item lost?):\n%s", firstN(bad, 20))
	}
	// The server expires the session no sooner than its timeout (it may
	// have negotiated it down to its minimum, 2 x tickTime).
	if first := logs[0].TS; first.Sub(killed) < 1500*time.Millisecond {
		t.Fatalf("the seed was crawled %v after the kill: the killed claim did not hold it", first.Sub(killed))
	}
	lag := e.at.Sub(c.lastLogLine())
	t.Logf("killed claim gone, item crawled again; exit %v after the last page (%v after the kill)", lag.Round(time.Millisecond), e.at.Sub(killed).Round(time.Millisecond))
	if lag > 1500*time.Millisecond {
		t.Fatalf("the worker exited %v after the last page; want <= 1.5 s", lag)
	}
}

// slowLinks delays every Enqueue by d: a link batch in flight.
type slowLinks struct {
	linkSink
	d      time.Duration
	posted atomic.Int64 // UnixNano of the last Enqueue's return
}

func (s *slowLinks) Enqueue(ctx context.Context, items []frontier.Item) (frontier.EnqueueResult, error) {
	time.Sleep(s.d)
	res, err := s.linkSink.Enqueue(ctx, items)
	s.posted.Store(time.Now().UnixNano())
	return res, err
}

// A link batch in flight: w1 fetched a page but has not posted its links
// yet; w2, idle, must see the crawl not done (w1's claim is completed only
// after the links are committed) and stay to the end. The web is a chain,
// so each page's one link is the only work left while it is in flight.
func TestDoneWaitsForALinkBatchInFlight(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 22, Hosts: 1, PagesPerHost: 4})
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, zk.Addr(), "donelinks", cfg, frontier.Layout{Shards: 2, Spread: 1}, web.Seeds())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	slow := &slowLinks{d: 1500 * time.Millisecond}
	w1 := c.exitAt(ctx, "w1", func(o *Options) { o.QuietPeriod = 0 }, func(w *Worker) {
		slow.linkSink = w.links
		w.links = slow
	})
	// w2 starts once w1 holds the seed's claim.
	for {
		st, err := c.queue.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Claimed > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	w2 := c.exitAt(ctx, "w2", func(o *Options) { o.QuietPeriod = 0 }, nil)
	e2, e1 := <-w2, <-w1
	for i, e := range []exited{e1, e2} {
		if e.err != nil {
			t.Errorf("worker w%d: %v", i+1, e.err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the crawl did not finish")
	}
	final, _ := finalStatus(c.logs())
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("the crawl differs from the ground truth:\n%s", firstN(bad, 20))
	}
	last := c.lastLogLine()
	if e2.at.Before(last) {
		t.Fatalf("w2 exited %v before the last page: it took a link batch in flight for done", last.Sub(e2.at))
	}
	if posted := time.Unix(0, slow.posted.Load()); e2.at.Before(posted) {
		t.Fatalf("w2 exited %v before w1's last links were posted", posted.Sub(e2.at))
	}
	t.Logf("w2 exited %v, w1 %v after the last page", e2.at.Sub(last).Round(time.Millisecond), e1.at.Sub(last).Round(time.Millisecond))
}

// armed reports whether a waiter holds b's channel (Wait was called since
// the last Fire).
func (b *broadcast) armed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch != nil
}

// waitDone, pausing between count reads while unclaimed work is left (at
// doneBackoff after four reads), looks again as soon as this worker
// finishes its last item in flight, not at the end of the pause: the
// worker that fetched the crawl's last page sees the crawl done a few round
// trips later. The item here is claimed and completed about 250 ms into a
// 500 ms pause (past doneMinGap), and the release of the worker's last
// in-flight slot right after must end waitDone within 220 ms (three count
// reads; at the pause's end it would take about 250 ms and the reads).
func TestWaitDoneLooksAgainWhenTheLastItemFinishes(t *testing.T) {
	c, ctx, sess := readyCrawl(t, "doneidle", 1)

	w := idleWorker(t, ctx, c, nil)
	done := make(chan error, 1)
	go func() { done <- w.waitDone(ctx) }()
	// Its first read comes right after it arms counters.idle; the reads
	// that find the unclaimed item follow donePoll, 2, 4 and 5 x donePoll
	// (doneBackoff) apart: at 0, 100, 300, 700 and 1,200 ms.
	for !w.counters.idle.armed() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(1450 * time.Millisecond)
	claim, err := c.front.Queue().Take(ctx, sess, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.counters.inFlight.Add(1)
	if err := claim.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("waitDone returned %v before the last item finished", err)
	default:
	}
	released := time.Now()
	w.releaseSlot()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("done seen %v after the last item finished", time.Since(released).Round(time.Millisecond))
	case <-time.After(220 * time.Millisecond):
		t.Fatalf("waitDone still waiting 220 ms after the last item finished (the pause ran on)")
	}
}

// A member leaving the worker list (most often a worker that saw the crawl
// done and exited) ends waitDone's gap between two reads (doneMinGap): a
// watch that fired 40 ms after a read would otherwise be read 200 ms after
// it.
func TestWaitDoneReadsAtOnceWhenAMemberLeaves(t *testing.T) {
	c, ctx, sess := readyCrawl(t, "doneleft", 1)
	// Another worker's claim: the only work left, so waitDone watches.
	claim, err := c.front.Queue().Take(ctx, sess, 0, nil)
	if err != nil {
		t.Fatal(err)
	}

	w := idleWorker(t, ctx, c, nil)
	done := make(chan error, 1)
	go func() { done <- w.waitDone(ctx) }()
	for !w.counters.idle.armed() { // its first read starts now
		time.Sleep(time.Millisecond)
	}
	first := time.Now()
	time.Sleep(40 * time.Millisecond)
	if err := claim.Complete(ctx); err != nil { // fires its watch
		t.Fatal(err)
	}
	time.Sleep(time.Until(first.Add(60 * time.Millisecond)))
	left := time.Now()
	w.left.Fire()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("done seen %v after the member left", time.Since(left).Round(time.Millisecond))
	case <-time.After(first.Add(doneMinGap).Sub(time.Now())):
		t.Fatalf("waitDone still waiting %v after the member left: the gap between reads ran on", time.Since(left).Round(time.Millisecond))
	}
}

// A worker that fetches nothing (the crawl's work is another's) reads the
// done counts at most once per doneIdleGap while the other worker claims
// and completes items every 50 ms for 3 s: 2 or 3 reads, not one every
// doneMinGap to doneBackoff (about 10 at the former pace). Each read of a
// one-shard, one-group crawl makes 3 exists requests (the ready and claim
// shards' sizes, the inbox's).
func TestWaitDoneIdleWorkerReadsSeldom(t *testing.T) {
	c, ctx, sess := readyCrawl(t, "doneseldom", 80)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	w := idleWorker(t, ctx, c, m)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.waitDone(wctx) }()
	for !w.counters.idle.armed() { // its first read starts now
		time.Sleep(time.Millisecond)
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		claim, err := c.front.Queue().Take(ctx, sess, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := claim.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := <-done; err == nil {
		t.Fatal("waitDone saw the crawl done with items left")
	}
	exists, _ := metricValue(t, reg, "zkcrawl_zk_op_duration_seconds", map[string]string{"op": "exists"})
	t.Logf("3 s of another worker's claims: %v exists requests (3 a count read)", exists)
	if exists > 9 {
		t.Fatalf("%v exists requests in 3 s by a worker that fetched nothing: more than 3 count reads (want one per %v)", exists, doneIdleGap)
	}
}

// readyCrawl creates a crawl of one shard and one group with n ready items
// in the shard (readyItems) and returns it
// with a session of its client (another worker's, for a test's claims)
// and a context that ends with the test (30 s at most).
func readyCrawl(t *testing.T, name string, n int) (*crawlEnv, context.Context, *coord.Session) {
	t.Helper()
	zk := testenv.ZooKeeper(t)
	c := newCrawl(t, zk.Addr(), name, testConfig(), frontier.Layout{Shards: 1, Spread: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://a.example/%d", i)
	}
	readyItems(t, ctx, c, sess, urls...)
	return c, ctx, sess
}

// readyItems puts urls in shard 0 of c's group 0 as ready items, with two
// steps of that group under sess as its owner makes them (accepted into the
// backlog, then moved to the ready window).
func readyItems(t *testing.T, ctx context.Context, c *crawlEnv, sess *coord.Session, urls ...string) {
	t.Helper()
	grp, err := c.front.Backlog().Open(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recs, datas [][]byte
	for _, u := range urls {
		it := frontier.Item{URL: u}
		rec, err := it.Record()
		if err != nil {
			t.Fatal(err)
		}
		data, err := it.Encode()
		if err != nil {
			t.Fatal(err)
		}
		recs, datas = append(recs, rec), append(datas, data)
	}
	res, err := grp.Apply(ctx, frontier.Step{Accept: recs})
	if err != nil {
		t.Fatal(err)
	}
	var moves []frontier.Move
	for i, ref := range res.Accepted {
		moves = append(moves, frontier.Move{Ref: ref, Shard: 0, Data: datas[i]})
	}
	if _, err := grp.Apply(ctx, frontier.Step{Move: moves}); err != nil {
		t.Fatal(err)
	}
}

// idleWorker returns a worker of c that is not run (a test calls its
// waitDone), with the test config in force and metrics m (nil: none).
func idleWorker(t *testing.T, ctx context.Context, c *crawlEnv, m *Metrics) *Worker {
	t.Helper()
	w, err := New(ctx, Options{Servers: c.zk, Crawl: c.name, OutDir: t.TempDir(), ID: "w1", Metrics: m,
		SessionTimeout: 2 * time.Second, ExitWhenDone: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.client.Close() })
	w.live.Store(&liveConfig{cfg: testConfig()})
	return w
}

// workLeft counts what a count read says is still to do: ready items
// (claimed or not), unheld backlog records that are not schedule entries,
// entries due now, and posts; a worker that has finished that many since
// its read reads again at once when it goes idle.
func TestWorkLeft(t *testing.T) {
	for _, tc := range []struct {
		st   frontier.Pending
		want int
	}{
		{frontier.Pending{}, 0},
		{frontier.Pending{Ready: 23, Claimed: 16, Backlog: 48}, 71},
		{frontier.Pending{Ready: 2, Claimed: 2, Backlog: 10, Held: 10}, 2},                   // held by host budgets
		{frontier.Pending{Backlog: 30, Scheduled: 30, DueNow: 4}, 4},                         // a continuous crawl
		{frontier.Pending{Ready: 1, Backlog: 5, Held: 3, Scheduled: 4, Posts: 2}, 1 + 0 + 2}, // never negative
	} {
		if got := workLeft(tc.st); got != tc.want {
			t.Errorf("workLeft(%+v) = %d, want %d", tc.st, got, tc.want)
		}
	}
}
