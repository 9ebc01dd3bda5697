package frontier

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkcrawl/zkcrawl/coord"
	"golang.org/x/sync/errgroup"
)

// WatchPending reads what Pending reads and arms child watches on the
// znodes whose children hold the work: every ready shard and claim shard
// (coord.Queue.WatchShards) and every group's inbox (coord.Queue.List with
// watch). changed is closed once any of them changes after it was read,
// or once the connection was lost and re-established, or when the client
// closes; the groups' cursors (Backlog) are read without a watch.
//
// A done check reads WatchPending, then Pending again: if both are Empty
// and changed is still open, the crawl was done at one moment (the second
// read's), and done is stable. Work moves only inbox -> backlog -> ready
// -> claim -> completion, by commits that each change a watched znode's
// children (a post, a drain, a ready item, a claim, a completion) except
// the owner's steps that add to a cursor, which drain a watched inbox or
// take a local hand-off from a worker that holds a watched claim. A
// completion commits after the links of its page are committed (posted,
// or taken by a committed step), so no link is ever outside every watched
// place (docs/design.md, "When a batch crawl is done").
//
// Cost: 2 x shards + groups getChildren (names only) and groups cursor
// reads, all pipelined at once (about one round trip); the watches stay
// registered until changed is closed.
// Errors: ZooKeeper errors after retries; a cursor that does not decode.
func (f *Frontier) WatchPending(ctx context.Context) (p Pending, changed <-chan struct{}, err error) {
	// The three sets of reads are independent: each znode's watch is set
	// by its own read, whatever the order, so they go at once.
	var qs coord.QueueStats
	var groups []GroupStats
	chans := make([]<-chan struct{}, f.b.groups+1)
	posts := make([]int, f.b.groups)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		qs, chans[0], err = f.q.WatchShards(gctx)
		return err
	})
	g.Go(func() error {
		return parallel(gctx, f.b.groups, countReads, func(ctx context.Context, g int) error {
			names, ch, err := f.q.List(ctx, f.b.inboxPath(g), true)
			posts[g], chans[g+1] = len(names), ch
			return err
		})
	})
	g.Go(func() error {
		var err error
		groups, _, err = f.b.stats(gctx, false)
		return err
	})
	err = g.Wait()
	changed = anyClosed(chans)
	if err != nil {
		return Pending{}, nil, fmt.Errorf("frontier: WatchPending: %w", err)
	}
	for i := range groups {
		groups[i].Posts = posts[i]
	}
	p = BacklogPending(groups, f.policy())
	p.Ready, p.Claimed = qs.Queued, qs.Claimed
	return p, changed, nil
}

// anyClosed returns a channel closed once any of chs is (nil ones never
// are); its goroutines, one per channel, end with it.
func anyClosed(chs []<-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	var once sync.Once
	for _, ch := range chs {
		if ch == nil {
			continue
		}
		go func() {
			select {
			case <-ch:
			case <-out:
			}
			once.Do(func() { close(out) })
		}()
	}
	return out
}
