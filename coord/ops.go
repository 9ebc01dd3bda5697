package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// mapErr turns go-zookeeper's session-end, authorization and
// connection-loss errors into coord's sentinels (keeping the original in
// the chain).
func (c *Client) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrSessionExpired):
		return fmt.Errorf("%w: %w", ErrSessionExpired, err)
	case errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, zk.ErrConnectionClosed) && c.isClosed():
		return fmt.Errorf("%w: %w: %w", ErrClosed, ErrConnectionLoss, err)
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return fmt.Errorf("%w: %w", ErrNotAuthorized, err)
	case isConnectionLoss(err) && !errors.Is(err, ErrConnectionLoss):
		return fmt.Errorf("%w: %w", ErrConnectionLoss, err)
	}
	return err
}

func (c *Client) get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	type r struct {
		data []byte
		st   *zk.Stat
	}
	res, err := call(ctx, c, "get", func() (r, error) {
		d, st, err := c.conn.Get(p)
		return r{d, st}, err
	}, nil)
	return res.data, res.st, err
}

func (c *Client) getW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	type r struct {
		data []byte
		st   *zk.Stat
		ev   <-chan zk.Event
	}
	res, err := call(ctx, c, "get", func() (r, error) {
		d, st, ev, err := c.conn.GetW(p)
		return r{d, st, ev}, err
	}, nil)
	return res.data, res.st, res.ev, err
}

func (c *Client) children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	type r struct {
		ch []string
		st *zk.Stat
	}
	res, err := call(ctx, c, "children", func() (r, error) {
		ch, st, err := c.conn.Children(p)
		return r{ch, st}, err
	}, nil)
	return res.ch, res.st, err
}

func (c *Client) childrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	type r struct {
		ch []string
		st *zk.Stat
		ev <-chan zk.Event
	}
	res, err := call(ctx, c, "children", func() (r, error) {
		ch, st, ev, err := c.conn.ChildrenW(p)
		return r{ch, st, ev}, err
	}, nil)
	return res.ch, res.st, res.ev, err
}

func (c *Client) exists(ctx context.Context, p string) (bool, *zk.Stat, error) {
	type r struct {
		ok bool
		st *zk.Stat
	}
	res, err := call(ctx, c, "exists", func() (r, error) {
		ok, st, err := c.conn.Exists(p)
		return r{ok, st}, err
	}, nil)
	return res.ok, res.st, err
}

func (c *Client) existsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	type r struct {
		ok bool
		st *zk.Stat
		ev <-chan zk.Event
	}
	res, err := call(ctx, c, "exists", func() (r, error) {
		ok, st, ev, err := c.conn.ExistsW(p)
		return r{ok, st, ev}, err
	}, nil)
	return res.ok, res.st, res.ev, err
}

func (c *Client) create(ctx context.Context, p string, data []byte, flags int32, orphan func(string, error)) (string, error) {
	return call(ctx, c, "create", func() (string, error) {
		return c.conn.Create(p, data, flags, c.acl())
	}, orphan)
}

// set runs setData; every successful one also samples ZooKeeper's clock
// from the mtime the server stamped (Client.Now).
func (c *Client) set(ctx context.Context, p string, data []byte, version int32) (*zk.Stat, error) {
	sent := c.clock.local()
	st, err := call(ctx, c, "set", func() (*zk.Stat, error) {
		return c.conn.Set(p, data, version)
	}, nil)
	if err == nil && st != nil {
		c.clock.sample(sent, c.clock.local(), st.Mtime)
	}
	return st, err
}

func (c *Client) del(ctx context.Context, p string, version int32) error {
	_, err := call(ctx, c, "delete", func() (struct{}, error) {
		return struct{}{}, c.conn.Delete(p, version)
	}, nil)
	return err
}

// readData returns p's data and stat, retried after connection loss.
func (c *Client) readData(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		data, st, err = c.get(ctx, p)
		return err
	})
	return data, st, err
}

// readChildren returns p's children, retried after connection loss.
func (c *Client) readChildren(ctx context.Context, p string) ([]string, error) {
	var names []string
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		names, _, err = c.children(ctx, p)
		return err
	})
	return names, err
}

// multi runs the ops as one ZooKeeper transaction. On success it returns
// the per-op results and idx -1. On failure it returns the index of the
// first failing op and that op's error, or idx -1 and the call's error when
// the transaction never reached the server or its outcome is unknown
// (connection loss).
func (c *Client) multi(ctx context.Context, orphan func([]zk.MultiResponse, error), ops ...any) ([]zk.MultiResponse, int, error) {
	return c.groupCommit(ctx, orphan, ops)
}

// ensurePath creates p and its missing ancestors as persistent znodes with
// empty data (idempotent; NodeExists is success). p is absolute.
func (c *Client) ensurePath(ctx context.Context, p string) error {
	if ok, _, err := c.exists(ctx, p); err == nil && ok {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		err := c.retry(ctx, func(ctx context.Context) error {
			_, err := c.create(ctx, cur, nil, zk.FlagPersistent, nil)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("coord: create %q: %w", cur, err)
		}
	}
	return nil
}

// validatePath checks that p is an absolute ZooKeeper path without a
// trailing slash, empty or relative ("." / "..") components, or characters
// ZooKeeper rejects (ZooKeeper Programmer's Guide, "ZNodes").
func validatePath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("path %q: must start with '/': %w", p, ErrInvalidArgument)
	}
	if p == "/" {
		return nil
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("path %q: must not end with '/': %w", p, ErrInvalidArgument)
	}
	for _, comp := range strings.Split(p[1:], "/") {
		if err := validateName(comp); err != nil {
			return fmt.Errorf("path %q: %w", p, err)
		}
	}
	return nil
}

// validateName checks one path component.
func validateName(n string) error {
	switch n {
	case "":
		return fmt.Errorf("empty path component: %w", ErrInvalidArgument)
	case ".", "..":
		return fmt.Errorf("component %q is reserved: %w", n, ErrInvalidArgument)
	case "zookeeper":
		// Allowed below the root; /zookeeper itself is caught by callers that care.
	}
	for _, r := range n {
		if r == '/' || r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("component %q: character %U not allowed: %w", n, r, ErrInvalidArgument)
		}
	}
	return nil
}

// observed reports a recipe step that started at start to the Observer.
func (c *Client) observed(op string, start time.Time, err *error) {
	if c.observer != nil {
		c.observer(op, time.Since(start), *err)
	}
}
