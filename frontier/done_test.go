package frontier_test

import (
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// WatchPending counts what Pending counts and closes changed once an
// inbox gets a post (the shards' watches are coord.Queue.WatchShards's).
func TestWatchPendingFiresOnAPost(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	levels, err := frontier.StoreLevels(4)
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, c, root, 4, levels...)
	f := frontier.New(q, frontier.Layout{Shards: 4, Spread: 1}, 0)
	ctx := testenv.Context(t, 30*time.Second)
	p, changed, err := f.WatchPending(ctx)
	if err != nil || !p.Empty() {
		t.Fatalf("new crawl: %+v, %v; want empty", p, err)
	}
	select {
	case <-changed:
		t.Fatal("changed closed with nothing changed")
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := f.Enqueue(ctx, []frontier.Item{{URL: "http://a.example/"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("changed stayed open after a post")
	}
	p, _, err = f.WatchPending(ctx)
	if err != nil || p.Posts != 1 || p.Empty() {
		t.Fatalf("after a post: %+v, %v; want 1 post", p, err)
	}
	again, err := f.Pending(ctx)
	if err != nil || again != p {
		t.Fatalf("Pending %+v, %v; WatchPending %+v", again, err, p)
	}
}
