package coord_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Queue.Commit runs its ops as one multi: creates report their names, an
// OpReady item is a ready item Take and ReadyNames see, and a failed op
// (a stale version, a missing parent, a bad path) writes nothing and maps
// to coord's sentinels. Read, List and Stat see what it wrote, and a List
// watch closes once the children change.
func TestStoreCommit(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	ctx := testenv.Context(t, 30*time.Second)
	q := coord.NewQueue(c, root, 2)
	if err := q.Init(ctx, []string{"area"}, []string{"area/a"}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names, err := q.Commit(ctx, "test", sess, []coord.Op{
		{Kind: coord.OpSet, Path: "area/a", Data: []byte("v1"), Version: 0},
		{Kind: coord.OpCreateSeq, Path: "area/a/x-", Data: []byte("p")},
		{Kind: coord.OpCreate, Path: "area/b", Data: []byte("b")},
		{Kind: coord.OpReady, Shard: 1, Data: []byte("item")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 4 || names[0] != "" || !strings.HasPrefix(names[1], "x-") || names[2] != "b" || !strings.HasPrefix(names[3], "u-") {
		t.Fatalf("names %q", names)
	}
	if data, v, err := q.Read(ctx, "area/a"); err != nil || string(data) != "v1" || v != 1 {
		t.Fatalf("Read area/a: %q version %d, %v", data, v, err)
	}
	if ready, err := q.ReadyNames(ctx, 1); err != nil || len(ready) != 1 || ready[0] != names[3] {
		t.Fatalf("ready items of shard 1: %q, %v; want %q", ready, err, names[3])
	}
	kids, watch, err := q.List(ctx, "area/a", true)
	if err != nil || len(kids) != 1 || kids[0] != names[1] {
		t.Fatalf("List area/a: %q, %v", kids, err)
	}
	if n, size, cv, err := q.Stat(ctx, "area/a"); err != nil || n != 1 || size != 2 || cv < 1 {
		t.Fatalf("Stat area/a: %d children, %d bytes, child version %d, %v", n, size, cv, err)
	}

	// A stale version fails the whole multi: the create beside it is not made.
	_, err = q.Commit(ctx, "test", sess, []coord.Op{
		{Kind: coord.OpCreate, Path: "area/c"},
		{Kind: coord.OpSet, Path: "area/a", Data: []byte("v2"), Version: 0},
	}, nil)
	if !errors.Is(err, coord.ErrVersionConflict) {
		t.Fatalf("stale version: %v, want ErrVersionConflict", err)
	}
	if _, _, err := q.Read(ctx, "area/c"); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("area/c after a failed commit: %v, want ErrNotFound", err)
	}
	if _, err := q.Commit(ctx, "test", sess, []coord.Op{{Kind: coord.OpCreate, Path: "nope/x"}}, nil); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("missing parent: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "../x", "area//a", "area/a/"} {
		if _, err := q.Commit(ctx, "test", sess, []coord.Op{{Kind: coord.OpCreate, Path: bad}}, nil); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Errorf("path %q: %v, want ErrInvalidArgument", bad, err)
		}
	}

	// Unfenced (anyone may write): a sequential create; the watch fires.
	if _, err := q.Commit(ctx, "test", nil, []coord.Op{{Kind: coord.OpCreateSeq, Path: "area/a/x-"}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	case <-time.After(10 * time.Second):
		t.Fatal("the List watch did not fire on a new child")
	}
	if kids, _, err := q.List(ctx, "area/a", false); err != nil || len(kids) != 2 || kids[0] != names[1] {
		t.Fatalf("List after the second create: %q, %v (want FIFO order)", kids, err)
	}
}

// A commit for a session that has ended writes nothing and fails with
// ErrSessionExpired: the fence is the session's marker, checked in the
// same multi.
func TestStoreCommitNeedsALiveSession(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	admin := connect(t, zkAddr(t))
	ctx := testenv.Context(t, 30*time.Second)
	q := coord.NewQueue(admin, root, 1)
	if err := q.Init(ctx, []string{"area"}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, zkAddr(t))
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q2 := coord.NewQueue(c, root, 1)
	if _, err := q2.Commit(ctx, "test", sess, []coord.Op{{Kind: coord.OpCreate, Path: "area/live"}}, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = q2.Commit(ctx, "test", sess, []coord.Op{{Kind: coord.OpCreate, Path: "area/dead"}}, nil)
	if !errors.Is(err, coord.ErrSessionExpired) && !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("commit of an ended session: %v, want ErrSessionExpired", err)
	}
	if _, _, err := q.Read(ctx, "area/dead"); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("area/dead: %v, want ErrNotFound", err)
	}
}
