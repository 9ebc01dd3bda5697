package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
)

// ConfigStore is the "active configuration service" of Hadoop: The Definitive
// Guide ("Building Applications with ZooKeeper") on one znode: Read, a
// compare-and-set Write keyed on the znode version, Delete, and a Watch that
// delivers every latest value. The value is opaque bytes (zkcrawl stores
// JSON); its znode version is the config version. Store opens one.
type ConfigStore struct {
	c    *Client
	path string // absolute
	name string
	err  error
}

// ConfigValue is one observed value of a config znode.
type ConfigValue struct {
	// Data is the znode's data; nil when the znode does not exist.
	Data []byte
	// Version is the znode's data version, or -1 when it does not exist.
	Version int32
	// Mzxid is the zxid of the last change (0 when absent): strictly
	// increasing across changes, unlike Version which restarts at 0 when
	// the znode is deleted and created again.
	Mzxid int64
}

// newStore returns the store for the znode at p (absolute, chroot not
// applied); a non-nil err, or an invalid path, makes every call fail.
func newStore(c *Client, p string, err error) *ConfigStore {
	s := &ConfigStore{c: c, path: c.abs(p), name: p}
	if err == nil {
		err = validatePath(p)
	}
	if err == nil && p == "/" {
		err = fmt.Errorf("path %q: must not be the ZooKeeper root: %w", p, ErrInvalidArgument)
	}
	if err != nil {
		s.err = fmt.Errorf("coord: Store: %w", err)
	}
	return s
}

// String returns the znode's path as given (without the chroot), e.g.
// "/zkcrawl/docs/drain", for messages.
func (s *ConfigStore) String() string { return s.name }

// Read returns the current data and version.
// Errors: ErrNotFound when the znode does not exist.
func (s *ConfigStore) Read(ctx context.Context) ([]byte, int32, error) {
	if s.err != nil {
		return nil, 0, s.err
	}
	v, err := s.readRetried(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("coord: ConfigStore.Read %s: %w", s.name, err)
	}
	if v.Version < 0 {
		return nil, -1, fmt.Errorf("coord: ConfigStore.Read %s: %w", s.name, ErrNotFound)
	}
	return v.Data, v.Version, nil
}

