package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// Worker crashes: three crawler processes crawl while, every few seconds,
// one of them is killed with SIGKILL (no chance to release anything) and a
// fresh one (new id, new --out) takes its place. The killed worker's claims
// stay until ZooKeeper expires its session; then its shards move to the
// living workers. At the end every ground-truth page is in the union of
// the crawl logs with its final status, nothing is queued, claimed or
// dead-lettered, and duplicate fetches are at most the claims the killed
// workers held when they died (at-least-once, never lost).
func TestWorkerCrashes(t *testing.T) {
	hosts, pages, kills, every, rate := 10, 100, 2, 2*time.Second, 12.0
	if longRun() {
		hosts, pages, kills, every, rate = 20, 250, 0, 3*time.Second, 10.0 // kills 0: until the queue is empty
	}
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	c := newCrawl(t, crawlSpec{
		name:   "crashes",
		zk:     zk.Addr(),
		web:    testenv.WebConfig{Seed: 11, Hosts: hosts, PagesPerHost: pages, LinksPerPage: 4},
		config: crawlConfig(rate),
	})
	for range 3 {
		c.startWorker(workerOpts{exitWhenDone: true})
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	inFlightAtKills, killed := 0, 0
	for kills == 0 || killed < kills {
		sleep(t, every)
		if ctx.Err() != nil {
			t.Fatalf("still killing workers after %v: the crawl does not finish", time.Since(began))
		}
		p, err := c.pending(ctx)
		if err != nil {
			t.Fatalf("pending: %v", err)
		}
		if p.Queued == 0 {
			break // the crawl is done (or all but done): nothing left to disturb
		}
		victim, union := c.killOldest(ctx)
		inFlightAtKills += len(union)
		killed++
		fresh := c.startWorker(workerOpts{exitWhenDone: true})
		t.Logf("kill %d at %v: SIGKILL %s holding %d claims (before and after the kill); started %s; %d queued",
			killed, time.Since(began).Round(100*time.Millisecond), victim.id, len(union), fresh.id, p.Queued)
	}
	if killed == 0 {
		t.Fatal("the crawl ended before the first kill; the test proves nothing")
	}
	if !longRun() {
		c.setRate(0) // the faults are done: let the rest go at full speed
	}
	c.waitFinished(3*time.Minute, 2*time.Second)
	c.stopAll(10 * time.Second)
	r := c.verify()
	t.Logf("worker crashes: %d pages, %d kills, %d duplicate fetches (at most %d claims in flight at the kills), wall time %v",
		countFetchable(c.truth), killed, r.dups, inFlightAtKills, time.Since(began).Round(100*time.Millisecond))
	if r.dups > inFlightAtKills {
		t.Errorf("%d duplicate fetches exceed the %d claims the killed workers held: something fetched an item twice without a crash",
			r.dups, inFlightAtKills)
	}
	for _, w := range c.all() {
		if !w.killed && countOf(w.logText(), "ZooKeeper session expired") > 0 {
			t.Logf("note: surviving worker %s saw its session expire (machine overloaded?)", w.id)
		}
	}
}
