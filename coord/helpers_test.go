package coord_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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
	return connectWith(t, servers, coord.Config{})
}

// connectWith is connect with cfg, its zero SessionTimeout and Logger
// filled in with the test session timeout and testenv.Logger.
func connectWith(t testing.TB, servers string, cfg coord.Config) *coord.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = testSessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = testenv.Logger()
	}
	c, err := coord.Connect(ctx, servers, cfg)
	if err != nil {
		t.Fatalf("connect %s: %v", servers, err)
	}
	t.Cleanup(c.Close)
	return c
}

// proxied starts a proxy to target and a client through it (cfg as
// connectWith's).
func proxied(t testing.TB, target string, cfg coord.Config) (*testenv.Proxy, *coord.Client) {
	t.Helper()
	p := testenv.ProxyFor(t, target)
	return p, connectWith(t, p.Addr(), cfg)
}

var rootSeq atomic.Int64

// testRoot returns a fresh znode root for a test.
func testRoot(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/coordtest/%s-%d-%d", name, time.Now().UnixNano()%1e6, rootSeq.Add(1))
}

// key returns a deterministic hex seen-set key for i.
func key(prefix string, i int) string {
	h := sha1.Sum([]byte(fmt.Sprintf("%s-%d", prefix, i)))
	return hex.EncodeToString(h[:])
}
