package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A live crawl of two in-process workers over a synthetic web too big to
// finish, driven by crawlctl step by step: status, config set applied
// live, an invalid config rejected and shown, pause and resume, status
// --watch, and finally drain.
func TestLiveCrawl(t *testing.T) {
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 5, Hosts: 6, PagesPerHost: 100000, LinksPerPage: 3, Logger: testenv.Logger()})
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, "live", cfg, 16, web.Seeds())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dones := map[string]<-chan error{}
	for _, id := range []string{"w1", "w2"} {
		dones[id] = c.startWorker(ctx, id, false)
	}
	// Which worker owns the hosts' shards depends on the ports, so only
	// the sum is sure to grow.
	eventually(t, 15*time.Second, "both workers joined and crawling", func() (bool, string) {
		ws := c.workers()
		return len(ws) == 2 && ws["w1"].Pages+ws["w2"].Pages > 0, fmt.Sprint(ws)
	})

	t.Run("status", func(t *testing.T) {
		d := c.status("--rate-window", "3s")
		if d.State != "running" || d.Done || d.Paused || d.Draining {
			t.Errorf("state %q done=%v paused=%v draining=%v; want running", d.State, d.Done, d.Paused, d.Draining)
		}
		if len(d.Workers) != 2 || d.Workers[0].ID != "w1" || d.Workers[1].ID != "w2" {
			t.Fatalf("workers = %+v; want w1, w2", d.Workers)
		}
		for _, w := range d.Workers {
			if w.PID == 0 || w.Host == "" || !w.OnConfig || w.HeartbeatAgeS > 5 || w.PagesPerS == nil {
				t.Errorf("worker %+v: want pid, host, current config, a fresh heartbeat and a rate", w)
			}
		}
		if d.Config.Version != 0 || !d.Config.Valid || len(d.Config.WorkersBehind) != 0 {
			t.Errorf("config = %+v; want version 0, valid, nobody behind", d.Config)
		}
		if d.Queue.Queued == 0 || len(d.Queue.Depths) == 0 || d.Queue.Shards != 16 {
			t.Errorf("queue = %+v; want items in some of 16 shards", d.Queue)
		}
		sum := 0
		for _, s := range d.Queue.Depths {
			if s.Queued == 0 && s.Claimed == 0 {
				t.Errorf("empty shard %s listed", s.Shard)
			}
			sum += s.Queued
		}
		if sum != d.Queue.Queued {
			t.Errorf("shard depths sum to %d, total says %d", sum, d.Queue.Queued)
		}
		if d.PagesPerS == nil || *d.PagesPerS <= 0 {
			t.Errorf("pages_per_s = %v; want a positive rate", d.PagesPerS)
		}
		if len(d.Claims.Oldest) > maxClaimsShown || len(d.Claims.Oldest) > d.Claims.Count {
			t.Errorf("claims = %+v", d.Claims)
		}
		for _, cl := range d.Claims.Oldest {
			if cl.Owner != "w1" && cl.Owner != "w2" {
				t.Errorf("claim %+v: holder not a worker", cl)
			}
		}

		r := c.ctl("status", "--rate-window", "0")
		if r.err != nil {
			t.Fatalf("status: %v", r)
		}
		t.Logf("crawlctl status:\n%s", r.stdout)
		for _, want := range []string{"state:    RUNNING", "config:   version 0", "key:      politeness key host (one budget per host:port", "pages/s:  n/a", "workers:  2 live", "  w1 ", "  w2 ", "queue:", "claims:"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status output lacks %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("config set is applied live", func(t *testing.T) {
		r := c.ctl("config", "set", "worker_concurrency=3", "fetch_timeout_ms=5000")
		if r.err != nil || !strings.Contains(r.stdout, "worker_concurrency: 4 -> 3") || !strings.Contains(r.stdout, "config version 0 -> 1") {
			t.Fatalf("config set: %v", r)
		}
		eventually(t, 5*time.Second, "workers apply config version 1", func() (bool, string) {
			ws := c.workers()
			return ws["w1"].ConfigVersion == 1 && ws["w2"].ConfigVersion == 1, fmt.Sprint(ws)
		})
		if d := c.status(); len(d.Config.WorkersBehind) != 0 || d.Config.Version != 1 {
			t.Errorf("status config = %+v; want version 1, nobody behind", d.Config)
		}
	})

	t.Run("invalid config written to the znode is rejected and shown", func(t *testing.T) {
		bad, err := coord.Store(c.client, c.root, coord.ConfigNode).Write(context.Background(), []byte(`{"worker_concurrency": "many"`), -1)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "workers reject the invalid config", func() (bool, string) {
			ws := c.workers()
			return ws["w1"].ConfigError != "" && ws["w2"].ConfigError != "", fmt.Sprint(ws)
		})
		d := c.status()
		if d.Config.Valid || d.Config.Version != bad || d.Config.Error == "" {
			t.Errorf("status config = %+v; want version %d invalid with its error", d.Config, bad)
		}
		if len(d.Config.WorkersBehind) != 2 {
			t.Errorf("workers behind = %v; want both (they keep version 1)", d.Config.WorkersBehind)
		}
		for _, w := range d.Workers {
			if w.ConfigVersion != 1 || !strings.Contains(w.ConfigError, fmt.Sprintf("version %d rejected", bad)) {
				t.Errorf("worker %s: config_version %d, config_error %q; want 1 and the rejection", w.ID, w.ConfigVersion, w.ConfigError)
			}
		}
		r := c.ctl("status", "--rate-window", "0")
		t.Logf("crawlctl status:\n%s", r.stdout)
		if !strings.Contains(r.stdout, "INVALID") || !strings.Contains(r.stdout, "rejected") || !strings.Contains(r.stdout, "1*") {
			t.Errorf("status text does not show the invalid config:\n%s", r.stdout)
		}
		// Repair it with a whole document from stdin-free --file.
		good := t.TempDir() + "/good.json"
		fixed := testConfig()
		fixed.MaxDepth = -1
		writeFile(t, good, fixed.Encode())
		if r := c.ctl("config", "set", "--file", good); r.err != nil {
			t.Fatalf("config set --file: %v", r)
		}
		_, v := c.config()
		eventually(t, 5*time.Second, "workers apply the repaired config", func() (bool, string) {
			ws := c.workers()
			return ws["w1"].ConfigVersion == v && ws["w2"].ConfigVersion == v && ws["w1"].ConfigError == "" && ws["w2"].ConfigError == "", fmt.Sprint(ws)
		})
	})

	t.Run("pause stops claims and resume continues", func(t *testing.T) {
		r := c.ctl("pause")
		if r.err != nil || !strings.Contains(r.stdout, "paused: false -> true") {
			t.Fatalf("pause: %v", r)
		}
		_, v := c.config()
		eventually(t, 10*time.Second, "workers paused and idle", func() (bool, string) {
			ws := c.workers()
			idle := true
			for _, w := range ws {
				idle = idle && w.ConfigVersion == v && w.Paused && w.InFlight == 0
			}
			st, err := c.queue.Pending(context.Background())
			return idle && err == nil && st.Claimed == 0, fmt.Sprint(ws, st, err)
		})
		pages := func() int64 {
			var n int64
			for _, w := range c.workers() {
				n += w.Pages
			}
			return n
		}
		before := pages()
		time.Sleep(1500 * time.Millisecond) // six heartbeats
		if after := pages(); after != before {
			t.Errorf("pages grew from %d to %d while paused", before, after)
		}
		d := c.status("--rate-window", "2s")
		if d.State != "paused" || !d.Paused || d.PagesPerS == nil || *d.PagesPerS != 0 {
			t.Errorf("status while paused: state %q paused %v pages/s %v; want paused at 0", d.State, d.Paused, d.PagesPerS)
		}
		if r := c.ctl("pause"); r.err != nil || !strings.Contains(r.stdout, "already paused") {
			t.Errorf("second pause: %v", r)
		}
		if r := c.ctl("resume"); r.err != nil || !strings.Contains(r.stdout, "paused: true -> false") {
			t.Fatalf("resume: %v", r)
		}
		eventually(t, 10*time.Second, "pages grow after resume", func() (bool, string) {
			n := pages()
			return n > before, fmt.Sprintf("pages %d, %d before", n, before)
		})
	})

	t.Run("status --watch", func(t *testing.T) {
		// A refresh reads every shard's items and claims and every group's
		// cursor: 0.2 s under -race on a quiet machine, 1 s and more while
		// the whole make test runs on two cores, so the windows leave room
		// for three.
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel()
		r := c.ctlWith(wctx, nil, "status", "--watch", "--json", "--interval", "300ms")
		if r.err != nil {
			t.Fatalf("status --watch --json ended by its context: want a clean exit, got %v", r)
		}
		sc := bufio.NewScanner(strings.NewReader(r.stdout))
		sc.Buffer(nil, 1<<20)
		var docs []statusDoc
		for sc.Scan() {
			var d statusDoc
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				t.Fatalf("line %d is not a status document: %v\n%s", len(docs)+1, err, sc.Text())
			}
			docs = append(docs, d)
		}
		if len(docs) < 3 {
			t.Fatalf("%d refreshes in 5 s at 300 ms; want at least 3:\n%s", len(docs), r.stdout)
		}
		if last := docs[len(docs)-1]; last.PagesPerS == nil || len(last.Workers) != 2 {
			t.Errorf("last refresh: pages/s %v, %d workers; want a rate and 2 workers", last.PagesPerS, len(last.Workers))
		}

		wctx2, wcancel2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel2()
		r = runCtlTTY(wctx2, "--zk", c.zk, "--crawl", c.name, "status", "--watch", "--interval", "300ms")
		if r.err != nil || strings.Count(r.stdout, clearScreen) < 2 || !strings.Contains(r.stdout, "workers:  2 live") {
			t.Errorf("status --watch on a terminal: want redraws with clear-screen: %v", r)
		}
		// Not a terminal (a buffer, as a file or pipe): plain snapshots
		// appended, no screen-control codes.
		wctx3, wcancel3 := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel3()
		r = c.ctlWith(wctx3, nil, "status", "--watch", "--interval", "300ms")
		if r.err != nil || strings.Contains(r.stdout, "\x1b") || strings.Count(r.stdout, "crawl "+c.name+" (") < 2 {
			t.Errorf("status --watch to a pipe: want plain appended snapshots: %v", r)
		}
	})

	t.Run("drain makes the workers exit", func(t *testing.T) {
		r := c.ctl("drain")
		if r.err != nil || !strings.Contains(r.stdout, "drain requested") {
			t.Fatalf("drain: %v", r)
		}
		for id, done := range dones {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("worker %s: %v", id, err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("worker %s still running 15 s after drain", id)
			}
		}
		d := c.status()
		if d.State != "draining" || !d.Draining || !strings.Contains(d.DrainNote, "crawlctl") || len(d.Workers) != 0 || d.Claims.Count != 0 {
			t.Errorf("status after drain: state %q note %q, %d workers, %d claims", d.State, d.DrainNote, len(d.Workers), d.Claims.Count)
		}
		if d.Queue.Queued == 0 {
			t.Errorf("drain emptied the queue; it must keep it")
		}
		if r := c.ctl("drain", "--wait"); r.err != nil || !strings.Contains(r.stdout, "already requested") || !strings.Contains(r.stdout, "every worker has exited") {
			t.Errorf("drain --wait with no workers: %v", r)
		}
		if r := c.ctl("drain", "--cancel"); r.err != nil || !strings.Contains(r.stdout, "drain cancelled") {
			t.Errorf("drain --cancel: %v", r)
		}
		if d := c.status(); d.Draining || d.State != "stopped" {
			t.Errorf("after drain --cancel: state %q draining %v", d.State, d.Draining)
		}
		if r := c.ctl("drain", "--cancel"); r.err != nil || !strings.Contains(r.stdout, "no drain was requested") {
			t.Errorf("second drain --cancel: %v", r)
		}
	})
}
