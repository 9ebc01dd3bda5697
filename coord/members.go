package coord

import (
	"cmp"
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

// owners assigns every shard in [0, shards) to one of members by
// rendezvous (highest random weight) hashing with bounded loads
// (Thaler and Ravishankar, 1996; Mirrokni, Thorup and Zadimoghaddam,
// "Consistent Hashing with Bounded Loads", 2018): shards are taken in
// increasing order, each goes to the member of highest score that is under
// its capacity (floor(shards/n), one more for the first shards%n members to
// reach it), ties to the smaller id. So no member owns more than one shard
// above another (plain rendezvous hashing gave
// one of 12 workers 6x another's share of 64 groups), and when a member
// joins or leaves mostly the shards it wins or held move (a few more
// cascade where a capacity is reached). Returns nil when members is empty;
// otherwise out[i] is the owner of shard i. members need not be sorted.
// Cost: shards x len(members) hashes.
func owners(shards int, members []string) []string {
	if len(members) == 0 {
		return nil
	}
	// Loads end exactly balanced: every member owns floor(shards/n) shards
	// and the first shards%n members to reach that one more.
	floor, extra := shards/len(members), shards%len(members)
	load := make(map[string]int, len(members))
	out := make([]string, shards)
	type ranked struct {
		id    string
		score uint64
	}
	rank := make([]ranked, len(members))
	for i := range shards {
		for j, m := range members {
			rank[j] = ranked{m, hrwScore(m, i)}
		}
		slices.SortFunc(rank, func(a, b ranked) int {
			if a.score != b.score {
				return cmp.Compare(b.score, a.score)
			}
			return strings.Compare(a.id, b.id)
		})
		for _, r := range rank {
			if l := load[r.id]; l < floor || (l == floor && extra > 0) {
				if l == floor {
					extra--
				}
				out[i], load[r.id] = r.id, l+1
				break
			}
		}
	}
	return out
}

// Owners returns the owner of every shard in [0, shards) among members
// (out[i] owns shard i; nil when members is empty) by rendezvous hashing
// with bounded loads (see owners): every member owns floor or ceil of
// shards/len(members), and a member change moves mostly the shards of the
// member that joined or left. members need not be sorted. Cost: shards x
// len(members) hashes and a sort of members per shard.
func Owners(shards int, members []string) []string { return owners(shards, members) }
