package frontier

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkcrawl/zkcrawl/coord"
)

// Create creates the crawl's frontier at root if it does not exist: the
// queue's and the frontier store's znodes (coord.CreateQueue) and the
// layout in root's data. It is
// idempotent; for an existing crawl it returns that crawl's frontier and
// ignores layout (the layout is fixed at creation). created reports whether
// this call created it. A zero layout.Version means CurrentLayout. Errors:
// an invalid layout; ErrOldLayout for an existing crawl of another layout;
// ZooKeeper errors.
func Create(ctx context.Context, c *coord.Client, root string, layout Layout) (f *Frontier, created bool, err error) {
	if f, err := Open(ctx, c, root); err == nil {
		return f, false, nil
	} else if !errors.Is(err, coord.ErrNotInitialized) {
		return nil, false, err
	}
	layout = layout.withDefaults()
	if err := layout.Validate(); err != nil {
		return nil, false, err
	}
	// The root's data records the layout before anything else exists, so a
	// worker that opens the crawl meanwhile never misreads it; a concurrent
	// creator writes the same bytes or loses the race to Init's shard-count
	// check.
	if _, err := coord.Store(c, root).Write(ctx, layout.Encode(), -1); err != nil {
		return nil, false, fmt.Errorf("frontier: record the layout of %s: %w", root, err)
	}
	levels, err := storeLevels(layout.Groups())
	if err != nil {
		return nil, false, err
	}
	q, err := coord.CreateQueue(ctx, c, root, layout.Shards, levels...)
	if err != nil {
		return nil, false, fmt.Errorf("frontier: create %s: %w", root, err)
	}
	return New(q, layout, 0), true, nil
}

// Open returns the frontier of an existing crawl at root, with its layout.
// Errors: coord.ErrNotInitialized when the crawl does not exist; ErrOldLayout
// for a crawl of another frontier layout (the message names both); a root
// whose data is not a layout; ZooKeeper errors.
func Open(ctx context.Context, c *coord.Client, root string) (*Frontier, error) {
	q, err := coord.OpenQueue(ctx, c, root)
	if err != nil {
		return nil, err
	}
	data, _, err := coord.Store(c, root).Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("frontier: read the layout of %s: %w", root, err)
	}
	layout, err := DecodeLayout(data, q.Shards())
	if err != nil {
		return nil, fmt.Errorf("frontier: %s: %w", root, err)
	}
	return New(q, layout, 0), nil
}

// Layout returns the crawl's shard layout.
func (f *Frontier) Layout() Layout { return f.layout }
