package coord_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// lockChildren returns the children of a lock directory.
func lockChildren(t testing.TB, c *coord.Client, dir string) []string {
	t.Helper()
	kids, _, err := c.Conn().Children(dir)
	if err != nil {
		t.Fatalf("children of %s: %v", dir, err)
	}
	return kids
}

// session returns c's current session.
func session(t testing.TB, ctx context.Context, c *coord.Client) *coord.Session {
	t.Helper()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// 8 sessions x 50 acquisitions: never two holders at once.
func TestMutexExclusion(t *testing.T) {
	t.Parallel()
	const sessions, rounds = 8, 50
	dir := testRoot(t) + "/lock"
	ctx := ctxT(t, 90*time.Second)
	var inside, maxInside, total atomic.Int64
	var counter int // guarded only by the distributed lock
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	start := time.Now()
	for i := 0; i < sessions; i++ {
		c := connect(t, zkAddr(t))
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := coord.NewMutex(session(t, ctx, c), dir)
			for r := 0; r < rounds; r++ {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				if n > maxInside.Load() {
					maxInside.Store(n)
				}
				v := counter
				time.Sleep(100 * time.Microsecond)
				counter = v + 1
				total.Add(1)
				inside.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if maxInside.Load() != 1 {
		t.Fatalf("up to %d holders at once", maxInside.Load())
	}
	if counter != sessions*rounds || total.Load() != sessions*rounds {
		t.Fatalf("counter = %d, total = %d, want %d", counter, total.Load(), sessions*rounds)
	}
	t.Logf("%d acquisitions in %v", sessions*rounds, time.Since(start).Round(time.Millisecond))
	c := connect(t, zkAddr(t))
	if kids := lockChildren(t, c, dir); len(kids) != 0 {
		t.Fatalf("lock nodes left: %v", kids)
	}
}

// Expiring the holder's session (through its proxy) hands the lock to the
// next waiter, and the old holder learns it through its session's Ctx.
func TestMutexHandoffOnExpiry(t *testing.T) {
	t.Parallel()
	dir := testRoot(t) + "/lock"
	ctx := ctxT(t, 60*time.Second)
	p, hc := proxied(t, zkAddr(t))
	wc := connect(t, zkAddr(t))
	hs := session(t, ctx, hc)
	holder, waiter := coord.NewMutex(hs, dir), coord.NewMutex(session(t, ctx, wc), dir)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	select {
	case err := <-got:
		t.Fatalf("waiter got the lock while held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	expired := make(chan error, 1)
	go func() { expired <- testenv.ExpireSession(ctx, p, testSessionTimeout) }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("waiter did not get the lock after the holder's session expired")
	}
	if err := <-expired; err != nil {
		t.Fatal(err)
	}
	select {
	case <-hs.Ctx().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("holder's session context not cancelled")
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of a lost lock: %v", err)
	}
	if err := holder.Lock(ctx); !errors.Is(err, coord.ErrSessionExpired) {
		t.Fatalf("Lock in an ended session: %v, want ErrSessionExpired", err)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The old holder's client works on with its new session.
	again := coord.NewMutex(session(t, ctx, hc), dir)
	if err := again.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Closing the holder's client ends its session at once and hands over.
func TestMutexHandoffOnClose(t *testing.T) {
	t.Parallel()
	dir := testRoot(t) + "/lock"
	ctx := ctxT(t, 30*time.Second)
	hc, wc := connect(t, zkAddr(t)), connect(t, zkAddr(t))
	hs := session(t, ctx, hc)
	holder, waiter := coord.NewMutex(hs, dir), coord.NewMutex(session(t, ctx, wc), dir)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	time.Sleep(200 * time.Millisecond)
	hc.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not get the lock after the holder closed")
	}
	<-hs.Ctx().Done()
}

// A waiter whose context is cancelled leaves no node; TryLock on a held lock
// returns false and leaves no node.
func TestMutexCancelLeavesNoNode(t *testing.T) {
	t.Parallel()
	dir := testRoot(t) + "/lock"
	ctx := ctxT(t, 30*time.Second)
	c1, c2 := connect(t, zkAddr(t)), connect(t, zkAddr(t))
	holder := coord.NewMutex(session(t, ctx, c1), dir)
	if ok, err := holder.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock on a free lock = %v, %v", ok, err)
	}
	waiter := coord.NewMutex(session(t, ctx, c2), dir)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := waiter.Lock(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled Lock: %v", err)
	}
	eventually(t, 5*time.Second, "only the holder's node", func() bool { return len(lockChildren(t, c2, dir)) == 1 })

	if ok, err := waiter.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock on a held lock = %v, %v", ok, err)
	}
	eventually(t, 5*time.Second, "only the holder's node after TryLock", func() bool { return len(lockChildren(t, c2, dir)) == 1 })
	if err := waiter.Unlock(ctx); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("Unlock of unheld: %v", err)
	}
	// Cancel a Lock whose create cannot even reach the server: the node
	// created after the partition heals is removed too.
	p, c3 := proxied(t, zkAddr(t))
	blocked := coord.NewMutex(session(t, ctx, c3), dir)
	if ok, err := blocked.TryLock(ctx); ok || err != nil { // creates the dir cache; leaves no node
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	p.Blackhole()
	bctx, bcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = blocked.Lock(bctx)
	bcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock during partition: %v", err)
	}
	p.Heal()
	time.Sleep(500 * time.Millisecond)
	eventually(t, 10*time.Second, "no node from the abandoned create", func() bool { return len(lockChildren(t, c2, dir)) == 1 })
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "empty lock dir", func() bool { return len(lockChildren(t, c2, dir)) == 0 })
}