// Write stores data and returns the new version.
//
// expectedVersion >= 0 is a compare-and-set: the write succeeds only if the
// znode's version is still expectedVersion. expectedVersion == -1 writes
// unconditionally and creates the znode (and its parents) if absent.
//
// A compare-and-set whose reply is lost to connection loss is resolved by
// reading back: version expectedVersion+1 holding our data means it
// committed; the old version means it did not, and it is sent again.
//
// Errors: ErrVersionConflict (BadVersion, or the znode is absent for a
// compare-and-set); ErrInvalidArgument for expectedVersion < -1.
func (s *ConfigStore) Write(ctx context.Context, data []byte, expectedVersion int32) (int32, error) {
	if s.err != nil {
		return 0, s.err
	}
	where := fmt.Sprintf("coord: ConfigStore.Write %s", s.name)
	var ver int32
	var err error
	switch {
	case expectedVersion < -1:
		return 0, fmt.Errorf("%s: expected version %d: must be >= -1: %w", where, expectedVersion, ErrInvalidArgument)
	case expectedVersion == -1:
		err = s.c.retry(ctx, func(ctx context.Context) error {
			ver, err = s.upsert(ctx, data)
			return err
		})
	default:
		ver, err = s.compareAndSet(ctx, data, expectedVersion)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	return ver, nil
}

// upsert sets the znode's data, creating it (and its parents) if absent.
// One attempt, for retry.
func (s *ConfigStore) upsert(ctx context.Context, data []byte) (int32, error) {
	st, err := s.c.set(ctx, s.path, data, -1)
	if err == nil {
		return st.Version, nil
	}
	if !errors.Is(err, zk.ErrNoNode) {
		return 0, err
	}
	if err := s.c.ensurePath(ctx, path.Dir(s.path)); err != nil {
		return 0, err
	}
	_, err = s.c.create(ctx, s.path, data, zk.FlagPersistent, nil)
	if errors.Is(err, zk.ErrNodeExists) {
		return 0, s.c.mapErr(zk.ErrConnectionClosed) // created meanwhile: set it (retry)
	}
	return 0, err
}

// compareAndSet writes data at version expected, reading back after a
// lost reply (Write's contract).
func (s *ConfigStore) compareAndSet(ctx context.Context, data []byte, expected int32) (int32, error) {
	conflict := func(found string) error {
		return fmt.Errorf("expected version %d%s: %w", expected, found, ErrVersionConflict)
	}
	var ver int32
	err := s.c.retryWrite(ctx, func(ctx context.Context) error {
		st, err := s.c.set(ctx, s.path, data, expected)
		switch {
		case err == nil:
			ver = st.Version
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
			return conflict("")
		}
		return err
	}, func(ctx context.Context) (bool, error) {
		cur, err := s.readRetried(ctx)
		switch {
		case err != nil:
			return true, fmt.Errorf("outcome unknown: %w", err)
		case cur.Version < 0:
			return true, conflict(", found none")
		case cur.Version == expected+1 && bytes.Equal(cur.Data, data):
			ver = cur.Version
			return true, nil
		case cur.Version != expected:
			return true, conflict(fmt.Sprintf(", found %d", cur.Version))
		}
		return false, nil
	})
	return ver, err
}

// Create creates the znode, and its missing parents, with data, unless it
// exists; it returns the new version (0). Retried through connection loss:
// a create of ours that committed before its reply was lost is then
// reported as existing.
// Errors: ErrVersionConflict when the znode exists.
func (s *ConfigStore) Create(ctx context.Context, data []byte) (int32, error) {
	if s.err != nil {
		return 0, s.err
	}
	err := s.c.retry(ctx, func(ctx context.Context) error {
		if err := s.c.ensurePath(ctx, path.Dir(s.path)); err != nil {
			return err
		}
		_, err := s.c.create(ctx, s.path, data, zk.FlagPersistent, nil)
		return err
	})
	if errors.Is(err, zk.ErrNodeExists) {
		return 0, fmt.Errorf("coord: ConfigStore.Create %s: exists: %w", s.name, ErrVersionConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("coord: ConfigStore.Create %s: %w", s.name, err)
	}
	return 0, nil
}

// Children returns the data of every child of the znode by name, the
// reads pipelined (up to 64 in flight); children deleted meanwhile are
// left out. Cost: one getChildren and one getData per child, for a node
// with few children (the crawls under CrawlsRoot, older versions' totals).
// Errors: ErrNotFound when the znode does not exist; ZooKeeper errors after
// retries.
func (s *ConfigStore) Children(ctx context.Context) (map[string][]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	out, err := readNodes(ctx, s.c, s.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: ConfigStore.Children %s: %w", s.name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("coord: ConfigStore.Children %s: %w", s.name, err)
	}
	return out, nil
}

// Watch delivers the config's value now and after every change, until ctx
// is done or the client is closed (then the channel is closed).
//
// Delivery is "latest wins": the channel holds at most one pending value
// and a newer value replaces an unread one, so a slow reader may skip
// intermediate values but never ends on a stale one. After every event the
// znode is read again with a new watch (watches fire once); it is also read
// again after every reconnect and after session expiry (when go-zookeeper
// drops all watches), so a change made while the client was partitioned or
// between an event and the re-read is never missed for good (Hadoop: The
// Definitive Guide: "we are not guaranteed to receive every update"; we
// guarantee the latest one).
//
// A value with Version -1 means the znode does not exist (it is then
// watched for creation). Values are deduplicated by Mzxid.
func (s *ConfigStore) Watch(ctx context.Context) <-chan ConfigValue {
	out := make(chan ConfigValue, 1)
	if s.err != nil {
		close(out)
		return out
	}
	read := func(ctx context.Context, armed <-chan zk.Event) (ConfigValue, <-chan zk.Event, error) {
		if armed != nil {
			v, err := s.read(ctx)
			return v, armed, err
		}
		return s.readWatch(ctx)
	}
	key := func(v ConfigValue) [2]int64 { return [2]int64{v.Mzxid, int64(v.Version)} }
	go watchLatest(ctx, s.c, s.name, out, read, key)
	return out
}

// readWatch reads the znode with a data watch, or sets an exists watch if
// it is absent.
func (s *ConfigStore) readWatch(ctx context.Context) (ConfigValue, <-chan zk.Event, error) {
	for {
		data, st, ev, err := s.c.getW(ctx, s.path)
		if err == nil {
			return ConfigValue{Data: data, Version: st.Version, Mzxid: st.Mzxid}, ev, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return ConfigValue{}, nil, err
		}
		ok, _, ev, err := s.c.existsW(ctx, s.path)
		if err != nil {
			return ConfigValue{}, nil, err
		}
		if !ok {
			return ConfigValue{Version: -1}, ev, nil
		}
		// Created between the two calls: read it.
	}
}

// read reads the znode without a watch (Version -1 when absent).
func (s *ConfigStore) read(ctx context.Context) (ConfigValue, error) {
	data, st, err := s.c.get(ctx, s.path)
	if errors.Is(err, zk.ErrNoNode) {
		return ConfigValue{Version: -1}, nil
	}
	if err != nil {
		return ConfigValue{}, err
	}
	return ConfigValue{Data: data, Version: st.Version, Mzxid: st.Mzxid}, nil
}

// readRetried is read, retried after connection loss.
func (s *ConfigStore) readRetried(ctx context.Context) (ConfigValue, error) {
	var v ConfigValue
	err := s.c.retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = s.read(ctx)
		return err
	})
	return v, err
}
