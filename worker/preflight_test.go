package worker

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// TestPreflight: a worker started while a drain is pending refuses with
// ErrDrainPending and names 'crawlctl ... drain --cancel'; a second worker
// with the id of a live one refuses with ErrIDInUse naming the id, within
// a few heartbeats instead of waiting for ever; once the drain is lifted
// and the id is free, New succeeds.
func TestPreflight(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	c := newCrawl(t, zk.Addr(), "preflight", testConfig(), frontier.Layout{Shards: 4, Spread: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := func(id string) Options {
		return Options{Servers: c.zk, Crawl: c.name, OutDir: filepath.Join(c.out, id), ID: id,
			SessionTimeout: 2 * time.Second, HeartbeatInterval: 300 * time.Millisecond, Logger: testLogger(t)}
	}

	drain := coord.Store(c.client, c.root, coord.DrainNode)
	if _, err := drain.Write(ctx, []byte("drain requested by a test"), -1); err != nil {
		t.Fatal(err)
	}
	_, err := New(ctx, opts("w1"))
	if !errors.Is(err, ErrDrainPending) || !strings.Contains(err.Error(), "crawlctl --crawl preflight drain --cancel") ||
		!strings.Contains(err.Error(), "drain requested by a test") {
		t.Fatalf("New during a drain: %v; want ErrDrainPending naming the cancel command", err)
	}
	if _, err := drain.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	w1, err := New(ctx, opts("w1"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w1.Run(runCtx) }()
	eventually(t, 10*time.Second, "w1 registered", func() bool {
		ids, _, err := coord.Members(ctx, c.client, c.root)
		return err == nil && len(ids) == 1
	})

	start := time.Now()
	_, err = New(ctx, opts("w1"))
	if !errors.Is(err, ErrIDInUse) || !strings.Contains(err.Error(), `"w1"`) || !strings.Contains(err.Error(), "--id") {
		t.Fatalf("second w1: %v; want ErrIDInUse naming the id and --id", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("duplicate id detected after %v", took)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("w1: %v", err)
	}
	w, err := New(ctx, opts("w1"))
	if err != nil {
		t.Fatalf("w1 again after the first stopped: %v", err)
	}
	w.client.Close()
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
