package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// testSessionTimeout is the client session timeout used by these tests:
// within the 400 ms .. 4 s the default 200 ms tick allows.
const testSessionTimeout = 1500 * time.Millisecond

// zkLogger routes go-zookeeper's log lines to slog at Debug, so they never
// outlive a test through t.Log.
type zkLogger struct{}

func (zkLogger) Printf(format string, args ...any) {
	slog.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}

// connect opens a go-zookeeper session to addrs, waits until it has a
// session and registers Close with t.Cleanup. The returned channel carries
// the remaining session events.
func zkConnect(t *testing.T, addrs []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect(addrs, timeout, zk.WithLogger(zkLogger{}))
	if err != nil {
		t.Fatalf("zk.Connect(%v): %v", addrs, err)
	}
	t.Cleanup(conn.Close)
	zkWaitState(t, events, zk.StateHasSession, 10*time.Second)
	return conn, events
}

// zkWaitState reads session events until one has the wanted state.
func zkWaitState(t *testing.T, events <-chan zk.Event, want zk.State, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	var seen []string
	for {
		select {
		case ev := <-events:
			if ev.Type != zk.EventSession {
				continue
			}
			seen = append(seen, ev.State.String())
			if ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v session event within %v; saw %v", want, within, seen)
		}
	}
}

