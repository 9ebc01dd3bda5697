package chaos

import (
	"context"
	"net/url"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// Politeness across a one-way partition and a process pause, measured at
// the site: testenv.Web counts the requests each host serves at once, and
// per_host_max_in_flight (1) must hold across the fault, while the cut-off
// worker's hosts pass to another worker after its session expires. Both run
// with ZKCRAWL_CHAOS=long only (`make chaos`).

// slowWeb is the synthetic web of these tests: 4 hosts whose every answer
// takes delay, so a request is in flight most of the time and two at once
// at one host would show.
func slowWeb(seed int64, delay time.Duration) testenv.WebConfig {
	return testenv.WebConfig{Seed: seed, Hosts: 4, PagesPerHost: 25, LinksPerPage: 2,
		HostDelay: map[int]time.Duration{0: delay, 1: delay, 2: delay, 3: delay}}
}

// checkInFlight fails the test if any host of c's web served more than max
// requests at once, and logs the figures.
func checkInFlight(t *testing.T, c *crawl, max int) {
	t.Helper()
	got := c.web.MaxInFlight()
	t.Logf("most requests served at once, by host: %v (per_host_max_in_flight %d)", got, max)
	for h, n := range got {
		if n > max {
			t.Errorf("host %d (%s) served %d requests at once, want at most %d", h, c.web.Hosts()[h], n, max)
		}
	}
}

// hostHeldBy waits until a claim of worker id (any worker if "") is on an
// item whose URL is on one of c's hosts, and returns that claim.
func (c *crawl) hostHeldBy(ctx context.Context, t *testing.T, id string) claim {
	t.Helper()
	var held claim
	waitUntil(t, 60*time.Second, "a claim held mid-crawl", func() bool {
		cls, err := c.claimsOf(ctx, id)
		if err != nil || len(cls) == 0 || c.logLines() < 8 {
			return false
		}
		c.resolveURLs(ctx, cls)
		for _, cl := range cls {
			if u, err := url.Parse(cl.url); err == nil && slices.Contains(c.web.Hosts(), u.Host) {
				held = cl
				return true
			}
		}
		return false
	})
	return held
}

// One-way partition: crawler w1 reaches ZooKeeper through a proxy that,
// mid-crawl, drops everything w1 sends while still delivering what the
// server sends (watch events included). The server hears nothing and
// expires w1's session after the session timeout; w2 takes w1's hosts
// over. w1 must stop fetching before that, although packets keep arriving
// (only answers to its own requests count as proof the server hears it).
func TestOneWayPartition(t *testing.T) {
	if !longRun() {
		t.Skip("long chaos test: run with ZKCRAWL_CHAOS=long (make chaos)")
	}
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	proxy := testenv.ProxyFor(t, zk.Addr())
	c := newCrawl(t, crawlSpec{
		name:   "oneway",
		zk:     zk.Addr(),
		web:    slowWeb(21, 300*time.Millisecond),
		config: crawlConfig(0),
	})
	w1 := c.startWorker(workerOpts{zk: proxy.Addr() + "," + proxy.Addr(), exitWhenDone: true})
	c.startWorker(workerOpts{exitWhenDone: true})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	held := c.hostHeldBy(ctx, t, w1.id)
	logOffset := w1.logSize()
	proxy.HalfOpen()
	t.Logf("w1 half-open %v after the start, holding %s", time.Since(began).Round(100*time.Millisecond), held.url)
	sleep(t, 3*sessionTimeout)
	proxy.Heal()
	waitUntil(t, 30*time.Second, "w1 to report the expiry and rejoin", func() bool {
		return countOf(w1.logSince(logOffset), "ZooKeeper session expired") > 0
	})
	c.waitFinished(3*time.Minute, 2*time.Second)
	c.stopAll(10 * time.Second)
	c.verify()
	checkInFlight(t, c, c.spec.config.PerHostMaxInFlight)
	t.Logf("one-way partition: wall time %v", time.Since(began).Round(100*time.Millisecond))
}

// Process pause: the crawler holding a host is stopped (SIGSTOP, as a long
// GC or a frozen VM would) for three session timeouts, so its session
// expires and the other crawler takes the host over, then resumed
// (SIGCONT). The resumed crawler must send that host nothing more: its
// fetch goroutines check that ZooKeeper answered recently right before a
// request goes out.
func TestPausedWorker(t *testing.T) {
	if !longRun() {
		t.Skip("long chaos test: run with ZKCRAWL_CHAOS=long (make chaos)")
	}
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	c := newCrawl(t, crawlSpec{
		name:   "paused",
		zk:     zk.Addr(),
		web:    slowWeb(22, 500*time.Millisecond),
		config: crawlConfig(0),
	})
	c.startWorker(workerOpts{exitWhenDone: true})
	c.startWorker(workerOpts{exitWhenDone: true})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	held := c.hostHeldBy(ctx, t, "")
	var victim *workerProc
	for _, w := range c.all() {
		if w.id == held.owner {
			victim = w
		}
	}
	if victim == nil {
		t.Fatalf("claim owner %q is not one of the crawlers", held.owner)
	}
	logOffset := victim.logSize()
	if err := victim.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s stopped %v after the start, holding %s", victim.id, time.Since(began).Round(100*time.Millisecond), held.url)
	sleep(t, 3*sessionTimeout)
	if err := victim.proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, victim.id+" to report the expiry", func() bool {
		return countOf(victim.logSince(logOffset), "ZooKeeper session expired") > 0
	})
	c.waitFinished(3*time.Minute, 2*time.Second)
	c.stopAll(10 * time.Second)
	c.verify()
	checkInFlight(t, c, c.spec.config.PerHostMaxInFlight)
	log := victim.logSince(logOffset)
	t.Logf("process pause: %s refused %d stale fetches after SIGCONT; wall time %v", victim.id,
		countOf(log, "ZooKeeper has not answered recently enough"), time.Since(began).Round(100*time.Millisecond))
}
