package frontier_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// testSessionTimeout is the session timeout of every test client.
const testSessionTimeout = 1500 * time.Millisecond

func TestMain(m *testing.M) { testenv.Main(m) }

// zkAddr returns the shared server's address (testenv.SharedZooKeeper).
func zkAddr(t testing.TB) string { return testenv.SharedZooKeeper(t).Addr() }

// connect opens a client with the test session timeout, closed at cleanup.
func connect(t testing.TB, servers string) *coord.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := coord.Connect(ctx, servers, coord.Config{SessionTimeout: testSessionTimeout, Logger: testenv.Logger()})
	if err != nil {
		t.Fatalf("connect %s: %v", servers, err)
	}
	t.Cleanup(c.Close)
	return c
}

// proxied starts a proxy to target and a client through it.
func proxied(t testing.TB, target string) (*testenv.Proxy, *coord.Client) {
	t.Helper()
	p := testenv.ProxyFor(t, target)
	return p, connect(t, p.Addr())
}

var rootSeq atomic.Int64

// testRoot returns a fresh znode root for a test.
func testRoot(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/frontiertest/%s-%d-%d", name, time.Now().UnixNano()%1e6, rootSeq.Add(1))
}

// newQueue creates the queue of a fresh crawl root with shards shards and
// the given store levels.
func newQueue(t testing.TB, c *coord.Client, root string, shards int, levels ...[]string) *coord.Queue {
	t.Helper()
	q, err := coord.CreateQueue(testenv.Context(t, 30*time.Second), c, root, shards, levels...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// openQueue opens the queue of the existing crawl at root.
func openQueue(t testing.TB, c *coord.Client, root string) *coord.Queue {
	t.Helper()
	q, err := coord.OpenQueue(testenv.Context(t, 30*time.Second), c, root)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
