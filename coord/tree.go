package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"
)

// Delete deletes the znode and every znode below it, children first (as
// ZooKeeper's ZKUtil.deleteRecursive; ZooKeeper has no server-side
// recursive delete), with up to 32 deletes in flight (pipelined on the one
// connection), and returns how many it deleted: for a drain request, 1
// (cancels it); for a crawl root, the whole crawl. progress, if not nil,
// is called with the running count after each deleted znode. It is not
// atomic: a znode created below while it runs makes its parent's delete
// fail with NotEmpty, which is retried by listing again; a znode already
// gone counts as done, so running it again after a failure finishes the
// job. Errors: ErrNotFound when the znode does not exist; ctx ended, or a
// ZooKeeper error other than NoNode/NotEmpty.
func (s *ConfigStore) Delete(ctx context.Context, progress func(deleted int64)) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	c, parallel := s.c, 32
	var n atomic.Int64
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex // serializes progress calls
	var walk func(ctx context.Context, abs string) error
	walk = func(ctx context.Context, abs string) error {
		for attempt := 0; ; attempt++ {
			kids, err := c.readChildren(ctx, abs)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return err
			}
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(parallel) // bounds goroutines to parallel^depth
			for _, k := range kids {
				child := abs + "/" + k
				g.Go(func() error { return walk(gctx, child) })
			}
			if err := g.Wait(); err != nil {
				return err
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			err = c.retry(ctx, func(ctx context.Context) error { return c.del(ctx, abs, -1) })
			<-sem
			switch {
			case err == nil:
				v := n.Add(1)
				if progress != nil {
					mu.Lock()
					progress(v)
					mu.Unlock()
				}
				return nil
			case errors.Is(err, zk.ErrNoNode):
				return nil
			case errors.Is(err, zk.ErrNotEmpty) && attempt < 10:
				continue // a child appeared meanwhile: list again
			default:
				return err
			}
		}
	}
	ok, err := s.exists(ctx)
	if err == nil && !ok {
		err = ErrNotFound
	}
	if err == nil {
		err = walk(ctx, s.path)
	}
	if err != nil {
		return n.Load(), fmt.Errorf("coord: ConfigStore.Delete %s: %w", s.name, err)
	}
	return n.Load(), nil
}

// exists reports whether the znode exists, retried after connection loss.
func (s *ConfigStore) exists(ctx context.Context) (bool, error) {
	var ok bool
	err := s.c.retry(ctx, func(ctx context.Context) error {
		var err error
		ok, _, err = s.c.exists(ctx, s.path)
		return err
	})
	return ok, err
}
