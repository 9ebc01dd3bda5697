package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

// openRevisitFrom opens the old crawl of --revisit-from, before anything
// is written: an old crawl that does not exist, is the new crawl itself or
// has another frontier layout is a one-line error naming it.
func openRevisitFrom(ctx context.Context, client *coord.Client, old, crawl string) (*frontier.Frontier, error) {
	if old == crawl {
		return nil, cli.Usage("--revisit-from %s: the crawl being seeded itself", old)
	}
	root, err := coord.Root(old)
	if err != nil {
		return nil, cli.Usage("--revisit-from: %v", err)
	}
	f, err := frontier.Open(ctx, client, root)
	switch {
	case errors.Is(err, coord.ErrNotInitialized):
		return nil, fmt.Errorf("--revisit-from %s: no such crawl (no %s); nothing written", old, root)
	case errors.Is(err, frontier.ErrOldLayout):
		return nil, fmt.Errorf("--revisit-from %s: %v; nothing written", old, err)
	case err != nil:
		return nil, fmt.Errorf("--revisit-from %s: %w; nothing written", old, err)
	}
	return f, nil
}

// revisitFrom posts the old crawl's recrawl schedule entries (URL, depth,
// hops, last capture) into the new crawl, after setting the new crawl's
// recrawl_due_before to the next whole second so that each is due at once: the new crawl's
// first pass over them is a recrawl (conditional GETs, revisit records).
// It returns how many entries it posted.
func revisitFrom(ctx context.Context, client *coord.Client, old *frontier.Frontier, front *frontier.Frontier, root string) (int, error) {
	store := coord.Store(client, root, coord.ConfigNode)
	data, version, err := store.Read(ctx)
	if err != nil {
		return 0, fmt.Errorf("read config: %w", err)
	}
	cfg, err := config.Parse(data)
	if err != nil {
		return 0, fmt.Errorf("config of the new crawl: %w", err)
	}
	at, err := config.NextDueSecond(ctx)
	if err != nil {
		return 0, err
	}
	cfg.RecrawlDueBefore, cfg.RecrawlDueMatch = at.Format(time.RFC3339), ""
	if _, err := store.Write(ctx, cfg.Encode(), version); err != nil {
		return 0, fmt.Errorf("write config %s (recrawl_due_before): %w", store, err)
	}
	posted := 0
	batch := make([]frontier.Item, 0, batchSize)
	flush := func() error {
		res, err := front.Enqueue(ctx, batch)
		posted += res.Posted
		batch = batch[:0]
		return err
	}
	err = old.ScheduleEntries(ctx, func(it frontier.Item) error {
		it.Attempts, it.NotBefore = 0, time.Time{}
		batch = append(batch, it)
		if len(batch) == batchSize {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return posted, fmt.Errorf("--revisit-from: %w", err)
	}
	return posted, nil
}
