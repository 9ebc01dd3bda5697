package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Defaults used by ZKConfig when a field is left zero.
const (
	// DefaultTickTime is ZooKeeper's tickTime for tests: with 200 ms the
	// server accepts session timeouts from 2 to 20 ticks (400 ms .. 4 s),
	// per the ZooKeeper Administrator's Guide (minSessionTimeout,
	// maxSessionTimeout).
	DefaultTickTime = 200 * time.Millisecond
	// DefaultJavaPath is the java binary looked up in $PATH.
	DefaultJavaPath = "java"
	// DefaultClassPath is the class path of Debian's zookeeper package
	// (see /etc/zookeeper/conf/environment).
	DefaultClassPath = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
	// DefaultStartTimeout bounds how long a start or restart waits for the
	// server (or the quorum) to serve.
	DefaultStartTimeout = 30 * time.Second
)

// slf4jSimpleJar is Debian's slf4j-simple binding. Debian's zookeeper.jar
// has only slf4j-api on its manifest class path, so without a binding
// ZooKeeper logs nothing; with this jar it logs to stderr, which we capture.
const slf4jSimpleJar = "/usr/share/java/slf4j-simple.jar"

// quorumPeerMain is the ZooKeeper entry point used by zkServer.sh.
const quorumPeerMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// zkStopGrace is how long Stop waits after SIGTERM before sending SIGKILL.
const zkStopGrace = 10 * time.Second

// zkPollInterval is the pause between readiness probes.
const zkPollInterval = 100 * time.Millisecond

// zkLogLines is how many log lines errors carry.
const zkLogLines = 40

// Sentinel errors callers may branch on with errors.Is.
var (
	// ErrNotServing means a server answered but is not serving client
	// requests (it is not running, or it has no quorum).
	ErrNotServing = errors.New("testenv: zookeeper not serving")
	// ErrNoLeader means no running ensemble member reports Mode: leader.
	ErrNoLeader = errors.New("testenv: no zookeeper leader")
	// ErrClosed means the server or ensemble was closed.
	ErrClosed = errors.New("testenv: zookeeper closed")
	// ErrExited means the ZooKeeper process exited while we waited for it.
	ErrExited = errors.New("testenv: zookeeper process exited")
)

// ZKConfig configures StartZooKeeper and StartEnsemble. Zero fields take the
// defaults named per field, so ZKConfig{} is a valid test configuration.
type ZKConfig struct {
	// TickTime is ZooKeeper's basic time unit (default DefaultTickTime,
	// 200 ms). Session timeouts must lie between 2 and 20 ticks.
	// ZooKeeper takes it in whole milliseconds.
	TickTime time.Duration
	// Dir holds the configuration, log file and data directory. Default: a
	// new os.MkdirTemp directory, removed by Close. A Dir given here is kept.
	// An ensemble puts member i (1-based) in Dir/zk<i>.
	Dir string
	// ClientPort is the client port on 127.0.0.1. 0 (default) picks a free
	// port. An ensemble gives member i (0-based) ClientPort+i.
	ClientPort int
	// JavaPath is the java binary (default DefaultJavaPath).
	JavaPath string
	// ClassPath is the JVM class path (default DefaultClassPath, plus
	// Debian's slf4j-simple jar when installed so ZooKeeper logs).
	ClassPath string
	// JavaOpts are extra JVM arguments placed after the defaults, so a
	// -Dname=value here overrides one of ours.
	JavaOpts []string
	// ExtraConfig are extra zoo.cfg lines ("key=value"), written after
	// ours, e.g. secureClientPort and the ssl.* keys of a TLS test.
	ExtraConfig []string
	// StartTimeout bounds the wait until the server or quorum serves
	// (default DefaultStartTimeout, 30 s).
	StartTimeout time.Duration
	// Logger receives lifecycle events (default slog.Default()). Starts and
	// stops log at Debug, unexpected exits at Warn.
	Logger *slog.Logger
	// ForceSync writes forceSync=yes into zoo.cfg: every transaction log
	// write is fsynced before the server acknowledges it, as ZooKeeper
	// does by default in production (ZooKeeper Administrator's Guide,
	// "Advanced Configuration", zookeeper.forceSync). false (the default,
	// for tests) writes forceSync=no: the data survives a process kill
	// (the page cache does) but not a machine crash.
	ForceSync bool
}

