package chaos

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// Graceful stop: SIGTERM a crawler (4 s session timeout) while it holds
// claims on rate-limited hosts. It claims nothing new, finishes or releases
// its in-flight items and closes its session, so its claims vanish well
// under the session timeout (here: < 1.5 s), it exits 0, and the other
// worker takes its shards over and finishes an exact crawl.
func TestGracefulStop(t *testing.T) {
	const stopTimeout = 4 * time.Second
	began := time.Now()
	zk := testenv.ZooKeeper(t)
	c := newCrawl(t, crawlSpec{
		name: "graceful",
		zk:   zk.Addr(),
		// 12 hosts: w1 must own one of them to hold claims, and the
		// groups split 32 / 32 by hash (6 hosts all fell to w2 in about
		// 1 run of 64: 2^-6; 12 hosts, 2^-12).
		web:    testenv.WebConfig{Seed: 13, Hosts: 12, PagesPerHost: 25, LinksPerPage: 4},
		config: crawlConfig(5),
	})
	w1 := c.startWorker(workerOpts{sessionTimeout: stopTimeout})
	w2 := c.startWorker(workerOpts{sessionTimeout: stopTimeout, exitWhenDone: true})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var held []claim
	waitUntil(t, 30*time.Second, "w1 to hold claims mid-crawl", func() bool {
		cls, err := c.claimsOf(ctx, w1.id)
		if err != nil || len(cls) < 2 || c.logLines() < 20 {
			return false
		}
		held = cls
		return true
	})
	c.resolveURLs(ctx, held)
	stopped := time.Now()
	if err := w1.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Poll w1's claims until none is left.
	var gone time.Duration
	for {
		cls, err := c.claimsOf(ctx, w1.id)
		if err != nil {
			t.Fatalf("claims of w1: %v", err)
		}
		if len(cls) == 0 {
			gone = time.Since(stopped)
			break
		}
		if time.Since(stopped) > 2*stopTimeout {
			t.Fatalf("w1 still holds %d claims %v after SIGTERM", len(cls), time.Since(stopped))
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, err := w1.proc.Wait(ctx)
	exited := time.Since(stopped)
	if err != nil || code != 0 {
		t.Fatalf("w1 after SIGTERM: exit %d, %v; want 0", code, err)
	}
	p, err := c.pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Queued == 0 {
		t.Fatal("the crawl finished before the stop; the test proves nothing")
	}
	t.Logf("SIGTERM to w1 holding %d claims: claims gone after %v, exit 0 after %v; %d items still queued",
		len(held), gone.Round(time.Millisecond), exited.Round(time.Millisecond), p.Queued)
	if gone >= 1500*time.Millisecond {
		t.Errorf("w1's claims vanished only %v after SIGTERM; want < 1.5s (session timeout %v)", gone, stopTimeout)
	}

	c.setRate(0)
	c.waitFinished(2*time.Minute, 2*time.Second)
	c.stopAll(10 * time.Second)
	r := c.verify()
	w2After := 0
	for _, e := range c.logs() {
		if e.Worker == w2.id && e.TS.After(stopped) {
			w2After++
		}
	}
	if w2After == 0 {
		t.Error("w2 fetched nothing after w1 stopped: who finished the crawl?")
	}
	for _, cl := range held {
		if cl.url != "" {
			if _, ok := r.final[cl.url]; !ok {
				t.Errorf("%s, held by w1 at the stop, was never fetched", cl.url)
			}
		}
	}
	t.Logf("graceful stop: %d pages, w2 logged %d lines after the stop, %d duplicate fetches, wall time %v",
		countFetchable(c.truth), w2After, r.dups, time.Since(began).Round(100*time.Millisecond))
	if r.dups != 0 {
		t.Errorf("%d duplicate fetches after a graceful stop; want 0", r.dups)
	}
}
