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

// Mutex is a distributed exclusive lock on a znode directory, following the
// ZooKeeper recipe "Locks" (ZooKeeper Recipes and Solutions):
//
//  1. create "<dir>/<guid>-lock-" ephemeral and sequential;
//  2. list the children (no watch, to avoid the herd effect);
//  3. if our node has the lowest sequence number we hold the lock;
//  4. otherwise set an exists watch on the node with the next lower
//     sequence number only, wait for it to go away, and go to 2.
//
// The GUID lets a create whose reply was lost to connection loss be found
// again, so it is never repeated (no orphan node, no deadlock). A cancelled
// Lock deletes its node, in the background if the create is still in flight.
//
// The lock lives as long as the session that created its node: Lost is
// closed when that session expires (or the node is deleted by someone else).
// While the client is disconnected the holder cannot know whether it still
// holds the lock; holders needing strict mutual exclusion must also stop
// work on StateDisconnected (see Client.Subscribe).
//
// A Mutex value is one contender: it is not for concurrent Lock calls (a
// second concurrent Lock or TryLock returns ErrLockBusy). Use one Mutex per
// goroutine that contends.
type Mutex struct {
	c   *Client
	dir string // absolute
	log *slog.Logger

	mu      sync.Mutex
	busy    bool
	node    string // absolute path of our node while held
	sess    *Session
	lost    chan struct{}
	stop    chan struct{}
	dirDone bool
}

// NewMutex returns a Mutex on the lock directory path (absolute, e.g.
// "/zkcrawl/crawl1/locks/seeder"; the client's chroot is applied). The
// directory is created on first use. An invalid path makes every call return
// an error wrapping ErrInvalidArgument.
func NewMutex(c *Client, path string) *Mutex {
	return &Mutex{c: c, dir: c.abs(path), log: c.log.With("lock", path)}
}

// Lock blocks until the lock is held or ctx is done. On ctx done it returns
// ctx's error and leaves no node behind. A session expiry while waiting is
// survived: Lock starts over in the client's next session.
//
// Errors: ErrLockBusy if this Mutex is already held or acquiring;
// ErrInvalidArgument for a bad path; ErrClosed; ctx errors; ZooKeeper errors
// that retries could not overcome.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, true)
	return err
}

// TryLock makes one attempt: it returns true if the lock was free and is now
// held, false (and no node left behind) if another contender holds it or is
// queued before us.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.acquire(ctx, false)
}

// IsOwner reports whether this Mutex holds the lock: acquired, not
// unlocked, and not lost.
func (m *Mutex) IsOwner() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.node == "" {
		return false
	}
	select {
	case <-m.lost:
		return false
	default:
		return true
	}
}

// Lost returns a channel closed when the held lock is lost: the session that
// holds it expired or the client closed, or the lock node was deleted by
// someone else. When the Mutex is not held it returns an already closed
// channel. Unlock does not close it.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.node == "" {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return m.lost
}

// Session returns the session that holds the lock, or nil when not held.
func (m *Mutex) Session() *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.node == "" {
		return nil
	}
	return m.sess
}

// Unlock releases the lock by deleting our node. If ctx ends first the
// delete goes on in the background (until it succeeds or the session ends),
// so the lock is never left held by a live session.
//
// Errors: ErrNotLocked if not held; ctx errors (the release continues in
// the background). A lock already lost through session expiry unlocks
// without error: its node is gone.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	node, sess, stop := m.node, m.sess, m.stop
	if node == "" {
		m.mu.Unlock()
		return ErrNotLocked
	}
	m.node, m.sess = "", nil
	close(stop)
	m.mu.Unlock()
	return m.deleteNode(ctx, node, sess)
}

// deleteNode deletes our lock node; when ctx ends first the delete continues
// in the background until done or the session ends.
func (m *Mutex) deleteNode(ctx context.Context, node string, sess *Session) error {
	del := func(ctx context.Context) error {
		return Retry(ctx, m.c.retry, func(ctx context.Context) error {
			err := m.c.del(ctx, node, -1)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		})
	}
	err := del(ctx)
	switch {
	case err == nil, isExpired(err), errors.Is(err, ErrClosed):
		return nil
	case ctx.Err() != nil || IsConnectionLoss(err):
		go m.backgroundDelete(node, sess, del)
	}
	return err
}

