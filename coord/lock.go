package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
)

// lockInfix separates the GUID from the sequence number in a lock node name:
// "<guid>-lock-<10-digit sequence>" (ZooKeeper recipes: locks).
const lockInfix = "-lock-"

// Mutex is a distributed exclusive lock on a znode directory, bound to one
// Session like etcd's concurrency.NewMutex(s, pfx), following the ZooKeeper
// recipe "Locks" (ZooKeeper Recipes and Solutions):
//
//  1. create "<dir>/<guid>-lock-" ephemeral and sequential;
//  2. list the children (no watch, to avoid the herd effect);
//  3. if our node has the lowest sequence number we hold the lock;
//  4. otherwise set an exists watch on the node with the next lower
//     sequence number only, wait for it to go away, and go to 2.
//
// The GUID lets a create whose reply was lost to connection loss be found
// again, so it is never repeated (no orphan node, no deadlock). A cancelled
// Lock deletes its node, in the background if the create is still in
// flight.
//
// The lock lives as long as the session: when the session's Ctx is done
// the lock is lost (the server deleted the node) and the holder must stop.
// While the client is disconnected the holder cannot know whether the
// session still lives; holders needing strict mutual exclusion must also
// stop work on StateDisconnected (see Client.Subscribe).
//
// A Mutex value is one contender: a second Lock (or the tests' TryLock) while one is
// held or under way fails (ErrInvalidArgument). Use one Mutex per goroutine
// that contends.
type Mutex struct {
	s    *Session
	dir  string // absolute
	name string // as given
	log  *slog.Logger

	mu      sync.Mutex
	busy    bool   // a Lock or TryLock is under way
	node    string // absolute path of our node while held
	dirDone bool
}

// NewMutex returns a Mutex of session s on the lock directory path
// (absolute, e.g. "/zkcrawl/crawl1/locks/seeder"; the client's chroot is
// applied). The directory is created on first use. An invalid path makes
// every call return an error wrapping ErrInvalidArgument.
func NewMutex(s *Session, path string) *Mutex {
	return &Mutex{s: s, dir: s.c.abs(path), name: path, log: s.c.log.With("lock", path)}
}

// Lock blocks until the lock is held, ctx is done or the session ends. On
// ctx done it returns ctx's error and leaves no node behind.
//
// Errors: ErrSessionExpired when the session ends (its node is gone with
// it: take a new Session and a new Mutex); ErrInvalidArgument for a bad
// path or a Mutex already held or acquiring; ErrClosed; ctx errors;
// ZooKeeper errors that retries could not overcome.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, true)
	return err
}

// Unlock releases the lock by deleting our node. If ctx ends first the
// delete goes on in the background (until it succeeds or the session ends),
// so the lock is never left held by a live session.
//
// Errors: ErrNotFound if the Mutex does not hold the lock; ctx errors (the
// release continues in the background). A lock already lost with its
// session unlocks without error: its node is gone.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	node := m.node
	m.node = ""
	m.mu.Unlock()
	if node == "" {
		return fmt.Errorf("coord: Mutex.Unlock %s: not held: %w", m.name, ErrNotFound)
	}
	err := m.deleteNode(ctx, node)
	switch {
	case err == nil, isExpired(err), errors.Is(err, ErrClosed):
		return nil
	case ctx.Err() != nil || IsConnectionLoss(err):
		go m.deleteInBackground(node)
	}
	return fmt.Errorf("coord: Mutex.Unlock %s: %w", m.name, err)
}

