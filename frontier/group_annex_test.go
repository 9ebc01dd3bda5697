package frontier_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// Step.Drop retires backlog records without ready items (their keys stay
// seen) and Step.Annex is written in the same multi, kept by later steps
// that do not set it, and loaded by the next owner.
func TestGroupDropAndAnnex(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c := connect(t, zkAddr(t))
	b := newBacklog(t, c, root, 1)
	ctx := testenv.Context(t, 30*time.Second)
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	grp, err := b.Open(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	if grp.Annex() != nil {
		t.Fatalf("new group's annex %q, want nil", grp.Annex())
	}
	res, err := grp.Apply(ctx, frontier.Step{Accept: [][]byte{[]byte("a"), []byte("b"), []byte("c")}})
	if err != nil {
		t.Fatal(err)
	}
	refs := res.Accepted
	// A record both moved and dropped is refused; nothing is written.
	if _, err := grp.Apply(ctx, frontier.Step{Move: []frontier.Move{{Ref: refs[0], Data: []byte("a")}}, Drop: refs[:1]}); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("move and drop of one record: %v, want ErrInvalidArgument", err)
	}
	res, err = grp.Apply(ctx, frontier.Step{Move: []frontier.Move{{Ref: refs[2], Data: []byte("c")}}, Drop: refs[:2], Annex: []byte("counts")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ready) != 1 || len(readyRecords(t, c, root, 0)) != 1 || res.Retired != 1 {
		t.Fatalf("step result %+v, ready items %v; want only the moved one, and the batch retired", res, readyRecords(t, c, root, 0))
	}
	if _, err := grp.Apply(ctx, frontier.Step{Accept: [][]byte{[]byte("d")}}); err != nil {
		t.Fatal(err) // the annex stays
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Backlog != 1 || st[0].Seen != 3 || string(st[0].Annex) != "counts" {
		t.Fatalf("stats %+v; want 1 record in the backlog, 3 seen keys and the annex", st[0])
	}
	again, err := b.Open(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Annex()) != "counts" || !again.Seen(recKey([]byte("a"))) || again.SeenCount() != 4 {
		t.Fatalf("reloaded group: annex %q, %d seen", again.Annex(), again.SeenCount())
	}
	if _, err := again.Apply(ctx, frontier.Step{Annex: []byte{}}); err != nil || again.Annex() != nil {
		t.Fatalf("clearing the annex: %v, annex %q", err, again.Annex())
	}
}
