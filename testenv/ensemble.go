package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ensemble is an n-node ZooKeeper quorum on loopback ports, each member a
// separate JVM with its own directory, myid file and client, peer and
// election ports (ZooKeeper Administrator's Guide, "Clustered (Multi-Server)
// Setup"). Methods are safe for concurrent use.
type Ensemble struct {
	cfg     ZKConfig
	dir     string
	ownsDir bool
	servers []*ZKServer

	mu     sync.Mutex
	closed bool
}

// StartEnsemble starts an n-node ZooKeeper ensemble (n >= 1; use an odd n,
// typically 3) and returns once the quorum has formed: every member answers
// `ruok` with `imok` and `srvr` with Mode leader or follower, exactly one
// being leader. All 3n ports (client, peer, election) are picked at once
// with FreePorts, unless cfg.ClientPort fixes the client ports to
// ClientPort+i. Member i (0-based) has myid i+1 and lives in cfg.Dir/zk<i+1>
// (a temp dir by default, removed by Close). The wait is bounded by ctx and
// cfg.StartTimeout; on failure every member is killed and the error carries
// each member's log tail. Bind failures on picked ports are retried with
// fresh ports (up to 3 times).
//
// With n == 1 ZooKeeper runs the single member in standalone mode.
func StartEnsemble(ctx context.Context, n int, cfg ZKConfig) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("testenv: StartEnsemble: n=%d: need at least 1 server", n)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.ClientPort != 0 && cfg.ClientPort+n-1 > 65535 {
		return nil, fmt.Errorf("testenv: ZKConfig.ClientPort=%d: ports up to %d exceed 65535", cfg.ClientPort, cfg.ClientPort+n-1)
	}
	const attempts = 3
	for attempt := 1; ; attempt++ {
		e, err := startZKEnsemble(ctx, n, cfg)
		if err == nil {
			return e, nil
		}
		if attempt < attempts && errors.Is(err, errZKPortTaken) && ctx.Err() == nil {
			cfg.Logger.Debug("zookeeper ensemble port taken, retrying with fresh ports", "attempt", attempt, "err", err)
			continue
		}
		return nil, err
	}
}

