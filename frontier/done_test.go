package frontier_test

import (
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// newFrontier4 returns the frontier of a new crawl of 4 shards (host
// spread 1).
func newFrontier4(t *testing.T) *frontier.Frontier {
	t.Helper()
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	levels, err := frontier.StoreLevels(4)
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, c, root, 4, levels...)
	return frontier.New(q, frontier.Layout{Shards: 4, Spread: 1}, 0)
}

// WatchPending counts what Pending counts and closes changed once an
// inbox gets a post (the shards' watches are coord.Queue.WatchShards's).
func TestWatchPendingFiresOnAPost(t *testing.T) {
	t.Parallel()
	f := newFrontier4(t)
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

// PendingStamp counts what Pending counts, and its stamp moves with any
// post, drain or cursor write: the same in two reads of an idle crawl,
// another after a post.
func TestPendingStampMovesWithAPost(t *testing.T) {
	t.Parallel()
	f := newFrontier4(t)
	ctx := testenv.Context(t, 30*time.Second)
	p1, s1, err := f.PendingStamp(ctx)
	if err != nil || !p1.Empty() {
		t.Fatalf("new crawl: %+v, %v; want empty", p1, err)
	}
	if _, s2, err := f.PendingStamp(ctx); err != nil || s2 != s1 {
		t.Fatalf("idle crawl: stamps %x then %x (%v)", s1, s2, err)
	}
	if _, err := f.Enqueue(ctx, []frontier.Item{{URL: "http://a.example/"}}); err != nil {
		t.Fatal(err)
	}
	p3, s3, err := f.PendingStamp(ctx)
	if err != nil || p3.Posts != 1 || s3 == s1 {
		t.Fatalf("after a post: %+v, stamp %x (was %x), %v", p3, s3, s1, err)
	}
	if again, err := f.Pending(ctx); err != nil || again != p3 {
		t.Fatalf("Pending %+v, %v; PendingStamp %+v", again, err, p3)
	}
}