// retry calls op until it succeeds or ctx ends, returning the last error.
func zkRetry(ctx context.Context, op func() error) error {
	for {
		err := op()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// zkCreate creates path, treating NodeExists after a connection
// loss as success (the earlier attempt committed).
func zkCreate(conn *zk.Conn, path string, data []byte) error {
	_, err := conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	s := ZooKeeper(t)
	ctx := t.Context()

	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want 127.0.0.1:port", s.Addr())
	}
	mode, err := s.Mode(ctx)
	if err != nil || mode != "standalone" {
		t.Fatalf("Mode() = %q, %v; want standalone", mode, err)
	}

	pid := s.Pid()
	if pid <= 0 {
		t.Errorf("Pid() = %d of a running server", pid)
	}
	// The heap after a full collection: ZooKeeper's own classes and
	// buffers, well under testenv's -Xmx256m.
	if _, err := exec.LookPath("jcmd"); err == nil {
		if kb, err := s.LiveHeapKB(ctx); err != nil || kb < 512 || kb > 256<<10 {
			t.Errorf("LiveHeapKB() = %d KiB, %v; want 512 KiB .. 256 MiB", kb, err)
		}
	}
	// A server writes a snapshot when it starts and preallocates its log
	// on the first write (below); DataFiles lists both.
	if snaps, _, err := s.DataFiles(); err != nil || len(snaps) == 0 {
		t.Errorf("DataFiles() = %v, %v; want the start's snapshot", snaps, err)
	}

	conn, _ := zkConnect(t, []string{s.Addr()}, testSessionTimeout)
	if _, err := conn.Create("/standalone", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /standalone: %v", err)
	}
	data, _, err := conn.Get("/standalone")
	if err != nil || string(data) != "hello" {
		t.Fatalf("get /standalone = %q, %v; want hello", data, err)
	}

	// Stop and Restart keep the port and the data directory.
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s.Running() {
		t.Fatal("Running() after Stop = true")
	}
	if got := s.Pid(); got != 0 {
		t.Errorf("Pid() after Stop = %d, want 0", got)
	}
	if _, err := s.Mode(ctx); err == nil {
		t.Fatal("Mode() of a stopped server succeeded")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if got := s.Pid(); got <= 0 || got == pid {
		t.Errorf("Pid() after Restart = %d, want a new process (was %d)", got, pid)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = zkRetry(rctx, func() error {
		data, _, err = conn.Get("/standalone")
		return err
	})
	if err != nil || string(data) != "hello" {
		t.Fatalf("get /standalone after restart = %q, %v; want hello", data, err)
	}
	if _, logBytes, err := s.DataFiles(); err != nil || logBytes == 0 {
		t.Errorf("DataFiles() after a write: logs of %d bytes, %v; want a log", logBytes, err)
	}
	if tail := s.LogTail(1000); !strings.Contains(tail, "=== testenv") {
		t.Errorf("LogTail lacks the start marker:\n%s", tail)
	}

	// Close is idempotent; afterwards the server is gone.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Mode(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Mode() after Close = %v, want ErrClosed", err)
	}
}

func TestEnsembleLeaderFailover(t *testing.T) {
	t.Parallel()
	e := NewEnsemble(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()

	if got := len(strings.Split(e.ConnString(), ",")); got != 3 {
		t.Fatalf("ConnString() = %q, want 3 addresses", e.ConnString())
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader: %v", err)
	}
	for i, s := range e.Servers() {
		mode, err := s.Mode(ctx)
		want := "follower"
		if i == leader {
			want = "leader"
		}
		if err != nil || mode != want {
			t.Errorf("server %d Mode() = %q, %v; want %s", i, mode, err, want)
		}
	}

	conn, _ := zkConnect(t, e.Addrs(), testSessionTimeout)
	if err := zkCreate(conn, "/before", nil); err != nil {
		t.Fatalf("create /before: %v", err)
	}
	// Through the connect string: a ceiling's multis each commit one
	// transaction, read as the highest zxid of the members.
	if c, err := WriteCeiling(ctx, e.ConnString(), 2, 2, 200*time.Millisecond); err != nil || c.Multis == 0 || c.ZxidDelta != c.Multis+c.Errors {
		t.Fatalf("WriteCeiling(ensemble) = %+v, %v; want multis, one zxid each", c, err)
	}

	old := e.Servers()[leader]
	if err := old.Kill(); err != nil {
		t.Fatalf("Kill leader: %v", err)
	}
	opCtx, opCancel := context.WithTimeout(ctx, 15*time.Second)
	defer opCancel()
	if err := zkRetry(opCtx, func() error { return zkCreate(conn, "/after", []byte("x")) }); err != nil {
		t.Fatalf("create /after once the leader is killed: %v", err)
	}
	newLeader, err := e.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader after kill: %v", err)
	}
	if newLeader == leader {
		t.Fatalf("Leader after kill = %d, the killed server", newLeader)
	}

	if err := old.Restart(ctx); err != nil {
		t.Fatalf("Restart old leader: %v", err)
	}
	if err := e.WaitQuorum(ctx); err != nil {
		t.Fatalf("WaitQuorum after restart: %v", err)
	}
	if mode, err := old.Mode(ctx); err != nil || mode != "follower" {
		t.Errorf("restarted old leader Mode() = %q, %v; want follower", mode, err)
	}
	// The restarted member caught up with writes made while it was down.
	direct, _ := zkConnect(t, []string{old.Addr()}, testSessionTimeout)
	if _, err := direct.Sync("/after"); err != nil {
		t.Fatalf("sync /after: %v", err)
	}
	data, _, err := direct.Get("/after")
	if err != nil || string(data) != "x" {
		t.Fatalf("get /after from restarted member = %q, %v; want x", data, err)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if _, err := StartEnsemble(ctx, 0, ZKConfig{}); err == nil {
		t.Error("StartEnsemble(n=0) succeeded")
	}
	if _, err := StartZooKeeper(ctx, ZKConfig{ClientPort: 70000}); err == nil {
		t.Error("StartZooKeeper(ClientPort=70000) succeeded")
	}
	if _, err := StartZooKeeper(ctx, ZKConfig{JavaPath: "/nonexistent/java"}); err == nil {
		t.Error("StartZooKeeper(JavaPath=/nonexistent/java) succeeded")
	}
	// A JVM that exits at once: the error says so and carries the log tail.
	_, err := StartZooKeeper(ctx, ZKConfig{ClassPath: "/nonexistent"})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "main class") {
		t.Errorf("StartZooKeeper(ClassPath=/nonexistent) = %v; want ErrExited with the log tail", err)
	}
	if _, err := FreePorts(0); err == nil {
		t.Error("FreePorts(0) succeeded")
	}
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatalf("FreePorts(5): %v", err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Errorf("FreePorts(5) = %v: bad or duplicate port %d", ports, p)
		}
		seen[p] = true
	}
}

func TestZooCfgForceSync(t *testing.T) {
	for _, force := range []bool{false, true} {
		cfg, err := ZKConfig{ForceSync: force}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		s, err := newZKServer(cfg, t.TempDir(), false, 0, 2181, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(s.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "forceSync=no\n", true: "forceSync=yes\n"}[force]
		if !strings.Contains(string(data), want) || strings.Count(string(data), "forceSync=") != 1 {
			t.Errorf("ForceSync=%v: zoo.cfg has no single %q:\n%s", force, want, data)
		}
	}
}

// TestExitErrorFindsBindFailureBeforeTheTail: an election port bind failure
// is followed by its retries' stack traces and the shutdown, more lines
// than an error quotes; it still marks the exit as a port taken, which
// StartEnsemble retries with fresh ports.
func TestExitErrorFindsBindFailureBeforeTheTail(t *testing.T) {
	var log strings.Builder
	log.WriteString("java.net.BindException: Address already in use\n")
	for i := range 3 * zkLogLines {
		fmt.Fprintf(&log, "shutdown line %d\n", i)
	}
	s := &ZKServer{logPath: filepath.Join(t.TempDir(), "zookeeper.log")}
	if err := os.WriteFile(s.logPath, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.exitError(&zkProc{err: errors.New("exit status 14")}); !errors.Is(err, errZKPortTaken) {
		t.Errorf("exitError = %v; want errZKPortTaken", err)
	}
}
