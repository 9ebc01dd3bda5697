package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// completeGaveUp is the text of a worker log line reporting that a
// Claim.Complete ran out of coord's retry policy's attempts (12; about
// 12 s against a dead server).
const completeGaveUp = "Claim.Complete"

// cutOff is the text of the worker log line reporting that its disconnection
// guard (worker.guardConnection) cancelled the session's in-flight items
// once no ZooKeeper server had answered within the cut-off: those items stay
// claimed by a session that survives the outage, like an item whose
// Complete gave up.
const cutOff = "ZooKeeper has not answered for too long"

// afterGiveUp is how long ZooKeeper stays down after the first Complete
// gave up: longer than the 5 s the worker then spent on releasing the
// claim, so that release gives up too.
const afterGiveUp = 7 * time.Second

// A ZooKeeper outage longer than the client's retry budget, in which the
// sessions survive: a standalone server killed with SIGKILL and restarted
// restores its sessions and gives them a fresh timeout, so the workers
// reconnect to the same sessions, their claims intact (the same happens
// when an ensemble regains its quorum). An item whose Complete gave up
// during the outage is still claimed by a live session afterwards; the
// worker must finish or release it once ZooKeeper is back, or the crawl
// never ends.
func TestZooKeeperOutageOutlastsRetries(t *testing.T) {
	// Runs alongside the other ZooKeeper test once the serial tests are
	// done: both spend most of their time waiting on a dead ZooKeeper.
	t.Parallel()
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	c := newCrawl(t, crawlSpec{
		name: "outage",
		zk:   zk.Addr(),
		// Many links per page: late in the crawl most links are already in
		// the seen-set, so an in-flight item goes straight from its fetch to
		// Complete, which the outage makes give up.
		web:    testenv.WebConfig{Seed: 15, Hosts: 12, PagesPerHost: 40, LinksPerPage: 12},
		config: crawlConfig(4),
	})
	for range 2 {
		c.startWorker(workerOpts{exitWhenDone: true})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	waitUntil(t, 60*time.Second, "half the crawl", func() bool { return c.logLines() >= len(c.truth)/2 })
	held, err := c.claimsOf(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]int64{}
	for _, w := range c.live() {
		offsets[w.id] = w.logSize()
	}
	if err := zk.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	// Wait until some in-flight item's Complete has given up, or a worker's
	// disconnection guard has abandoned its in-flight items (both leave
	// claims held by a session that survives the outage), then a while
	// longer, so the outage outlasts every retry of the worker's.
	gaveUpAt := time.Time{}
	for time.Since(down) < 40*time.Second && gaveUpAt.IsZero() {
		for _, w := range c.live() {
			for _, line := range strings.Split(w.logSince(offsets[w.id]), "\n") {
				if (strings.Contains(line, completeGaveUp) && strings.Contains(line, "gave up after")) || strings.Contains(line, cutOff) {
					gaveUpAt = time.Now()
				}
			}
		}
		sleep(t, 200*time.Millisecond)
	}
	if gaveUpAt.IsZero() {
		t.Fatalf("no worker's Complete gave up, nor did a worker abandon its items, within 40 s of the outage; the test proves nothing")
	}
	sleep(t, afterGiveUp)
	rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
	err = zk.Restart(rctx)
	rcancel()
	if err != nil {
		t.Fatalf("restart ZooKeeper: %v", err)
	}
	outage := time.Since(down)
	t.Logf("ZooKeeper down for %v (from %v after the start) with %d claims held",
		time.Since(down).Round(100*time.Millisecond), down.Sub(began).Round(100*time.Millisecond), len(held))

	gaveUp := 0
	for _, w := range c.live() {
		gaveUp += countOf(w.logSince(offsets[w.id]), "gave up after")
	}
	c.setRate(0)
	if err := c.awaitFinished(45*time.Second, 2*time.Second); err != nil {
		t.Error(err)
		cls, _ := c.claimsOf(context.Background(), "")
		c.resolveURLs(context.Background(), cls)
		for _, cl := range cls {
			t.Logf("claim left after the outage: %s held by %s (%s)", cl.key(), cl.owner, cl.url)
		}
		for _, w := range c.live() {
			for _, line := range strings.Split(w.logSince(offsets[w.id]), "\n") {
				if strings.Contains(line, "failed") && !strings.Contains(line, "go-zookeeper") {
					t.Logf("%s: %s", w.id, line)
				}
			}
		}
		t.FailNow()
	}
	c.stopAll(10 * time.Second)
	r := c.verify()
	sessions, expiries := 0, 0
	for _, w := range c.all() {
		log := w.logText()
		sessions += countOf(log, `msg="session established"`)
		expiries += countOf(log, "ZooKeeper session expired")
	}
	t.Logf("ZooKeeper outage of %v: %d pages, %d ZooKeeper calls gave up, %d worker sessions for %d workers (%d expiries), %d duplicate fetches, wall time %v",
		outage.Round(100*time.Millisecond), countFetchable(c.truth), gaveUp, sessions, len(c.all()), expiries, r.dups, time.Since(began).Round(100*time.Millisecond))
}
