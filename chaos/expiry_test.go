package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// Session expiry while fetching: crawler w1 reaches ZooKeeper only through
// a partitioning proxy. With items claimed and in flight, the proxy
// blackholes it until the server has expired its session. w1 must abandon
// those items (their claims died with the session), notice the expiry when
// it reconnects, rejoin under a new session and crawl on; the items it held
// are fetched by someone, and the crawl is exact.
func TestSessionExpiryWhileFetching(t *testing.T) {
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	proxy := testenv.ProxyFor(t, zk.Addr())
	c := newCrawl(t, crawlSpec{
		name:   "expiry",
		zk:     zk.Addr(),
		web:    testenv.WebConfig{Seed: 12, Hosts: 6, PagesPerHost: 60, LinksPerPage: 4},
		config: crawlConfig(8),
	})
	// The proxy's address twice: go-zookeeper redials at once after a cut.
	w1 := c.startWorker(workerOpts{zk: proxy.Addr() + "," + proxy.Addr(), exitWhenDone: true})
	w2 := c.startWorker(workerOpts{exitWhenDone: true})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var held []claim
	waitUntil(t, 30*time.Second, "w1 to hold claims mid-crawl", func() bool {
		cls, err := c.claimsOf(ctx, w1.id)
		if err != nil || len(cls) == 0 || c.logLines() < 20 {
			return false
		}
		held = cls
		return true
	})
	c.resolveURLs(ctx, held)
	logOffset := w1.logSize()
	linesBefore := c.logLines()
	if err := testenv.ExpireSession(ctx, proxy, sessionTimeout); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	t.Logf("expired w1's session %v after the start, %d lines logged before, w1 held %d claims", time.Since(began).Round(100*time.Millisecond), linesBefore, len(held))
	p, err := c.pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Queued == 0 {
		t.Fatal("the crawl ended during the partition; the test proves nothing")
	}
	// w1 comes back: it reports the expiry, then rejoins with a new session.
	waitUntil(t, 20*time.Second, "w1 to report the expiry and rejoin", func() bool {
		log := w1.logSince(logOffset)
		i := strings.Index(log, "ZooKeeper session expired")
		return i >= 0 && strings.Contains(log[i:], "shard ownership")
	})
	c.setRate(0)
	c.waitFinished(2*time.Minute, 2*time.Second)
	c.stopAll(10 * time.Second)
	r := c.verify()

	log := w1.logSince(logOffset)
	abandoned := countOf(log, "item abandoned uncompleted") + countOf(log, "claim lost before")
	w1After := 0
	for _, e := range c.logs() {
		if e.Worker == w1.id && e.TS.After(healed) {
			w1After++
		}
	}
	for _, cl := range held {
		if cl.url == "" {
			continue // completed between the claim read and the item read
		}
		if _, ok := r.final[cl.url]; !ok {
			t.Errorf("%s, held by w1 at the partition, was never fetched", cl.url)
		}
	}
	t.Logf("session expiry: %d pages, w1 held %d claims at the partition, abandoned or lost %d items, %d duplicate fetches; w1 logged %d lines after the heal, w2 %d lines in all; wall time %v",
		countFetchable(c.truth), len(held), abandoned, r.dups, w1After, r.byWorker[w2.id], time.Since(began).Round(100*time.Millisecond))
	if r.dups > len(held)+abandoned {
		t.Errorf("%d duplicate fetches exceed the %d items w1 held or abandoned", r.dups, len(held)+abandoned)
	}
}