func startZKEnsemble(ctx context.Context, n int, cfg ZKConfig) (*Ensemble, error) {
	root, owns, err := zkServerDir(cfg.Dir, "zk-ensemble-")
	if err != nil {
		return nil, err
	}
	e := &Ensemble{cfg: cfg, dir: root, ownsDir: owns}
	need := 2 * n
	if cfg.ClientPort == 0 {
		need += n
	}
	ports, err := FreePorts(need)
	if err != nil {
		_ = e.Close()
		return nil, err
	}
	peers := make([]zkPeer, n)
	for i := range n {
		peers[i] = zkPeer{id: i + 1, peerPort: ports[2*i], electionPort: ports[2*i+1]}
	}
	for i := range n {
		clientPort := cfg.ClientPort + i
		if cfg.ClientPort == 0 {
			clientPort = ports[2*n+i]
		}
		dir := filepath.Join(root, fmt.Sprintf("zk%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			_ = e.Close()
			return nil, fmt.Errorf("testenv: create %s: %w", dir, err)
		}
		s, err := newZKServer(cfg, dir, false, i+1, clientPort, peers)
		if err != nil {
			_ = e.Close()
			return nil, err
		}
		e.servers = append(e.servers, s)
	}
	for _, s := range e.servers {
		if err := s.spawn(); err != nil {
			_ = e.Close()
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := e.waitQuorum(wctx, true); err != nil {
		_ = e.Close()
		return nil, err
	}
	cfg.Logger.Debug("zookeeper ensemble serving", "connect", e.ConnString(), "dir", root)
	return e, nil
}

// NewEnsemble starts an n-node ensemble for a test or benchmark with
// default ZKConfig and registers Close with t.Cleanup. On failure it calls
// t.Fatal with the error, which includes the members' log tails.
func NewEnsemble(t testing.TB, n int) *Ensemble {
	t.Helper()
	return NewEnsembleWith(t, n, ZKConfig{})
}

// NewEnsembleWith is NewEnsemble with an explicit configuration.
func NewEnsembleWith(t testing.TB, n int, cfg ZKConfig) *Ensemble {
	t.Helper()
	e, err := StartEnsemble(t.Context(), n, cfg)
	if err != nil {
		t.Fatalf("testenv: start zookeeper ensemble: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// Servers returns the members in myid order (index i has myid i+1). The
// slice is a copy; the servers are shared.
func (e *Ensemble) Servers() []*ZKServer {
	return append([]*ZKServer(nil), e.servers...)
}

// Addrs returns the members' client addresses ("127.0.0.1:port"), in
// Servers order. Pass it to zk.Connect.
func (e *Ensemble) Addrs() []string {
	addrs := make([]string, len(e.servers))
	for i, s := range e.servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// ConnString returns the ZooKeeper connect string "h:p,h:p,h:p".
func (e *Ensemble) ConnString() string {
	return strings.Join(e.Addrs(), ",")
}

// Dir returns the ensemble's root directory (members in zk1, zk2, ...).
func (e *Ensemble) Dir() string { return e.dir }

// Leader waits until exactly one running member reports Mode leader (via
// `srvr`) and returns its index in Servers. A single-member ensemble's
// standalone server counts as leader. It polls every 100 ms until ctx ends,
// then returns an error wrapping ErrNoLeader and ctx.Err().
func (e *Ensemble) Leader(ctx context.Context) (int, error) {
	t := time.NewTicker(zkPollInterval)
	defer t.Stop()
	for {
		if e.isClosed() {
			return -1, ErrClosed
		}
		leaders, _ := e.probe(ctx)
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%w among %s: %w", ErrNoLeader, e.ConnString(), ctx.Err())
		case <-t.C:
		}
	}
}

// WaitQuorum waits until the ensemble serves: every running member (see
// ZKServer.Running) reports Mode leader or follower, exactly one is leader,
// and a majority of all members is running. Stopped or killed members are
// ignored. It polls every 100 ms until ctx ends, then returns an error
// wrapping ErrNotServing with each member's state and log tail.
func (e *Ensemble) WaitQuorum(ctx context.Context) error {
	return e.waitQuorum(ctx, false)
}

// waitQuorum implements WaitQuorum; with failOnExit (start-up) a member
// process that exits fails the wait at once.
func (e *Ensemble) waitQuorum(ctx context.Context, failOnExit bool) error {
	t := time.NewTicker(zkPollInterval)
	defer t.Stop()
	var states []string
	for {
		if e.isClosed() {
			return ErrClosed
		}
		if failOnExit {
			for _, s := range e.servers {
				if p, _ := s.current(); p != nil && p.exited() {
					return s.exitError(p)
				}
			}
		}
		var ok bool
		ok, states = e.quorumFormed(ctx)
		if ok {
			for _, s := range e.servers {
				if p, _ := s.current(); p != nil {
					p.served.Store(true)
				}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			var b strings.Builder
			for i, s := range e.servers {
				fmt.Fprintf(&b, "\n--- server %d %s (%s), log tail %s ---\n%s", s.ID(), s.Addr(), states[i], s.LogPath(), s.LogTail(20))
			}
			return fmt.Errorf("%w: ensemble %s has no quorum: %w%s", ErrNotServing, e.ConnString(), ctx.Err(), b.String())
		case <-t.C:
		}
	}
}

// probe asks every running member for its mode. It returns the indexes of
// leaders and, per member, a state description ("leader", "follower",
// "stopped" or the probe error).
func (e *Ensemble) probe(ctx context.Context) (leaders []int, states []string) {
	states = make([]string, len(e.servers))
	var wg sync.WaitGroup
	for i, s := range e.servers {
		if !s.Running() {
			states[i] = "stopped"
			continue
		}
		wg.Go(func() {
			mode, err := s.Mode(ctx)
			if err != nil {
				states[i] = err.Error()
				return
			}
			states[i] = mode
		})
	}
	wg.Wait()
	for i, st := range states {
		if st == "leader" || (st == "standalone" && len(e.servers) == 1) {
			leaders = append(leaders, i)
		}
	}
	return leaders, states
}

// quorumFormed reports whether the ensemble serves (see WaitQuorum).
func (e *Ensemble) quorumFormed(ctx context.Context) (bool, []string) {
	leaders, states := e.probe(ctx)
	running := 0
	for _, st := range states {
		switch st {
		case "stopped":
			continue
		case "leader", "follower", "observer", "standalone":
			running++
		default:
			return false, states
		}
	}
	return len(leaders) == 1 && running > len(e.servers)/2, states
}

func (e *Ensemble) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Close kills every member (SIGKILL), waits for them and removes the
// ensemble directory if StartEnsemble created it. It is idempotent and
// returns the first error only.
func (e *Ensemble) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	errs := make([]error, len(e.servers))
	var wg sync.WaitGroup
	for i, s := range e.servers {
		wg.Go(func() { errs[i] = s.Close() })
	}
	wg.Wait()
	var err error
	for _, x := range errs {
		if x != nil {
			err = x
			break
		}
	}
	if e.ownsDir {
		if rerr := os.RemoveAll(e.dir); rerr != nil && err == nil {
			err = fmt.Errorf("testenv: remove %s: %w", e.dir, rerr)
		}
	}
	return err
}
