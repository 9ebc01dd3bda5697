package worker

import (
	"context"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// An undecodable item whose move to the dead letters fails (its dead-letter
// znode exists already) is released, not left claimed for the session's life
// (issue 10 item 12). Before: the error of claim.Fail was dropped and the
// claim stayed.
func TestUndecodableItemFailErrorReleasesClaim(t *testing.T) {
	zk1 := testenv.ZooKeeper(t)
	c := newCrawl(t, zk1.Addr(), "deadletter", testConfig(), frontier.Layout{Shards: 1, Spread: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := readyItem(t, ctx, c, sess, []byte("{not an item"))
	dead := c.root + "/failed/" + coord.ShardName(0) + "-" + name
	if _, err := coord.Store(c.client, dead).Write(ctx, []byte("in the way"), -1); err != nil {
		t.Fatal(err)
	}
	claim, err := c.queue.Take(ctx, sess, 0, nil)
	if err != nil || claim.Name() != name {
		t.Fatalf("took %v, %v; want %s", claim, err, name)
	}
	_, decodeErr := frontier.DecodeItem(claim.Data())
	if decodeErr == nil {
		t.Fatal("the garbage item decoded")
	}
	w := &Worker{log: testLogger(t)}
	if w.failUndecodable(ctx, claim, decodeErr) {
		t.Fatal("failUndecodable reported success though Fail cannot succeed")
	}
	held, err := c.queue.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range held {
		t.Errorf("claim %s/%s still held after the failed move", coord.ShardName(cl.Shard), cl.Item)
	}
}

// readyItem puts data into the ready window of shard 0 (group 0 of a
// one-shard layout) as the group's owner moves a record there, and returns
// the item's name.
func readyItem(t *testing.T, ctx context.Context, c *crawlEnv, sess *coord.Session, data []byte) string {
	t.Helper()
	grp, err := c.front.Backlog().Open(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := frontier.Item{URL: "http://example.test/ready"}.Record()
	if err != nil {
		t.Fatal(err)
	}
	res, err := grp.Apply(ctx, frontier.Step{Accept: [][]byte{rec}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = grp.Apply(ctx, frontier.Step{Move: []frontier.Move{{Ref: res.Accepted[0], Shard: 0, Data: data}}})
	if err != nil || len(res.Ready) != 1 {
		t.Fatalf("move: %v, %v", res, err)
	}
	return res.Ready[0]
}

// Undecodable items count against max_dead_letters like any failed URL:
// past the cap they are completed (logged), not kept in R/failed.
func TestUndecodableItemsHonourDeadLetterCap(t *testing.T) {
	zk1 := testenv.ZooKeeper(t)
	c := newCrawl(t, zk1.Addr(), "deadcapbad", testConfig(), frontier.Layout{Shards: 1, Spread: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxDeadLetters = 2
	w := newWorker(Options{ID: "cap", Logger: testLogger(t)}, c.root)
	w.applyConfig(cfg.Encode(), 1)
	if w.current() == nil {
		t.Fatalf("config rejected: %s", *w.cfgErr.Load())
	}
	for i := range 3 {
		readyItem(t, ctx, c, sess, []byte("{not an item"))
		claim, err := c.queue.Take(ctx, sess, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, decodeErr := frontier.DecodeItem(claim.Data())
		if !w.failUndecodable(ctx, claim, decodeErr) {
			t.Fatalf("item %d did not leave the queue", i)
		}
	}
	failed, err := c.queue.Failed(ctx)
	if err != nil || len(failed) != 2 {
		t.Fatalf("%d dead letters (%v), want 2 (max_dead_letters)", len(failed), err)
	}
}
