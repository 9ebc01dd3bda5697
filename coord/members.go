package coord

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Member is this process's ephemeral znode R/workers/<id> in a group
// (ZooKeeper recipes: group membership through ephemeral znodes). It lives
// exactly as long as its Session; after expiry the caller must Join again
// with the new session.
type Member struct {
	c    *Client
	sess *Session
	id   string
	path string

	mu   sync.Mutex
	left bool
}

// Join creates the ephemeral znode root/workers/<id> for sess (on sess's
// Client) with status as
// data, creating root/workers if missing. If the znode already exists and
// belongs to sess (a create whose reply was lost, or a re-Join), it is
// adopted and its data updated. If it belongs to another session (a
// previous incarnation of this worker whose session has not yet expired),
// Join waits until it goes away, bounded by ctx. The owner is verified after
// creating (a create queued during a disconnection may have run in a newer
// session).
//
// Errors: ErrInvalidArgument (bad root or id); ErrSessionExpired (sess
// ended); ctx errors (including while waiting for a previous holder of id).
func Join(ctx context.Context, sess *Session, root, id string, status []byte) (*Member, error) {
	if sess == nil {
		return nil, fmt.Errorf("coord: Join: nil session: %w", ErrInvalidArgument)
	}
	c := sess.c
	if err := validatePath(root); err != nil {
		return nil, fmt.Errorf("coord: Join: root: %w", err)
	}
	if err := validateName(id); err != nil {
		return nil, fmt.Errorf("coord: Join: member id: %w", err)
	}
	dir := c.abs(root) + "/" + WorkersNode
	p := dir + "/" + id
	where := fmt.Sprintf("coord: Join %s as %q", root, id)
	warned := false
	for {
		if !sess.alive() {
			return nil, sess.expired(where)
		}
		var st *zk.Stat
		var ev <-chan zk.Event
		var exists bool
		err := c.retry(ctx, func(ctx context.Context) error {
			_, err := c.create(ctx, p, status, zk.FlagEphemeral, nil)
			if errors.Is(err, zk.ErrNoNode) {
				if err := c.ensurePath(ctx, dir); err != nil {
					return err
				}
				_, err = c.create(ctx, p, status, zk.FlagEphemeral, nil)
			}
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
			exists, st, ev, err = c.existsW(ctx, p)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if !exists {
			continue // deleted between create and check: go again
		}
		if st.EphemeralOwner == sess.id {
			m := &Member{c: c, sess: sess, id: id, path: p}
			if err := m.Update(ctx, status); err != nil {
				return nil, err
			}
			return m, nil
		}
		if !warned {
			c.log.Warn("member id held by another session; waiting for it to end",
				"root", root, "id", id, "holder", sessionHex(st.EphemeralOwner), "session", sess.String())
			warned = true
		}
		select {
		case <-ev:
		case <-sess.done():
		case <-c.reconnected():
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: id held by session %s: %w", where, sessionHex(st.EphemeralOwner), ctx.Err())
		}
	}
}

// Update replaces the member's status data (unconditional setData; retried
// after connection loss, which is safe).
//
// Errors: ErrSessionExpired when the session ended or the znode is gone;
// ErrNotFound after Leave.
func (m *Member) Update(ctx context.Context, status []byte) error {
	m.mu.Lock()
	left := m.left
	m.mu.Unlock()
	where := fmt.Sprintf("coord: Member.Update %q", m.id)
	if left {
		return fmt.Errorf("%s: member left: %w", where, ErrNotFound)
	}
	if !m.sess.alive() {
		return m.sess.expired(where)
	}
	err := m.c.retry(ctx, func(ctx context.Context) error {
		_, err := m.c.set(ctx, m.path, status, -1)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%s: member znode gone: %w", where, ErrSessionExpired)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// Leave deletes the member znode (idempotent). A member whose session
// already ended has left implicitly; Leave then returns nil.
func (m *Member) Leave(ctx context.Context) error {
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	if !m.sess.alive() {
		return nil
	}
	err := m.c.retry(ctx, func(ctx context.Context) error {
		ok, st, err := m.c.exists(ctx, m.path)
		if err != nil || !ok || st.EphemeralOwner != m.sess.id {
			return err
		}
		err = m.c.del(ctx, m.path, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil && !isExpired(err) {
		return fmt.Errorf("coord: Member.Leave %q: %w", m.id, err)
	}
	return nil
}

// Members returns the sorted live member ids under root/workers and each
// member's status data (members that left between the list and the read are
// omitted). The reads are pipelined.
func Members(ctx context.Context, c *Client, root string) ([]string, map[string][]byte, error) {
	if err := validatePath(root); err != nil {
		return nil, nil, fmt.Errorf("coord: Members: root: %w", err)
	}
	status, err := readNodes(ctx, c, c.abs(root+"/"+WorkersNode))
	if errors.Is(err, zk.ErrNoNode) {
		status, err = map[string][]byte{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("coord: Members %s: %w", root, err)
	}
	live := make([]string, 0, len(status))
	for id := range status {
		live = append(live, id)
	}
	sort.Strings(live)
	return live, status, nil
}

// readNodes returns the data of every child of dir (absolute, chroot
// applied) by name, the reads pipelined; children deleted meanwhile are
// left out. Errors: zk.ErrNoNode when dir does not exist; ZooKeeper errors
// after retries.
func readNodes(ctx context.Context, c *Client, dir string) (map[string][]byte, error) {
	ids, err := c.readChildren(ctx, dir)
	if err != nil {
		return nil, err
	}
	data := make([][]byte, len(ids))
	gone := make([]bool, len(ids))
	err = parallel(ctx, len(ids), 64, func(ctx context.Context, i int) error {
		d, _, err := c.readData(ctx, dir+"/"+ids[i])
		if errors.Is(err, zk.ErrNoNode) {
			gone[i] = true
			return nil
		}
		data[i] = d
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(ids))
	for i, id := range ids {
		if !gone[i] {
			out[id] = data[i]
		}
	}
	return out, nil
}

// WatchMembers delivers the sorted live member ids under root/workers now
// and after every change, until ctx is done or the client closes (then the
// channel is closed). Like ConfigStore.Watch it is "latest wins" and
// re-arms after every event, reconnect and session expiry, so it never ends
// on a stale list. A missing root/workers reads as no members.
func WatchMembers(ctx context.Context, c *Client, root string) <-chan []string {
	out := make(chan []string, 1)
	if err := validatePath(root); err != nil {
		c.log.Error("coord: WatchMembers: bad root", "err", err)
		close(out)
		return out
	}
	dir := c.abs(root) + "/" + WorkersNode
	read := func(ctx context.Context, armed <-chan zk.Event) ([]string, <-chan zk.Event, error) {
		ids, ev, err := childrenOrAbsent(ctx, c, dir, armed)
		slices.Sort(ids)
		return ids, ev, err
	}
	key := func(ids []string) string { return strings.Join(ids, "/") } // "/" is in no id
	go watchLatest(ctx, c, dir, out, read, key)
	return out
}

// childrenOrAbsent lists dir's children with a child watch (none when
// armed, a watch that still stands, is given), or, if dir is absent, sets
// an exists watch for its creation and returns no children.
func childrenOrAbsent(ctx context.Context, c *Client, dir string, armed <-chan zk.Event) ([]string, <-chan zk.Event, error) {
	if armed != nil {
		ids, _, err := c.children(ctx, dir)
		if err == nil || !errors.Is(err, zk.ErrNoNode) {
			return ids, armed, err
		}
	}
	for {
		ids, _, ev, err := c.childrenW(ctx, dir)
		if err == nil {
			return ids, ev, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, nil, err
		}
		ok, _, ev, err := c.existsW(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return []string{}, ev, nil
		}
	}
}

// hrwScore is the rendezvous weight of member for shard: FNV-1a 64 of
// "<member>\x00<shard>" passed through the SplitMix64 finalizer for
// avalanche (FNV alone mixes the last bytes poorly).
func hrwScore(member string, shard int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], uint64(shard))
	_, _ = h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// owner returns the member that owns shard by rendezvous (highest random
// weight) hashing (Thaler and Ravishankar, 1996): every member scores the
// shard and the highest score wins (ties: the smaller id). When a member
// joins or leaves only the shards it wins or held move. Returns "" when
// members is empty. members need not be sorted.
func owner(shard int, members []string) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		s := hrwScore(m, shard)
		if best == "" || s > bestScore || (s == bestScore && m < best) {
			best, bestScore = m, s
		}
	}
	return best
}

// OwnedShards returns, in increasing order, the shards in [0, shards) that
// self owns among members by rendezvous (highest random weight) hashing
// (Thaler and Ravishankar, 1996): every member scores each shard and the
// highest score wins (ties: the smaller id), so when a member joins or
// leaves only the shards it wins or held move. Over all members the
// results partition the shards exactly. Empty when self is not a member.
func OwnedShards(self string, shards int, members []string) []int {
	var out []int
	for i := 0; i < shards; i++ {
		if owner(i, members) == self {
			out = append(out, i)
		}
	}
	return out
}
