package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// TestUnreachableZooKeeper: a port nobody listens on gives one clear error
// naming --zk and the address within the (short) default --timeout, and a
// malformed --zk is a usage error before anything dials.
func TestUnreachableZooKeeper(t *testing.T) {
	ports, err := testenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	start := time.Now()
	r := runCtl(context.Background(), nil, nil, "--zk", addr, "--crawl", "x", "--timeout", "2s", "status")
	took := time.Since(start)
	if r.err == nil || !strings.Contains(r.err.Error(), "cannot reach ZooKeeper at "+addr+" within 2s") ||
		!strings.Contains(r.err.Error(), "--zk") || !strings.Contains(r.err.Error(), "connection refused") {
		t.Fatalf("want an unreachable error naming --zk, %s and the cause:\n%v", addr, r)
	}
	if took > 5*time.Second {
		t.Errorf("took %v with --timeout 2s", took)
	}
	if strings.Count(r.stderr, "\n") > 0 {
		t.Errorf("crawlctl logged at its default warn level:\n%s", r.stderr)
	}

	r = runCtl(context.Background(), nil, nil, "--zk", "127.0.0.1:abc", "--crawl", "x", "status")
	if r.err == nil || !strings.Contains(r.err.Error(), `port "abc"`) {
		t.Fatalf("--zk 127.0.0.1:abc: %v", r)
	}

	// The default --timeout answers in seconds.
	_, g := (&app{stderr: &strings.Builder{}}).toolFlags()
	if g.timeout > 10*time.Second {
		t.Errorf("default --timeout %v: a status command should answer in seconds", g.timeout)
	}
}
