package coord_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// waitMembers reads ch until it delivers want.
func waitMembers(t *testing.T, ch <-chan []string, want string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	var last []string
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed; last %v, want %s", last, want)
			}
			last = m
			if fmt.Sprint(m) == want {
				return
			}
		case <-deadline:
			t.Fatalf("members %v, want %s", last, want)
		}
	}
}

// Join and Leave are seen by watchers; session expiry removes the member;
// the member re-joins with the new session.
func TestMembership(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, 60*time.Second)
	root := testRoot(t)
	obs := connect(t, zkAddr(t))
	ch := coord.WatchMembers(ctx, obs, root)
	waitMembers(t, ch, "[]")

	ca, cb := connect(t, zkAddr(t)), connect(t, zkAddr(t))
	pc, cc := proxied(t, zkAddr(t), coord.Config{})
	join := func(c *coord.Client, id string) *coord.Member {
		sess, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, err := coord.Join(ctx, sess, root, id, []byte("status-"+id))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c := join(ca, "a"), join(cb, "b"), join(cc, "c")
	waitMembers(t, ch, "[a b c]")
	ids, status, err := coord.Members(ctx, obs, root)
	if err != nil || fmt.Sprint(ids) != "[a b c]" || string(status["b"]) != "status-b" {
		t.Fatalf("Members = %v %q %v", ids, status, err)
	}
	if err := a.Update(ctx, []byte("busy")); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := coord.Members(ctx, obs, root); string(st["a"]) != "busy" {
		t.Fatalf("status after Update = %q", st["a"])
	}
	// Joining again with the same session adopts the node.
	if _, err := coord.Join(ctx, b.Session(), root, "b", []byte("again")); err != nil {
		t.Fatal(err)
	}
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, ch, "[a c]")

	if err := testenv.ExpireSession(ctx, pc, testSessionTimeout); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, ch, "[a]")
	<-c.Session().Ctx().Done()
	if err := c.Update(ctx, []byte("x")); !errors.Is(err, coord.ErrSessionExpired) {
		t.Fatalf("Update after expiry: %v", err)
	}
	c2 := join(cc, "c")
	if c2.Session().ID() == c.Session().ID() {
		t.Fatal("re-join used the old session")
	}
	waitMembers(t, ch, "[a c]")
	// Owners over the live members partitions every shard exactly.
	ids, _, _ = coord.Members(ctx, obs, root)
	owned := map[int]string{}
	for _, id := range ids {
		for s, o := range coord.Owners(16, ids) {
			if o != id {
				continue
			}
			if prev, ok := owned[s]; ok {
				t.Fatalf("shard %d owned by %s and %s", s, prev, id)
			}
			owned[s] = id
		}
	}
	if len(owned) != 16 {
		t.Fatalf("%d of 16 shards owned", len(owned))
	}
}
