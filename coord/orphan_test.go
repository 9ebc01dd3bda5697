package coord_test

import (
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// An orphaned claim (its caller gave up on the claim multi, e.g. a Take
// cancelled mid-flight) is released once ZooKeeper is back, even when the
// outage outlasts coord's retry policy: a restarted server restores the
// session, which would otherwise hold the claim, and its item, for its
// whole life.
func TestOrphanReleasedAfterLongOutage(t *testing.T) {
	t.Parallel()
	zs := testenv.ZooKeeper(t)
	ctx := testenv.Context(t, 90*time.Second)
	root := testRoot(t)
	// A session timeout long enough for the client to reconnect to the
	// restarted server before the restored session expires.
	const timeout = 6 * time.Second
	c := connectWith(t, zs.Addr(), coord.Config{SessionTimeout: timeout})
	q := newQueue(t, c, root, 1)
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Put(ctx, 0, "aa01", []byte("x")); err != nil {
		t.Fatal(err)
	}
	names, _, err := q.Items(ctx, 0)
	if err != nil || len(names) != 1 {
		t.Fatalf("items: %v, %v", names, err)
	}
	cl, err := q.Claim(ctx, sess, 0, names[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := zs.Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cl.ReleaseOrphan(); close(done) }()
	// Longer than the release's first try: two session timeouts plus 5 s,
	// or the retry policy's 12 attempts.
	time.Sleep(2*timeout + 7*time.Second)
	if err := zs.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if sess.Ctx().Err() != nil {
		t.Skipf("the session did not survive the restart: %v", sess.Ctx().Err())
	}
	// The release retries every second; the bound only covers a restarted
	// server and a reconnect that are slow on a loaded machine.
	testenv.Eventually(t, 45*time.Second, "the orphaned claim released", func() bool {
		claims, err := q.Claims(ctx, 0)
		return err == nil && len(claims) == 0
	})
	if sess.Ctx().Err() != nil {
		t.Fatalf("the session ended (%v): the claim went with it, the test proves nothing", sess.Ctx().Err())
	}
	<-done
}
