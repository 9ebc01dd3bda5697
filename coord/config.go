package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConfigStore is the "active configuration service" of Hadoop: The Definitive
// Guide ("Building Applications with ZooKeeper") on one znode: Read, a
// compare-and-set Write keyed on the znode version, and a Watch that
// delivers every latest value. The value is opaque bytes (zkcrawl stores
// JSON); its znode version is the config version.
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

// Exists reports whether the config znode existed.
func (v ConfigValue) Exists() bool { return v.Version >= 0 }

// NewConfigStore returns the store for the znode at p (absolute, chroot
// applied). An invalid path makes every call fail with ErrInvalidArgument.
func NewConfigStore(c *Client, p string) *ConfigStore {
	s := &ConfigStore{c: c, path: c.abs(p), name: p}
	if err := validatePath(p); err != nil || p == "/" {
		if err == nil {
			err = fmt.Errorf("path %q: must not be the ZooKeeper root: %w", p, ErrInvalidArgument)
		}
		s.err = fmt.Errorf("coord: NewConfigStore: %w", err)
	}
	return s
}

// Read returns the current data and version.
// Errors: ErrNotFound when the znode does not exist.
func (s *ConfigStore) Read(ctx context.Context) ([]byte, int32, error) {
	if s.err != nil {
		return nil, 0, s.err
	}
	var data []byte
	var st *zk.Stat
	err := Retry(ctx, s.c.retry, func(ctx context.Context) error {
		var err error
		data, st, err = s.c.get(ctx, s.path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, fmt.Errorf("coord: ConfigStore.Read %s: %w", s.name, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("coord: ConfigStore.Read %s: %w", s.name, err)
	}
	return data, st.Version, nil
}

// Write stores data and returns the new version.
//
// expectedVersion >= 0 is a compare-and-set: the write succeeds only if the
// znode's version is still expectedVersion. expectedVersion == -1 writes
// unconditionally and creates the znode (and its parents) if absent.
//
// A compare-and-set whose reply is lost to connection loss is resolved by
// reading back: version expectedVersion+1 holding our data means it
// committed; the old version means it did not, and it is retried.
//
// Errors: ErrVersionConflict (BadVersion, or the znode is absent for a
// compare-and-set); ErrInvalidArgument for expectedVersion < -1.
func (s *ConfigStore) Write(ctx context.Context, data []byte, expectedVersion int32) (int32, error) {
	if s.err != nil {
		return 0, s.err
	}
	where := fmt.Sprintf("coord: ConfigStore.Write %s", s.name)
	if expectedVersion < -1 {
		return 0, fmt.Errorf("%s: expected version %d: must be >= -1: %w", where, expectedVersion, ErrInvalidArgument)
	}
	if expectedVersion == -1 {
		var ver int32
		err := Retry(ctx, s.c.retry, func(ctx context.Context) error {
			st, err := s.c.set(ctx, s.path, data, -1)
			if err == nil {
				ver = st.Version
				return nil
			}
			if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			if err := s.c.ensurePath(ctx, path.Dir(s.path)); err != nil {
				return err
			}
			_, err = s.c.create(ctx, s.path, data, zk.FlagPersistent, nil)
			if errors.Is(err, zk.ErrNodeExists) {
				return zk.ErrConnectionClosed // created meanwhile: set it (retry)
			}
			ver = 0
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", where, err)
		}
		return ver, nil
	}
	for attempt := 1; ; attempt++ {
		st, err := s.c.set(ctx, s.path, data, expectedVersion)
		switch {
		case err == nil:
			return st.Version, nil
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
			return 0, fmt.Errorf("%s: expected version %d: %w", where, expectedVersion, ErrVersionConflict)
		case !IsConnectionLoss(err):
			return 0, fmt.Errorf("%s: %w", where, err)
		}
		// Outcome unknown: read back.
		var cur []byte
		var cst *zk.Stat
		rerr := Retry(ctx, s.c.retry, func(ctx context.Context) error {
			var err error
			cur, cst, err = s.c.get(ctx, s.path)
			return err
		})
		switch {
		case errors.Is(rerr, zk.ErrNoNode):
			return 0, fmt.Errorf("%s: expected version %d: %w", where, expectedVersion, ErrVersionConflict)
		case rerr != nil:
			return 0, fmt.Errorf("%s: outcome unknown: %w", where, rerr)
		case cst.Version == expectedVersion+1 && bytes.Equal(cur, data):
			return cst.Version, nil
		case cst.Version != expectedVersion:
			return 0, fmt.Errorf("%s: expected version %d, found %d: %w", where, expectedVersion, cst.Version, ErrVersionConflict)
		}
		if attempt >= s.c.retry.Attempts {
			return 0, fmt.Errorf("%s: gave up after %d attempts: %w", where, attempt, err)
		}
		if !sleepCtx(ctx, s.c.retry.Backoff(attempt)) {
			return 0, ctx.Err()
		}
	}
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
	go s.watchLoop(ctx, out)
	return out
}

func (s *ConfigStore) watchLoop(ctx context.Context, out chan ConfigValue) {
	defer close(out)
	var last *ConfigValue
	var ev <-chan zk.Event // the armed watch; one at a time (go-zookeeper keeps every channel until it fires)
	for attempt := 1; ; {
		epoch := s.c.reconnected()
		var v ConfigValue
		var err error
		if ev != nil && !fired(ev) {
			// A reconnect: re-read, but the watch set before still stands
			// (go-zookeeper re-registers it), so set no second one.
			v, err = s.read(ctx)
		} else {
			v, ev, err = s.readWatch(ctx)
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) || s.c.isClosed() {
				return
			}
			s.c.log.Debug("config watch: read failed, retrying", "path", s.name, "err", err)
			select {
			case <-epoch:
			case <-time.After(s.c.retry.Backoff(attempt)):
			case <-ctx.Done():
				return
			case <-s.c.closedCh:
				return
			}
			attempt++
			continue
		}
		attempt = 1
		if last == nil || last.Mzxid != v.Mzxid || last.Version != v.Version {
			last = &v
			offerLatest(out, v)
		}
		select {
		case <-ev:
		case <-epoch:
		case <-ctx.Done():
			return
		case <-s.c.closedCh:
			return
		}
	}
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

// read reads the znode without a watch.
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

// fired reports, without blocking, whether a watch channel has delivered
// (go-zookeeper closes it after its one event).
func fired(ev <-chan zk.Event) bool {
	select {
	case <-ev:
		return true
	default:
		return false
	}
}

// offerLatest puts v into a 1-slot channel, replacing an unread value. Only
// the single producer calls it, so after draining the send cannot block.
func offerLatest[T any](out chan T, v T) {
	for {
		select {
		case out <- v:
			return
		default:
		}
		select {
		case <-out:
		default:
		}
	}
}
