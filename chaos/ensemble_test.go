package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// ZooKeeper failover: three crawlers know all three servers of an
// ensemble. Mid-crawl the leader is killed (SIGKILL) and restarted after a
// few seconds, later a follower; the crawl goes on. Then two of the three
// are killed for longer than the session timeout (quorum loss): the
// workers cannot claim, fetch nothing new, and their logs say that
// ZooKeeper is unreachable. After the servers are restarted the workers
// resume and the crawl completes with nothing lost.
func TestZooKeeperFailover(t *testing.T) {
	// Runs alongside the other ZooKeeper test once the serial tests are
	// done: both spend most of their time waiting on a dead ZooKeeper.
	t.Parallel()
	began := time.Now()
	ens := testenv.NewEnsemble(t, 3)
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range ens.Servers() {
				t.Logf("--- ZooKeeper %d (%s) log tail ---\n%s", s.ID(), s.Addr(), s.LogTail(15))
			}
		}
	})
	t.Logf("ensemble %s serving after %v", ens.ConnString(), time.Since(began).Round(100*time.Millisecond))
	c := newCrawl(t, crawlSpec{
		name:   "failover",
		zk:     ens.ConnString(),
		web:    testenv.WebConfig{Seed: 14, Hosts: 6, PagesPerHost: 250, LinksPerPage: 4},
		config: crawlConfig(5),
	})
	for range 3 {
		c.startWorker(workerOpts{exitWhenDone: true})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	waitUntil(t, 30*time.Second, "the crawl to get going", func() bool { return c.logLines() >= 30 })
	servers := ens.Servers()
	down := 2 * time.Second
	if longRun() {
		down = 5 * time.Second
	}

	// progress waits until n more crawl log lines were written.
	progress := func(what string, n int) {
		t.Helper()
		from := c.logLines()
		waitUntil(t, 60*time.Second, what, func() bool { return c.logLines() >= from+n })
	}
	leader := func() int {
		t.Helper()
		lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
		defer lcancel()
		i, err := ens.Leader(lctx)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	restart := func(i int) time.Duration {
		t.Helper()
		start := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
		defer rcancel()
		if err := servers[i].Restart(rctx); err != nil {
			t.Fatalf("restart ZooKeeper %d: %v", servers[i].ID(), err)
		}
		return time.Since(start)
	}

	// 1. The leader dies and comes back.
	l := leader()
	if err := servers[l].Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	sleep(t, down)
	took := restart(l)
	t.Logf("leader %d killed at %v, restarted after %v (restart took %v)", servers[l].ID(),
		time.Since(began).Round(100*time.Millisecond), time.Since(killedAt).Round(100*time.Millisecond), took.Round(100*time.Millisecond))
	progress("progress after the leader's failover", 20)

	// 2. A follower dies and comes back.
	prev := l
	l = leader()
	f := (l + 1) % len(servers)
	if f == prev {
		f = (l + 2) % len(servers) // another member than the one just restarted
	}
	if err := servers[f].Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt = time.Now()
	sleep(t, down)
	took = restart(f)
	t.Logf("follower %d killed at %v, restarted after %v (restart took %v)", servers[f].ID(),
		time.Since(began).Round(100*time.Millisecond), time.Since(killedAt).Round(100*time.Millisecond), took.Round(100*time.Millisecond))
	progress("progress after the follower's restart", 20)

	// 3. Quorum loss: two of three down for longer than the session timeout.
	p, err := c.pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Queued == 0 {
		t.Fatal("the crawl finished before the quorum loss; the test proves nothing")
	}
	l = leader()
	f = (l + 1) % len(servers)
	offsets := map[string]int64{}
	for _, w := range c.live() {
		offsets[w.id] = w.logSize()
	}
	lost := time.Now()
	for _, i := range []int{l, f} {
		if err := servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	outage := sessionTimeout + 2*time.Second
	if longRun() {
		outage = 4 * sessionTimeout
	}
	sleep(t, outage)
	// In-flight fetches may end and be logged just after the loss; after
	// that grace nothing can be claimed, so nothing new is logged.
	const grace = 1500 * time.Millisecond
	during := 0
	for _, e := range c.logs() {
		if e.TS.After(lost.Add(grace)) {
			during++
		}
	}
	if during > 0 {
		t.Errorf("%d crawl log lines written between %v after the quorum loss and %v: workers went on without ZooKeeper", during, grace, outage)
	}
	var said []string
	for _, w := range c.live() {
		log := w.logSince(offsets[w.id])
		// coord's "zookeeper state change ... to=Disconnected" (Info) is
		// there, buried in go-zookeeper's redial lines; the worker itself
		// must say, as a warning, that it claims nothing until ZooKeeper is
		// back.
		if !strings.Contains(log, "level=WARN") || !strings.Contains(log, lostConnectionMsg) {
			t.Errorf("worker %s's log has no warning %q during the quorum loss:\n%s", w.id, lostConnectionMsg, lastLines(log, 15))
		}
		said = append(said, fmt.Sprintf("%s: %s", w.id, summarizeOutageLog(log)))
	}
	t.Logf("quorum loss at %v for %v: %d lines logged after the first %v; what the workers said:\n%s",
		time.Since(began).Round(100*time.Millisecond), outage, during, grace, strings.Join(said, "\n"))
	for _, i := range []int{l, f} {
		took := restart(i)
		t.Logf("ZooKeeper %d restarted (took %v)", servers[i].ID(), took.Round(100*time.Millisecond))
	}
	resumed := time.Now()
	progress("progress after the quorum came back", 20)
	kept := 0
	for _, w := range c.live() {
		kept += countOf(w.logSince(offsets[w.id]), "same_session=true")
	}
	t.Logf("crawl resumed %v after the quorum came back; %d of %d workers kept their session through the quorum loss",
		time.Since(resumed).Round(100*time.Millisecond), kept, len(c.live()))

	c.setRate(0)
	c.waitFinished(3*time.Minute, 2*time.Second)
	c.stopAll(10 * time.Second)
	r := c.verify()
	losses, sessions, expiries := 0, 0, 0
	for _, w := range c.all() {
		log := w.logText()
		losses += countOf(log, "item abandoned uncompleted") + countOf(log, "claim lost before")
		sessions += countOf(log, `msg="session established"`)
		expiries += countOf(log, "ZooKeeper session expired")
	}
	t.Logf("ZooKeeper failover: %d pages, %d worker sessions for %d workers (%d expiries), %d items abandoned or lost, %d duplicate fetches, wall time %v",
		countFetchable(c.truth), sessions, len(c.all()), expiries, losses, r.dups, time.Since(began).Round(100*time.Millisecond))
	if r.dups > losses {
		t.Errorf("%d duplicate fetches but only %d items were abandoned or lost: a duplicate without a lost claim", r.dups, losses)
	}
}

// lostConnectionMsg starts the warning a worker logs when it loses its
// ZooKeeper connection.
const lostConnectionMsg = "ZooKeeper connection lost"

// summarizeOutageLog lists the distinct messages (msg=...) of a worker's
// log during an outage, with counts, in first-seen order; go-zookeeper's
// own lines (redials, failed handshakes) are only counted.
func summarizeOutageLog(log string) string {
	var order []string
	counts := map[string]int{}
	redials := 0
	for _, line := range strings.Split(log, "\n") {
		i := strings.Index(line, "msg=")
		if i < 0 {
			continue
		}
		if strings.Contains(line, "component=go-zookeeper") {
			redials++
			continue
		}
		msg := line[i+4:]
		if strings.HasPrefix(msg, `"`) {
			if j := strings.Index(msg[1:], `"`); j >= 0 {
				msg = msg[1 : j+1]
			}
		} else if j := strings.IndexByte(msg, ' '); j >= 0 {
			msg = msg[:j]
		}
		if strings.Contains(line, "to=") {
			if k := strings.Index(line, "to="); k >= 0 {
				msg += " " + strings.Fields(line[k:])[0]
			}
		}
		if counts[msg] == 0 {
			order = append(order, msg)
		}
		counts[msg]++
	}
	var parts []string
	for _, m := range order {
		parts = append(parts, fmt.Sprintf("%q x%d", m, counts[m]))
	}
	parts = append(parts, fmt.Sprintf("and %d go-zookeeper connection lines", redials))
	return strings.Join(parts, ", ")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
