package testenv

// What every package's tests share: the logger they hand the code under
// test, and one standalone ZooKeeper per test binary.

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// LogEnv names the environment variable that turns test logs on:
// unset or empty logs nowhere; "info", "warn" or "error" log at that level
// to stderr; any other value ("1", "debug") logs everything.
const LogEnv = "ZKCRAWL_TEST_LOG"

// Logger returns the logger tests give the code under test, as LogEnv
// asks: by default a logger that writes nothing, so that a passing test
// stays quiet.
func Logger() *slog.Logger {
	v := strings.ToLower(os.Getenv(LogEnv))
	if v == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var level slog.Level
	if level.UnmarshalText([]byte(v)) != nil || v == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// shared is the test binary's standalone ZooKeeper (SharedZooKeeper).
var shared struct {
	once sync.Once
	srv  *ZKServer
	err  error
}

// SharedZooKeeper returns the test binary's one standalone ZooKeeper
// (default ZKConfig: 200 ms ticks, forceSync=no), started on first use
// within a minute and stopped by Main: a JVM per test would dominate a
// package's run time on a small machine. Tests that share it work under
// roots (or crawl names) of their own. A server that did not start fails
// every test that asks, with its error.
func SharedZooKeeper(t testing.TB) *ZKServer {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.srv, shared.err = StartZooKeeper(ctx, ZKConfig{Logger: Logger()})
	})
	if shared.err != nil {
		t.Fatalf("testenv: start the shared zookeeper: %v", shared.err)
	}
	return shared.srv
}

// Main runs the tests of m, stops the shared ZooKeeper if one started, and
// exits with the tests' status. A package whose tests call
// SharedZooKeeper has `func TestMain(m *testing.M) { testenv.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		_ = shared.srv.Close()
	}
	os.Exit(code)
}
