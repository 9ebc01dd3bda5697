package worker

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// zkCli is ZooKeeper's own shell, from Debian's zookeeper package.
const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"

// zkCliSet writes data to a znode with zkCli.sh, as an operator would.
func zkCliSet(t *testing.T, server, path, data string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, zkCli, "-server", server, "set", path, data).CombinedOutput()
	if err != nil {
		t.Fatalf("zkCli.sh set %s: %v\n%s", path, err, out)
	}
}

// workerStatus reads a worker's status node.
func workerStatus(t *testing.T, c *crawlEnv, id string) Status {
	t.Helper()
	_, data, err := coord.Members(context.Background(), c.client, c.root)
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := json.Unmarshal(data[id], &st); err != nil {
		t.Fatalf("status of %s: %q: %v", id, data[id], err)
	}
	return st
}

// A config written straight into the znode with ZooKeeper's own zkCli.sh is
// applied like one from crawlctl; an invalid one is rejected, shown in the
// worker's status node, and the last good config stays in force.
func TestConfigWrittenWithZkCliIsApplied(t *testing.T) {
	if _, err := os.Stat(zkCli); err != nil {
		t.Skipf("%s not installed (Debian package zookeeper): %v", zkCli, err)
	}
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 6, Hosts: 2, PagesPerHost: 10, LinksPerPage: 2})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.Paused = true
	c := newCrawl(t, zk.Addr(), "zkcli", cfg, frontier.Layout{Shards: 4, Spread: 1}, web.Seeds())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := c.startWorker(ctx, "w1", func(o *Options) { o.HeartbeatInterval = 200 * time.Millisecond })
	waitFor := func(what string, cond func(Status) bool) Status {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			st := workerStatus(t, c, "w1")
			if cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; status %+v", what, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond)

	zkCliSet(t, zk.Addr(), coord.Store(c.client, c.root, coord.ConfigNode).String(), `{"per_host_rate_per_s": "fast"}`)
	st := waitFor("the invalid config to be rejected", func(s Status) bool { return s.ConfigError != "" })
	if !strings.Contains(st.ConfigError, "per_host_rate_per_s") || st.ConfigVersion != 0 || !st.Paused {
		t.Fatalf("after an invalid config: %+v; want the key named, version 0 kept, still paused", st)
	}
	if n := len(web.Requests()); n != 0 {
		t.Fatalf("%d requests while paused", n)
	}

	cfg.Paused = false
	zkCliSet(t, zk.Addr(), coord.Store(c.client, c.root, coord.ConfigNode).String(), string(cfg.Encode()))
	st = waitFor("the valid config to be applied", func(s Status) bool { return s.ConfigVersion == 2 })
	if st.ConfigError != "" || st.Paused {
		t.Fatalf("after a valid config: %+v", st)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(c.logs()); n < 20 {
		t.Fatalf("%d pages crawled after resuming, want 20", n)
	}
}
