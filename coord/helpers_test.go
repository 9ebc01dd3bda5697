package coord_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// testSessionTimeout is the session timeout of every test client.
const testSessionTimeout = 1500 * time.Millisecond

// shared is the one standalone ZooKeeper most tests use (each under its own
// root), started on first use: starting a JVM per test would dominate the
// package's run time on a 2-core machine.
var shared struct {
	once sync.Once
	srv  *testenv.ZKServer
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		_ = shared.srv.Close()
	}
	os.Exit(code)
}

// zkAddr returns the shared server's address, starting it if needed.
func zkAddr(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.srv, shared.err = testenv.StartZooKeeper(ctx, testenv.ZKConfig{})
	})
	if shared.err != nil {
		t.Fatalf("start shared zookeeper: %v", shared.err)
	}
	return shared.srv.Addr()
}

// testLogger logs to stderr when COORD_TEST_LOG is set ("debug" for
// everything), and nowhere otherwise.
func testLogger() *slog.Logger {
	switch os.Getenv("COORD_TEST_LOG") {
	case "":
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	case "debug":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default:
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
}

// connect opens a client with the test session timeout, closed at cleanup.
func connect(t testing.TB, servers string, opts ...coord.Option) *coord.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append([]coord.Option{coord.WithSessionTimeout(testSessionTimeout), coord.WithLogger(testLogger())}, opts...)
	c, err := coord.Connect(ctx, servers, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", servers, err)
	}
	t.Cleanup(c.Close)
	return c
}

// proxied starts a proxy to target and a client through it (opts as
// connect's).
func proxied(t testing.TB, target string, opts ...coord.Option) (*testenv.Proxy, *coord.Client) {
	t.Helper()
	p := testenv.ProxyFor(t, target)
	return p, connect(t, p.Addr(), opts...)
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

// eventually polls cond every 20ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ctxT returns a context bounded by d and cancelled at cleanup.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// sleepCtx sleeps d or until ctx ends; it reports whether it slept fully.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