// backgroundDelete keeps deleting node until it succeeds, the session that
// may own it ends, or the client closes.
func (m *Mutex) backgroundDelete(node string, sess *Session, del func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var sessDone <-chan struct{}
		if sess != nil {
			sessDone = sess.Done()
		}
		select {
		case <-sessDone:
		case <-m.c.closedCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	for ctx.Err() == nil {
		if err := del(ctx); err == nil || isExpired(err) || errors.Is(err, ErrClosed) {
			return
		}
		sleepCtx(ctx, time.Second)
	}
}

func (m *Mutex) ensureDir(ctx context.Context) error {
	m.mu.Lock()
	done := m.dirDone
	m.mu.Unlock()
	if done {
		return nil
	}
	if err := validatePath(m.dir); err != nil {
		return fmt.Errorf("coord: NewMutex: %w", err)
	}
	if err := m.c.ensurePath(ctx, m.dir); err != nil {
		return err
	}
	m.mu.Lock()
	m.dirDone = true
	m.mu.Unlock()
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

func (m *Mutex) acquire(ctx context.Context, wait bool) (bool, error) {
	m.mu.Lock()
	if m.busy || m.node != "" {
		m.mu.Unlock()
		return false, fmt.Errorf("coord: Mutex %s: %w", m.dir, ErrLockBusy)
	}
	m.busy = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.busy = false
		m.mu.Unlock()
	}()

	if err := m.ensureDir(ctx); err != nil {
		return false, err
	}
	guid := uuid.NewString()
	prefix := guid + lockInfix
	node := "" // absolute path of our node, "" when we have none (yet)

	// giveUp removes any node of ours and returns err.
	giveUp := func(err error) (bool, error) {
		m.cleanupGUID(prefix, node)
		return false, err
	}

	for {
		sess, err := m.c.Session(ctx)
		if err != nil {
			return giveUp(err)
		}
		if node == "" {
			node, err = m.createNode(ctx, prefix)
			if err != nil {
				if isExpired(err) {
					continue // start over in the next session
				}
				return giveUp(err)
			}
		}
		var kids []string
		err = Retry(ctx, m.c.retry, func(ctx context.Context) error {
			var err error
			kids, _, err = m.c.children(ctx, m.dir)
			return err
		})
		if err != nil {
			if isExpired(err) {
				node = ""
				continue
			}
			return giveUp(err)
		}
		nodes := sortedLockNodes(kids)
		idx := -1
		for i, n := range nodes {
			if strings.HasPrefix(n.name, prefix) {
				idx = i
				break
			}
		}
		if idx < 0 {
			// Our node is gone: its session expired. Create a new one.
			node = ""
			continue
		}
		node = m.dir + "/" + nodes[idx].name

		if idx == 0 {
			ok, err := m.takeOwnership(ctx, node)
			if err != nil {
				if isExpired(err) {
					node = ""
					continue
				}
				return giveUp(err)
			}
			if ok {
				return true, nil
			}
			node = ""
			continue
		}
		if !wait {
			if err := m.deleteNode(ctx, node, sess); err != nil {
				return false, err
			}
			return false, nil
		}
		// Watch only our predecessor (no herd effect).
		pred := m.dir + "/" + nodes[idx-1].name
		var exists bool
		var ev <-chan zk.Event
		err = Retry(ctx, m.c.retry, func(ctx context.Context) error {
			var err error
			exists, _, ev, err = m.c.existsW(ctx, pred)
			return err
		})
		if err != nil {
			if isExpired(err) {
				node = ""
				continue
			}
			return giveUp(err)
		}
		if !exists {
			continue
		}
		select {
		case <-ev:
		case <-sess.Done():
		case <-m.c.reconnected():
			// Re-check after a reconnect instead of trusting the watch was
			// re-registered.
		case <-ctx.Done():
			return giveUp(ctx.Err())
		}
	}
}

// createNode creates our ephemeral-sequential node, recovering from
// connection loss by looking for our GUID among the children (the create
// may have succeeded). A create abandoned on ctx done deletes its node once
// its reply arrives.
func (m *Mutex) createNode(ctx context.Context, prefix string) (string, error) {
	for attempt := 1; ; attempt++ {
		p, err := m.c.create(ctx, m.dir+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, func(p string, err error) {
			if err == nil {
				m.cleanupGUID(prefix, p)
			} else if IsConnectionLoss(err) {
				m.cleanupGUID(prefix, "")
			}
		})
		if err == nil {
			return p, nil
		}
		if !IsConnectionLoss(err) {
			return "", err
		}
		// Outcome unknown: find our node by its GUID.
		var kids []string
		err2 := Retry(ctx, m.c.retry, func(ctx context.Context) error {
			var err error
			kids, _, err = m.c.children(ctx, m.dir)
			return err
		})
		if err2 != nil {
			return "", err2
		}
		for _, k := range kids {
			if strings.HasPrefix(k, prefix) {
				return m.dir + "/" + k, nil
			}
		}
		if attempt >= m.c.retry.Attempts {
			return "", fmt.Errorf("coord: Mutex %s: create lock node: %w", m.dir, err)
		}
		if !sleepCtx(ctx, m.c.retry.Backoff(attempt)) {
			return "", ctx.Err()
		}
	}
}

// takeOwnership is called when our node is the lowest. It sets an exists
// watch on the node and checks that its ephemeralOwner is the client's live
// session (a create queued during a disconnection may have run in a newer
// session than expected; then that session owns it, which is fine).
func (m *Mutex) takeOwnership(ctx context.Context, node string) (bool, error) {
	var ok bool
	var st *zk.Stat
	var ev <-chan zk.Event
	err := Retry(ctx, m.c.retry, func(ctx context.Context) error {
		var err error
		ok, st, ev, err = m.c.existsW(ctx, node)
		return err
	})
	if err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	owner := m.c.liveSession(st.EphemeralOwner)
	if owner == nil {
		// Owned by a session that is no longer ours: it has expired and the
		// server is about to delete (or has deleted) the node.
		return false, nil
	}
	lost := make(chan struct{})
	stop := make(chan struct{})
	m.mu.Lock()
	m.node, m.sess, m.lost, m.stop = node, owner, lost, stop
	m.mu.Unlock()
	go m.monitor(node, owner, ev, lost, stop)
	m.log.Debug("lock acquired", "node", node, "session", owner.String())
	return true, nil
}

// monitor closes lost when the holder's session ends or the node is
// deleted, until stop (Unlock).
func (m *Mutex) monitor(node string, sess *Session, ev <-chan zk.Event, lost, stop chan struct{}) {
	defer close(lost)
	for {
		select {
		case <-stop:
			return
		case <-sess.Done():
			m.log.Warn("lock lost: session ended", "node", node, "session", sess.String(), "err", sess.Err())
			return
		case e := <-ev:
			if e.Type == zk.EventNodeDeleted {
				select {
				case <-stop:
				default:
					m.log.Warn("lock lost: node deleted", "node", node)
				}
				return
			}
			ev = nil // re-arm below
		case <-m.c.reconnected():
			ev = nil
		}
		if ev == nil {
			ctx, cancel := context.WithTimeout(context.Background(), m.c.timeout)
			ok, _, e2, err := m.c.existsW(ctx, node)
			cancel()
			switch {
			case err == nil && !ok:
				select {
				case <-stop:
				default:
					m.log.Warn("lock lost: node deleted", "node", node)
				}
				return
			case err == nil:
				ev = e2
			case isExpired(err) || errors.Is(err, ErrClosed):
				return
			default:
				// Connection loss: re-check on the next reconnect.
			}
		}
	}
}

// cleanupGUID deletes, in the background, every node carrying our GUID
// prefix (and known, if not empty). Used when Lock gives up.
func (m *Mutex) cleanupGUID(prefix, known string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*m.c.timeout+10*time.Second)
		defer cancel()
		if known != "" {
			_ = Retry(ctx, m.c.retry, func(ctx context.Context) error {
				err := m.c.del(ctx, known, -1)
				if errors.Is(err, zk.ErrNoNode) {
					return nil
				}
				return err
			})
		}
		_ = Retry(ctx, m.c.retry, func(ctx context.Context) error {
			kids, _, err := m.c.children(ctx, m.dir)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if strings.HasPrefix(k, prefix) {
					if err := m.c.del(ctx, m.dir+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
						return err
					}
				}
			}
			return nil
		})
	}()
}