// deleteNode deletes node (retried after connection loss; NoNode is done).
func (m *Mutex) deleteNode(ctx context.Context, node string) error {
	return m.s.c.retry(ctx, func(ctx context.Context) error {
		err := m.s.c.del(ctx, node, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

// deleteInBackground keeps deleting node until it succeeds or the session
// (whose ephemeral node it is) ends.
func (m *Mutex) deleteInBackground(node string) {
	ctx := m.s.Ctx()
	for ctx.Err() == nil {
		if err := m.deleteNode(ctx, node); err == nil || isExpired(err) || errors.Is(err, ErrClosed) {
			return
		}
		sleepCtx(ctx, time.Second)
	}
}

// acquire is Lock (wait) and TryLock (!wait).
func (m *Mutex) acquire(ctx context.Context, wait bool) (bool, error) {
	if err := m.begin(); err != nil {
		return false, err
	}
	defer m.end()
	// Stop when the session ends, too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.s.Ctx(), cancel)()
	if err := m.ensureDir(ctx); err != nil {
		return false, m.failed(ctx, err)
	}
	prefix := uuid.NewString() + lockInfix
	node, err := m.createNode(ctx, prefix)
	if err != nil {
		m.cleanupGUID(prefix, "")
		return false, m.failed(ctx, err)
	}
	for {
		held, pred, err := m.position(ctx, node)
		switch {
		case err != nil:
			m.cleanupGUID(prefix, node)
			return false, m.failed(ctx, err)
		case held:
			m.mu.Lock()
			m.node = node
			m.mu.Unlock()
			m.log.Debug("lock acquired", "node", node, "session", m.s.String())
			return true, nil
		case !wait:
			if err := m.deleteNode(ctx, node); err != nil {
				m.cleanupGUID(prefix, node)
				return false, m.failed(ctx, err)
			}
			return false, nil
		}
		if err := m.waitGone(ctx, pred); err != nil {
			m.cleanupGUID(prefix, node)
			return false, m.failed(ctx, err)
		}
	}
}

// begin marks the Mutex busy; an error if it is held or busy already.
func (m *Mutex) begin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy || m.node != "" {
		return fmt.Errorf("coord: Mutex %s: already held or being acquired by this Mutex (use one per contender): %w", m.name, ErrInvalidArgument)
	}
	m.busy = true
	return nil
}

func (m *Mutex) end() {
	m.mu.Lock()
	m.busy = false
	m.mu.Unlock()
}

// failed names the Mutex in err, and says ErrSessionExpired when the
// session's end is why ctx was cancelled.
func (m *Mutex) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil && !m.s.alive() {
		return m.s.expired("coord: Mutex " + m.name)
	}
	return fmt.Errorf("coord: Mutex %s: %w", m.name, err)
}

func (m *Mutex) ensureDir(ctx context.Context) error {
	m.mu.Lock()
	done := m.dirDone
	m.mu.Unlock()
	if done {
		return nil
	}
	if err := validatePath(m.name); err != nil {
		return err
	}
	if err := m.s.c.ensurePath(ctx, m.dir); err != nil {
		return err
	}
	m.mu.Lock()
	m.dirDone = true
	m.mu.Unlock()
	return nil
}

// createNode creates our ephemeral-sequential node and checks that it
// belongs to our session (a create queued during a disconnection may run in
// the client's next session: that node is deleted and the session is gone).
// After connection loss it looks for our GUID among the children (the
// create may have succeeded) before creating again. A create abandoned on
// ctx done deletes its node once its reply arrives.
func (m *Mutex) createNode(ctx context.Context, prefix string) (string, error) {
	c := m.s.c
	node := ""
	err := c.retryWrite(ctx, func(ctx context.Context) error {
		if !m.s.alive() {
			return m.s.expired("create lock node")
		}
		p, err := c.create(ctx, m.dir+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, func(p string, err error) {
			if err == nil {
				m.cleanupGUID(prefix, p)
			} else if IsConnectionLoss(err) {
				m.cleanupGUID(prefix, "")
			}
		})
		node = p
		return err
	}, func(ctx context.Context) (bool, error) {
		kids, err := m.s.c.readChildren(ctx, m.dir)
		for _, k := range kids {
			if strings.HasPrefix(k, prefix) {
				node = m.dir + "/" + k
				return true, nil
			}
		}
		return err != nil, err
	})
	if err != nil {
		return "", err
	}
	var owner int64
	err = c.retry(ctx, func(ctx context.Context) error {
		ok, st, err := c.exists(ctx, node)
		if err == nil && ok {
			owner = st.EphemeralOwner
		}
		return err
	})
	if err == nil && owner != m.s.id {
		_ = m.deleteNode(ctx, node)
		err = m.s.expired("lock node " + node + " made by session " + sessionHex(owner))
	}
	return node, err
}

// position tells whether node is the lowest lock node (held), or else the
// node just before it (pred). Errors: ErrSessionExpired when node is gone
// (its session ended); ZooKeeper errors after retries.
func (m *Mutex) position(ctx context.Context, node string) (held bool, pred string, err error) {
	kids, err := m.s.c.readChildren(ctx, m.dir)
	if err != nil {
		return false, "", err
	}
	nodes := sortedLockNodes(kids)
	for i, n := range nodes {
		if m.dir+"/"+n.name == node {
			if i == 0 {
				return true, "", nil
			}
			return false, m.dir + "/" + nodes[i-1].name, nil
		}
	}
	return false, "", m.s.expired("lock node " + node + " gone")
}

// waitGone waits until pred is gone (an exists watch on it, re-checked
// after every reconnect) or ctx ends.
func (m *Mutex) waitGone(ctx context.Context, pred string) error {
	c := m.s.c
	var exists bool
	var ev <-chan zk.Event
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		exists, _, ev, err = c.existsW(ctx, pred)
		return err
	})
	if err != nil || !exists {
		return err
	}
	select {
	case <-ev:
	case <-c.reconnected():
		// Re-check after a reconnect instead of trusting the watch was
		// re-registered (zkquirks.go, quirk 6).
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// lockNode is one child of the lock directory.
type lockNode struct {
	name string
	seq  int64
}

// sortedLockNodes returns the lock nodes among children, lowest sequence
// first; other children are ignored.
func sortedLockNodes(children []string) []lockNode {
	out := make([]lockNode, 0, len(children))
	for _, ch := range children {
		i := strings.LastIndex(ch, lockInfix)
		if i < 0 {
			continue
		}
		seq, err := strconv.ParseInt(ch[i+len(lockInfix):], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, lockNode{name: ch, seq: seq})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].seq < out[b].seq })
	return out
}

// cleanupGUID deletes, in the background, every node carrying our GUID
// prefix (and known, if not empty), until done or the session ends (its
// nodes go with it). Used when Lock gives up.
func (m *Mutex) cleanupGUID(prefix, known string) {
	go func() {
		ctx, cancel := context.WithTimeout(m.s.Ctx(), 2*m.s.c.timeout+10*time.Second)
		defer cancel()
		if known != "" {
			_ = m.deleteNode(ctx, known)
		}
		_ = m.s.c.retry(ctx, func(ctx context.Context) error {
			kids, _, err := m.s.c.children(ctx, m.dir)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if strings.HasPrefix(k, prefix) {
					if err := m.s.c.del(ctx, m.dir+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
						return err
					}
				}
			}
			return nil
		})
	}()
}
