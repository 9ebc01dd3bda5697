package worker

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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
	if _, err := c.queue.Put(ctx, 0, "deadbeef", []byte("{not an item")); err != nil {
		t.Fatal(err)
	}
	names, _, err := c.queue.Items(ctx, 0)
	if err != nil || len(names) != 1 {
		t.Fatalf("items %v, %v; want 1", names, err)
	}
	dead := c.client.Chroot() + c.root + "/failed/" + coord.ShardName(0) + "-" + names[0]
	if _, err := c.client.Conn().Create(dead, []byte("in the way"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := c.queue.Claim(ctx, sess, 0, names[0])
	if err != nil {
		t.Fatal(err)
	}
	_, decodeErr := frontier.DecodeItem(claim.Data())
	if decodeErr == nil {
		t.Fatal("the garbage item decoded")
	}
	w := &Worker{log: testLogger(t)}
	if w.failUndecodable(ctx, claim, decodeErr) {
		t.Fatal("failUndecodable reported success though Fail cannot succeed")
	}
	st, err := c.queue.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Shards {
		for _, cl := range s.Claims {
			t.Errorf("claim %s/%s still held after the failed move", s.Name, cl.Item)
		}
	}
}
