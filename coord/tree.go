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

// Children returns the names of p's children (sorted by ZooKeeper in no
// particular order), retried after connection loss. Errors: ErrNotFound
// when p does not exist.
func Children(ctx context.Context, c *Client, p string) ([]string, error) {
	if err := validatePath(p); err != nil {
		return nil, fmt.Errorf("coord: Children: %w", err)
	}
	names, err := c.readChildren(ctx, c.abs(p))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Children %s: %w", p, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("coord: Children %s: %w", p, err)
	}
	return names, nil
}

// DeleteTree deletes p and every znode below it, children first (as
// ZooKeeper's ZKUtil.deleteRecursive; ZooKeeper has no server-side
// recursive delete), with up to parallel deletes in flight (pipelined on the
// one connection). progress, if not nil, is called with the running count
// after each deleted znode. It is not atomic: a znode created below p while
// it runs makes the parent's delete fail with NotEmpty, which is retried by
// listing again. A missing p is not an error (0 deleted). Errors: ctx
// ended, or a ZooKeeper error other than NoNode/NotEmpty.
func DeleteTree(ctx context.Context, c *Client, p string, parallel int, progress func(deleted int64)) (int64, error) {
	if err := validatePath(p); err != nil {
		return 0, fmt.Errorf("coord: DeleteTree: %w", err)
	}
	if p == "/" {
		return 0, fmt.Errorf("coord: DeleteTree: refusing to delete the root: %w", ErrInvalidArgument)
	}
	if parallel < 1 {
		parallel = 1
	}
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
	err := walk(ctx, c.abs(p))
	if err != nil {
		return n.Load(), fmt.Errorf("coord: DeleteTree %s: %w", p, err)
	}
	return n.Load(), nil
}