// withDefaults returns cfg with zero fields filled in, or an error naming
// the invalid field.
func (cfg ZKConfig) withDefaults() (ZKConfig, error) {
	if cfg.TickTime == 0 {
		cfg.TickTime = DefaultTickTime
	}
	if cfg.TickTime < time.Millisecond {
		return cfg, fmt.Errorf("testenv: ZKConfig.TickTime=%v: must be at least 1ms", cfg.TickTime)
	}
	if cfg.ClientPort < 0 || cfg.ClientPort > 65535 {
		return cfg, fmt.Errorf("testenv: ZKConfig.ClientPort=%d: must be 0 (free port) or 1..65535", cfg.ClientPort)
	}
	if cfg.JavaPath == "" {
		cfg.JavaPath = DefaultJavaPath
	}
	if cfg.ClassPath == "" {
		cfg.ClassPath = DefaultClassPath
		if _, err := os.Stat(slf4jSimpleJar); err == nil {
			cfg.ClassPath += ":" + slf4jSimpleJar
		}
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StartTimeout < 0 {
		return cfg, fmt.Errorf("testenv: ZKConfig.StartTimeout=%v: must be positive", cfg.StartTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// zkPeer describes one ensemble member in zoo.cfg (server.<id>=...).
type zkPeer struct {
	id           int
	peerPort     int
	electionPort int
}

// ZKServer is one running (or stopped) ZooKeeper server process: standalone
// from StartZooKeeper or a member of an Ensemble. Its client port, data
// directory and configuration stay fixed across Stop/Kill and Restart.
// Methods are safe for concurrent use.
type ZKServer struct {
	cfg     ZKConfig
	id      int // myid; 0 when standalone
	dir     string
	ownsDir bool
	port    int
	cfgPath string
	logPath string
	log     *slog.Logger

	life sync.Mutex // serializes Stop, Kill, Restart and Close

	mu     sync.Mutex // guards proc and closed
	proc   *zkProc
	closed bool
}

// zkProc is one run of the JVM.
type zkProc struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	err      error         // cmd.Wait result, valid after done
	stopping chan struct{} // closed when we asked it to exit
	stopOnce sync.Once
	served   atomic.Bool // set once it served; later exits are unexpected
}

func (p *zkProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartZooKeeper starts a standalone ZooKeeper server on 127.0.0.1 (a free
// port unless cfg.ClientPort is set) and returns once it serves: `ruok`
// answers `imok` and `srvr` shows "Mode: standalone" (ZooKeeper
// Administrator's Guide, four letter words). It waits at most
// cfg.StartTimeout and honours ctx; on failure the process is killed and the
// error carries the tail of the server log. When ZooKeeper cannot bind a
// port it picked as free, it retries with fresh ports (up to 3 times).
//
// Call Close when done (ZooKeeper does it via t.Cleanup). The process runs
// in its own process group and gets SIGKILL if the calling process dies.
func StartZooKeeper(ctx context.Context, cfg ZKConfig) (*ZKServer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	const attempts = 3
	for attempt := 1; ; attempt++ {
		s, err := startZKStandalone(ctx, cfg)
		if err == nil {
			return s, nil
		}
		if attempt < attempts && cfg.ClientPort == 0 && errors.Is(err, errZKPortTaken) && ctx.Err() == nil {
			cfg.Logger.Debug("zookeeper port taken, retrying with a fresh port", "attempt", attempt, "err", err)
			continue
		}
		return nil, err
	}
}

func startZKStandalone(ctx context.Context, cfg ZKConfig) (*ZKServer, error) {
	dir, owns, err := zkServerDir(cfg.Dir, "zk-")
	if err != nil {
		return nil, err
	}
	port := cfg.ClientPort
	if port == 0 {
		ports, err := FreePorts(1)
		if err != nil {
			zkRemoveIfOwned(dir, owns)
			return nil, err
		}
		port = ports[0]
	}
	s, err := newZKServer(cfg, dir, owns, 0, port, nil)
	if err != nil {
		zkRemoveIfOwned(dir, owns)
		return nil, err
	}
	if err := s.spawn(); err != nil {
		_ = s.Close()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := s.waitServing(wctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	cfg.Logger.Debug("zookeeper serving", "addr", s.Addr(), "dir", s.dir)
	return s, nil
}

// zkServerDir returns dir (created if missing, not owned) or a new temp dir
// (owned).
func zkServerDir(dir, pattern string) (string, bool, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", pattern)
		if err != nil {
			return "", false, fmt.Errorf("testenv: create temp dir: %w", err)
		}
		return d, true, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("testenv: ZKConfig.Dir=%q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", false, fmt.Errorf("testenv: ZKConfig.Dir=%q: %w", dir, err)
	}
	return abs, false, nil
}

func zkRemoveIfOwned(dir string, owns bool) {
	if owns {
		_ = os.RemoveAll(dir)
	}
}

// newZKServer writes dir/zoo.cfg (and dir/data/myid for ensemble members)
// and returns the server, not yet started. peers is nil for standalone.
func newZKServer(cfg ZKConfig, dir string, owns bool, id, port int, peers []zkPeer) (*ZKServer, error) {
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: create data dir: %w", err)
	}
	tick := max(cfg.TickTime.Milliseconds(), 1)
	var b strings.Builder
	fmt.Fprintf(&b, "# written by zkcrawl testenv\n")
	fmt.Fprintf(&b, "tickTime=%d\n", tick)
	// initLimit/syncLimit are in ticks: small, so a dead leader is noticed
	// and a new follower syncs quickly.
	fmt.Fprintf(&b, "initLimit=10\nsyncLimit=5\n")
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	fmt.Fprintf(&b, "clientPort=%d\n", port)
	fmt.Fprintf(&b, "clientPortAddress=127.0.0.1\n")
	fmt.Fprintf(&b, "4lw.commands.whitelist=*\n")
	fmt.Fprintf(&b, "admin.enableServer=false\n")
	// Test data need not survive a machine crash, only a process kill
	// (the page cache survives that), so tests skip fsync: faster on shared
	// CI. Benchmarks ask for ZooKeeper's production default.
	if cfg.ForceSync {
		fmt.Fprintf(&b, "forceSync=yes\n")
	} else {
		fmt.Fprintf(&b, "forceSync=no\n")
	}
	// Pre-allocate transaction logs 4 MB at a time instead of 64 MB.
	fmt.Fprintf(&b, "preAllocSize=4096\n")
	for _, p := range peers {
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", p.id, p.peerPort, p.electionPort)
	}
	for _, line := range cfg.ExtraConfig {
		fmt.Fprintf(&b, "%s\n", line)
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: write %s: %w", cfgPath, err)
	}
	if peers != nil {
		myid := filepath.Join(dataDir, "myid")
		if err := os.WriteFile(myid, []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("testenv: write %s: %w", myid, err)
		}
	}
	return &ZKServer{
		cfg:     cfg,
		id:      id,
		dir:     dir,
		ownsDir: owns,
		port:    port,
		cfgPath: cfgPath,
		logPath: filepath.Join(dir, "zookeeper.log"),
		log:     cfg.Logger.With("zk", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))),
	}, nil
}

// javaArgs returns the JVM command line after the java binary.
func (s *ZKServer) javaArgs() []string {
	args := []string{
		// Small, quick-starting JVM: tests start many of them on few cores.
		// The cap leaves room for a wide crawl on bin/zkserver: ZooKeeper's
		// last 500 transactions alone take about 120 MB at zkcrawl's 64 KiB
		// group commits (docs/design.md, "ZooKeeper's committed log").
		"-Xms32m", "-Xmx512m",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-XX:-UsePerfData", // no /tmp/hsperfdata_* files
		"-Djava.awt.headless=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
	}
	args = append(args, s.cfg.JavaOpts...)
	return append(args, "-cp", s.cfg.ClassPath, quorumPeerMain, s.cfgPath)
}

// spawn starts the JVM, appending its output to the log file.
func (s *ZKServer) spawn() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.proc != nil && !s.proc.exited() {
		return nil // already running
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: open zookeeper log: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	args := s.javaArgs()
	fmt.Fprintf(logf, "=== testenv %s: %s %s\n", time.Now().Format(time.RFC3339Nano), s.cfg.JavaPath, strings.Join(args, " "))
	cmd := exec.Command(s.cfg.JavaPath, args...)
	cmd.Dir = s.dir
	cmd.Stdin = nil
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own process group: signals reach the whole JVM
		Pdeathsig: syscall.SIGKILL, // nothing survives a crashed test binary
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start %s: %w", s.cfg.JavaPath, err)
	}
	p := &zkProc{cmd: cmd, done: make(chan struct{}), stopping: make(chan struct{})}
	s.proc = p
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		select {
		case <-p.stopping:
		default:
			if p.served.Load() {
				s.log.Warn("zookeeper exited unexpectedly", "pid", cmd.Process.Pid, "err", p.err)
			} else {
				s.log.Debug("zookeeper exited during start", "pid", cmd.Process.Pid, "err", p.err)
			}
		}
	}()
	s.log.Debug("zookeeper started", "pid", cmd.Process.Pid, "dir", s.dir)
	return nil
}

// current returns the current process (nil if never started) and whether
// the server was closed.
func (s *ZKServer) current() (*zkProc, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc, s.closed
}

// errZKPortTaken marks start failures caused by a port already in use.
var errZKPortTaken = errors.New("port already in use")

// exitError describes an early exit, wrapping errZKPortTaken when the log
// shows a bind failure. It looks further back than the tail it quotes: an
// election port that cannot be bound is logged with a stack trace per
// retry and then the whole shutdown, well over zkLogLines lines.
func (s *ZKServer) exitError(p *zkProc) error {
	tail := s.LogTail(zkLogLines)
	if strings.Contains(s.LogTail(10*zkLogLines), "Address already in use") {
		return fmt.Errorf("%w (%w): %s: %v\n--- log tail %s ---\n%s", ErrExited, errZKPortTaken, s.Addr(), p.err, s.logPath, tail)
	}
	return fmt.Errorf("%w: %s: %v\n--- log tail %s ---\n%s", ErrExited, s.Addr(), p.err, s.logPath, tail)
}

// waitServing polls until the server serves (ruok=imok and a Mode line),
// the process exits, or ctx ends.
func (s *ZKServer) waitServing(ctx context.Context) error {
	p, _ := s.current()
	if p == nil {
		return fmt.Errorf("%w: %s: not started", ErrNotServing, s.Addr())
	}
	var last error
	t := time.NewTicker(zkPollInterval)
	defer t.Stop()
	for {
		if p.exited() {
			return s.exitError(p)
		}
		_, err := s.Mode(ctx)
		if err == nil {
			p.served.Store(true)
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: zookeeper %s not serving: %w (last probe: %v)\n--- log tail %s ---\n%s",
				s.Addr(), ctx.Err(), last, s.logPath, s.LogTail(zkLogLines))
		case <-p.done:
		case <-t.C:
		}
	}
}

// ZooKeeper starts a standalone ZooKeeper server for a test or benchmark
// with default ZKConfig (200 ms ticks, temp dir) and registers Close with
// t.Cleanup. On failure it calls t.Fatal with the error, which includes the
// server log tail.
func ZooKeeper(t testing.TB) *ZKServer {
	t.Helper()
	return ZooKeeperWith(t, ZKConfig{})
}

// ZooKeeperWith is ZooKeeper with an explicit configuration.
func ZooKeeperWith(t testing.TB, cfg ZKConfig) *ZKServer {
	t.Helper()
	s, err := StartZooKeeper(t.Context(), cfg)
	if err != nil {
		t.Fatalf("testenv: start zookeeper: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Addr returns the client address "127.0.0.1:<port>", stable across
// restarts. Pass it to zk.Connect.
func (s *ZKServer) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the client port.
func (s *ZKServer) Port() int { return s.port }

// ID returns the server's myid in its ensemble (1-based), or 0 for a
// standalone server.
func (s *ZKServer) ID() int { return s.id }

// Dir returns the server directory holding zoo.cfg, zookeeper.log and data/.
func (s *ZKServer) Dir() string { return s.dir }

// LogPath returns the file receiving the JVM's stdout and stderr (all runs,
// appended; each run starts with a "=== testenv" line).
func (s *ZKServer) LogPath() string { return s.logPath }

// Pid returns the process id of the server's current JVM (a new one after
// each Restart), for reading its CPU time and memory from /proc; 0 when no
// JVM runs (never started, stopped, killed or closed).
func (s *ZKServer) Pid() int {
	p, closed := s.current()
	if closed || p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the JVM process is alive (it may still be
// starting or without quorum; see Mode).
func (s *ZKServer) Running() bool {
	p, closed := s.current()
	return !closed && p != nil && !p.exited()
}

// Wait blocks until the current JVM process exits or ctx ends. It returns
// nil on exit (whatever the exit status; see LogTail), ctx.Err() on
// cancellation, and ErrNotServing if no process was started.
func (s *ZKServer) Wait(ctx context.Context) error {
	p, _ := s.current()
	if p == nil {
		return fmt.Errorf("%w: %s: not started", ErrNotServing, s.Addr())
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop asks the server to exit with SIGTERM (sent to its process group) and
// waits for it, sending SIGKILL after 10 s. The data directory is kept, so
// Restart resumes with the same data. Stopping a stopped server returns nil;
// a closed one returns ErrClosed. It blocks at most about 15 s and takes no
// context, like io.Closer.
func (s *ZKServer) Stop() error {
	s.life.Lock()
	defer s.life.Unlock()
	return s.signalAndWait(syscall.SIGTERM, zkStopGrace)
}

// Kill sends SIGKILL to the server's process group and waits for it to
// exit: a crash, with no clean shutdown. The data directory is kept.
// Killing a stopped server returns nil; a closed one returns ErrClosed.
func (s *ZKServer) Kill() error {
	s.life.Lock()
	defer s.life.Unlock()
	return s.signalAndWait(syscall.SIGKILL, 0)
}

// signalAndWait sends sig to the process group, waits up to grace, then
// escalates to SIGKILL. Caller holds s.life.
func (s *ZKServer) signalAndWait(sig syscall.Signal, grace time.Duration) error {
	p, closed := s.current()
	if closed {
		return fmt.Errorf("%w: %s", ErrClosed, s.Addr())
	}
	if p == nil || p.exited() {
		return nil
	}
	p.stopOnce.Do(func() { close(p.stopping) })
	pid := p.cmd.Process.Pid
	s.log.Debug("stopping zookeeper", "pid", pid, "signal", sig)
	if sig != syscall.SIGKILL {
		_ = syscall.Kill(-pid, sig)
		select {
		case <-p.done:
			return nil
		case <-time.After(grace):
			s.log.Warn("zookeeper ignored signal, killing", "pid", pid, "signal", sig, "grace", grace)
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("testenv: zookeeper %s (pid %d) did not exit after SIGKILL", s.Addr(), pid)
	}
}

// Restart starts the server again with the same client port, configuration
// and data directory, stopping it first (SIGTERM) if it still runs, and
// waits until it serves: Mode standalone, or leader/follower for an
// ensemble member (which needs a quorum of running members). The wait is
// bounded by ctx and ZKConfig.StartTimeout; on timeout the error carries the
// log tail and the process is left running for inspection (Close kills it).
func (s *ZKServer) Restart(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	if err := s.signalAndWait(syscall.SIGTERM, zkStopGrace); err != nil {
		return err
	}
	if err := s.spawn(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	if err := s.waitServing(wctx); err != nil {
		return err
	}
	s.log.Debug("zookeeper restarted and serving")
	return nil
}

// Close kills the server (SIGKILL to its process group), waits for it and
// removes its directory if StartZooKeeper created it. It is idempotent and
// returns the first error only.
func (s *ZKServer) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	err := s.signalAndWait(syscall.SIGKILL, 0)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.ownsDir {
		if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
			err = fmt.Errorf("testenv: remove %s: %w", s.dir, rerr)
		}
	}
	return err
}

// Mode returns the server's role from the `srvr` four letter word:
// "standalone", "leader", "follower" or "observer". A server that answers
// "This ZooKeeper instance is not currently serving requests" (no quorum,
// or starting) yields ErrNotServing; a refused connection yields the dial
// error. Source: ZooKeeper Administrator's Guide, "The Four Letter Words".
func (s *ZKServer) Mode(ctx context.Context) (string, error) {
	if _, closed := s.current(); closed {
		return "", fmt.Errorf("%w: %s", ErrClosed, s.Addr())
	}
	ok, err := FourLetterWord(ctx, s.Addr(), "ruok")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(ok) != "imok" {
		return "", fmt.Errorf("%w: %s: ruok answered %q", ErrNotServing, s.Addr(), ok)
	}
	out, err := FourLetterWord(ctx, s.Addr(), "srvr")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if mode, found := strings.CutPrefix(sc.Text(), "Mode:"); found {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("%w: %s: srvr answered %q", ErrNotServing, s.Addr(), strings.TrimSpace(out))
}

// FourLetterWord sends a ZooKeeper four letter word (e.g. "ruok", "srvr",
// "mntr", "cons") to addr and returns the whole answer; the server closes
// the connection after answering. The exchange is bounded by ctx and by 2 s.
// The server must whitelist the word (our zoo.cfg whitelists all). Source:
// ZooKeeper Administrator's Guide, "The Four Letter Words". Hand-written
// because go-zookeeper's FLW helpers take no context and parse only some
// words.
func FourLetterWord(ctx context.Context, addr, word string) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("testenv: four letter word %q: must be 4 letters", word)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("testenv: %s to %s: %w", word, addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// Cancellation before the deadline unblocks I/O by expiring it now.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("testenv: %s to %s: %w", word, addr, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("testenv: %s to %s: %w", word, addr, err)
	}
	return string(out), nil
}

// zkLogTailBytes caps how much of the log file LogTail reads.
const zkLogTailBytes = 256 << 10

// LogTail returns the last n lines (at most the last 256 KiB) of the
// server's log file: the JVM's stdout and stderr, including ZooKeeper's own
// log lines when slf4j-simple is on the class path. It returns "" if the
// log cannot be read or n < 1.
func (s *ZKServer) LogTail(n int) string {
	if n < 1 {
		return ""
	}
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-zkLogTailBytes, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	buf = bytes.TrimRight(buf, "\n")
	lines := bytes.Split(buf, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
