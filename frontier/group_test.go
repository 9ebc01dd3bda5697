package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// recKey is the test KeyFunc: FNV-1a of the record.
func recKey(r []byte) uint64 {
	h := fnv.New64a()
	h.Write(r)
	return h.Sum64()
}

// newBacklog creates a queue and backlog with groups groups (one shard
// each) under a fresh root.
func newBacklog(t testing.TB, c *coord.Client, root string, groups int) *frontier.Backlog {
	t.Helper()
	levels, err := frontier.StoreLevels(groups)
	if err != nil {
		t.Fatal(err)
	}
	return frontier.NewBacklog(newQueue(t, c, root, groups, levels...), groups, recKey)
}

// owner runs the owner's steps of group g on c until ctx ends: drain the
// inbox (dedup by key), move everything pending to the ready shard g. It
// reopens the group after any error, as the worker does. It returns the
// number of step errors it recovered from.
func owner(ctx context.Context, t testing.TB, c *coord.Client, b *frontier.Backlog, g int) int {
	recovered := 0
	var grp *frontier.Group
	for ctx.Err() == nil {
		if grp == nil {
			sess, err := c.Session(ctx)
			if err != nil {
				continue
			}
			if grp, err = b.Open(ctx, sess, g); err != nil {
				grp = nil
				recovered++
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		posts, err := grp.Inbox(ctx, 64<<10)
		if err != nil {
			grp = nil
			recovered++
			continue
		}
		var s frontier.Step
		inStep := map[uint64]bool{}
		for _, p := range posts {
			s.Drained = append(s.Drained, p.Name)
			for _, r := range p.Records {
				k := recKey(r)
				if grp.Seen(k) || inStep[k] {
					continue
				}
				inStep[k] = true
				s.Accept = append(s.Accept, r)
			}
		}
		grp.Pending(func(ref frontier.Ref, rec []byte) {
			if len(s.Move) < 300 {
				s.Move = append(s.Move, frontier.Move{Ref: ref, Shard: g, Data: rec})
			}
		})
		if len(s.Drained) == 0 && len(s.Move) == 0 && !grp.Retirable() {
			select {
			case <-ctx.Done():
			case <-grp.InboxEvent():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if _, err := grp.Apply(ctx, s); err != nil {
			grp = nil
			recovered++
		}
	}
	return recovered
}

// readyRecords returns the data of every ready item of shard g.
func readyRecords(t testing.TB, c *coord.Client, root string, g int) []string {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	q, err := coord.OpenQueue(ctx, c, root)
	if err != nil {
		t.Fatal(err)
	}
	names, err := q.ReadyNames(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		d, err := q.Get(ctx, g, n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(d))
	}
	return out
}

// Every record posted (each key by two posters) reaches the ready window
// exactly once, while ownership of the group moves between two clients
// with posts waiting in the inbox; after its batch retires the seen-set
// still holds it: a reloaded group drops a re-post.
func TestGroupEnqueuesExactlyOnce(t *testing.T) {
	t.Parallel()
	const keys = 3000
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	b := newBacklog(t, c, root, 2)
	ctx := testenv.Context(t, 60*time.Second)
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc := connect(t, zkAddr(t))
			pb := frontier.NewBacklog(openQueue(t, pc, root), 2, recKey)
			for i := 0; i < keys; i += 100 {
				var recs [][]byte
				for j := i; j < i+100; j++ {
					recs = append(recs, []byte(fmt.Sprintf("rec-%05d", j)))
				}
				if err := pb.Post(ctx, 1, recs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Ownership moves twice while the posters write (the inbox holds posts
	// at each move): owner c, then c2, then c again.
	c2 := connect(t, zkAddr(t))
	b2 := frontier.NewBacklog(openQueue(t, c2, root), 2, recKey)
	for i, oc := range []struct {
		c *coord.Client
		b *frontier.Backlog
	}{{c, b}, {c2, b2}} {
		octx, stop := context.WithTimeout(ctx, time.Duration(150+100*i)*time.Millisecond)
		owner(octx, t, oc.c, oc.b, 1)
		stop()
	}
	octx, stop := context.WithCancel(ctx)
	done := make(chan int)
	go func() { done <- owner(octx, t, c, b, 1) }()
	wg.Wait()
	testenv.Eventually(t, 30*time.Second, "every record ready", func() bool { return len(readyRecords(t, c, root, 1)) >= keys })
	time.Sleep(300 * time.Millisecond) // a few idle steps: batches retire
	stop()
	<-done
	got := readyRecords(t, c, root, 1)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r] {
			t.Fatalf("record %q queued twice", r)
		}
		seen[r] = true
	}
	if len(got) != keys {
		t.Fatalf("%d ready records, want %d", len(got), keys)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[1].Backlog != 0 || st[1].Posts != 0 || st[1].Batches != 0 || st[1].Seen != keys {
		t.Fatalf("group stats after the drain %+v; want all retired into %d seen keys", st[1], keys)
	}
	// A reloaded owner knows every key.
	sess, _ := c.Session(ctx)
	grp, err := b.Open(ctx, sess, 1)
	if err != nil {
		t.Fatal(err)
	}
	if grp.SeenCount() != keys || !grp.Seen(recKey([]byte("rec-00042"))) {
		t.Fatalf("reloaded seen-set has %d keys", grp.SeenCount())
	}
}

// Two owners of one group (a handoff overlap): the one whose cursor is
// stale gets ErrVersionConflict and writes nothing; reopened, it sees the other's
// step.
func TestGroupSecondOwnerIsFenced(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	p1, c1 := proxied(t, zkAddr(t))
	c2 := connect(t, zkAddr(t))
	b1 := newBacklog(t, c1, root, 1)
	b2 := frontier.NewBacklog(openQueue(t, c2, root), 1, recKey)
	ctx := testenv.Context(t, 30*time.Second)
	s1, _ := c1.Session(ctx)
	s2, _ := c2.Session(ctx)
	g1, err := b1.Open(ctx, s1, 0)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := b2.Open(ctx, s2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g1.Apply(ctx, frontier.Step{Accept: [][]byte{[]byte("a"), []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Apply(ctx, frontier.Step{Accept: [][]byte{[]byte("a")}}); !errors.Is(err, coord.ErrVersionConflict) {
		t.Fatalf("stale owner's Apply = %v, want ErrVersionConflict", err)
	}
	if g2, err = b2.Open(ctx, s2, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	g2.Pending(func(frontier.Ref, []byte) { n++ })
	if n != 2 || !g2.Seen(recKey([]byte("a"))) {
		t.Fatalf("reopened group: %d pending, want the other owner's 2", n)
	}
	// A Move of a record that is not pending is refused, naming the ref.
	if _, err := g2.Apply(ctx, frontier.Step{Move: []frontier.Move{{Ref: frontier.Ref{Batch: 99}, Data: []byte("x")}}}); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("bad move: %v", err)
	}
	// An expired session's step is fenced: nothing is written.
	if err := testenv.ExpireSession(ctx, p1, testSessionTimeout); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s1.Ctx().Done():
	case <-ctx.Done():
		t.Fatal("session 1 never reported its expiry")
	}
	if _, err := g1.Apply(ctx, frontier.Step{Accept: [][]byte{[]byte("c")}}); !errors.Is(err, coord.ErrSessionExpired) {
		t.Fatalf("Apply after expiry = %v, want ErrSessionExpired", err)
	}
}

// Connection loss injected all through the owner's steps and the posts
// (CutAll on both proxies every 20..80 ms) never loses a record and never
// queues one twice.
func TestGroupStepsUnderConnectionLoss(t *testing.T) {
	t.Parallel()
	const keys = 4000
	root := testRoot(t)
	admin := connect(t, zkAddr(t))
	newBacklog(t, admin, root, 1)
	op, oc := proxied(t, zkAddr(t))
	pp, pc := proxied(t, zkAddr(t))
	ob := frontier.NewBacklog(openQueue(t, oc, root), 1, recKey)
	pb := frontier.NewBacklog(openQueue(t, pc, root), 1, recKey)
	ctx := testenv.Context(t, 90*time.Second)
	octx, stop := context.WithCancel(ctx)
	recovered := make(chan int)
	go func() { recovered <- owner(octx, t, oc, ob, 0) }()
	cut := make(chan struct{})
	cuts := 0
	go func() {
		defer close(cut)
		for i := 0; ; i++ {
			select {
			case <-octx.Done():
				return
			case <-time.After(time.Duration(20+rand.IntN(60)) * time.Millisecond):
			}
			if i%2 == 0 {
				op.CutAll()
			} else {
				pp.CutAll()
			}
			cuts++
		}
	}()
	for i := 0; i < keys; i += 50 {
		var recs [][]byte
		for j := i; j < i+50; j++ {
			recs = append(recs, []byte(fmt.Sprintf("cl-%05d", j)))
		}
		for {
			if err := pb.Post(ctx, 0, recs); err == nil {
				break
			} else if ctx.Err() != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Eventually(t, 60*time.Second, "every record ready", func() bool { return len(readyRecords(t, admin, root, 0)) >= keys })
	stop()
	<-cut
	n := <-recovered
	got := readyRecords(t, admin, root, 0)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r] {
			t.Fatalf("record %q queued twice", r)
		}
		seen[r] = true
	}
	t.Logf("%d cuts, owner recovered from %d step errors; %d ready", cuts, n, len(got))
	if len(got) != keys {
		t.Fatalf("%d ready records, want %d", len(got), keys)
	}
}

// SeenBytes sums the data of the groups' seen chunks as ZooKeeper stores
// them: 0 before any batch retired, then at least a byte per key folded
// in and no more than the 8 bytes of a raw key each (Elias-Fano: about
// 7.4 for 100 uniform keys).
func TestBacklogSeenBytes(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	ctx := testenv.Context(t, 30*time.Second)
	b := newBacklog(t, c, root, 2)
	if n, err := b.SeenBytes(ctx); err != nil || n != 0 {
		t.Fatalf("SeenBytes of a new crawl: %d, %v", n, err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	grp, err := b.Open(ctx, sess, 1)
	if err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	for i := range 100 {
		recs = append(recs, []byte(fmt.Sprintf("record-%d", i)))
	}
	res, err := grp.Apply(ctx, frontier.Step{Accept: recs})
	if err != nil {
		t.Fatal(err)
	}
	var s frontier.Step
	for i, ref := range res.Accepted {
		s.Move = append(s.Move, frontier.Move{Ref: ref, Shard: 1, Data: recs[i]})
	}
	if _, err := grp.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := grp.Apply(ctx, frontier.Step{}); err != nil { // retires the batch into a seen chunk
		t.Fatal(err)
	}
	st, err := b.Stats(ctx)
	if err != nil || st[1].Seen != 100 || st[1].SeenChunks != 1 {
		t.Fatalf("stats of group 1: %+v, %v", st, err)
	}
	if n, err := b.SeenBytes(ctx); err != nil || n < 100 || n > 8*100+16 {
		t.Fatalf("SeenBytes after 100 keys: %d, %v", n, err)
	}
}
