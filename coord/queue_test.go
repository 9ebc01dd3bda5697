package coord_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// ledger records what consumers did, per key.
type ledger struct {
	mu        sync.Mutex
	processed map[string]int // times a consumer held the item and processed it
	completed map[string]int // times Complete succeeded
}

func newLedger() *ledger {
	return &ledger{processed: make(map[string]int), completed: make(map[string]int)}
}

func (l *ledger) process(k string) {
	l.mu.Lock()
	l.processed[k]++
	l.mu.Unlock()
}

func (l *ledger) complete(k string) {
	l.mu.Lock()
	l.completed[k]++
	l.mu.Unlock()
}

func (l *ledger) counts() (processedKeys, completedKeys, completions int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.completed {
		completions += n
	}
	return len(l.processed), len(l.completed), completions
}

// consume runs one consumer: two goroutines per shard (so concurrent Takes
// share one shard cursor) doing Take, process,
// Complete until ctx ends. It survives session expiry by taking the
// client's next session. work is the simulated processing time. Only Take
// and Session observe ctx; an item taken is completed with a context of its
// own, so stopping the consumers never leaves an item half done.
func consume(ctx context.Context, t testing.TB, q *coord.Queue, c *coord.Client, l *ledger, work time.Duration, wg *sync.WaitGroup) {
	for i := 0; i < 2*q.Shards(); i++ {
		shard := i % q.Shards()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				sess, err := c.Session(ctx)
				if err != nil {
					return
				}
				cl, err := q.Take(ctx, sess, shard, nil)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, coord.ErrClosed) {
						return
					}
					if !errors.Is(err, coord.ErrSessionExpired) && !coord.IsConnectionLoss(err) {
						t.Errorf("Take shard %d: %v", shard, err)
						return
					}
					continue
				}
				k := string(cl.Data())
				l.process(k)
				if work > 0 {
					time.Sleep(work)
				}
				cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err = cl.Complete(cctx)
				cancel()
				switch {
				case err == nil:
					l.complete(k)
				case errors.Is(err, coord.ErrClaimLost), coord.IsConnectionLoss(err), errors.Is(err, coord.ErrClosed):
					// At-least-once: the item stays queued for the next taker.
				default:
					t.Errorf("Complete %s: %v", cl.Name(), err)
				}
			}
		}()
	}
}

// produce puts keys [from, to) in batches of 100 (round-robin shards),
// retrying a batch until it settles. It returns how many Puts reported a new
// item.
func produce(ctx context.Context, q *coord.Queue, prefix string, from, to int) (int, error) {
	queued := 0
	for lo := from; lo < to; lo += 100 {
		hi := min(lo+100, to)
		var items []coord.PutItem
		for i := lo; i < hi; i++ {
			k := key(prefix, i)
			items = append(items, coord.PutItem{Shard: i % q.Shards(), Key: k, Data: []byte(k)})
		}
		for {
			ok, err := q.PutBatch(ctx, items)
			for _, b := range ok {
				if b {
					queued++
				}
			}
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return queued, err
			}
			if os.Getenv("COORD_TEST_LOG") != "" {
				fmt.Fprintf(os.Stderr, "produce: batch %d: %v\n", lo, err)
			}
			// Settle the batch again: exactly-once through the seen-set.
			time.Sleep(50 * time.Millisecond)
		}
	}
	return queued, nil
}

// queueLeft returns the items and claims left in every shard.
func queueLeft(t testing.TB, c *coord.Client, root string, shards int) (items, claims int) {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	q := coord.NewQueue(c, root, shards)
	for s := 0; s < shards; s++ {
		a, err := q.ReadyNames(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := q.Claims(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		items += len(a)
		claims += len(b)
	}
	return items, claims
}

func newQueue(t testing.TB, c *coord.Client, root string, shards int) *coord.Queue {
	t.Helper()
	q := coord.NewQueue(c, root, shards)
	if err := q.Init(testenv.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	return q
}

// takeShard returns a context of timeout, a one-shard queue under a fresh
// root whose Take looks at turned-down items again after recheck, and a
// session to take with.
func takeShard(t *testing.T, timeout, recheck time.Duration) (context.Context, *coord.Queue, *coord.Session) {
	t.Helper()
	ctx := testenv.Context(t, timeout)
	c := connect(t, zkAddr(t))
	q := newQueue(t, c, testRoot(t), 1)
	q.SetRecheck(recheck)
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, q, sess
}

// 4 producers and 4 consumers over 10,000 items: every item consumed
// exactly once when nobody dies.
func TestQueueExactlyOnce(t *testing.T) {
	t.Parallel()
	const producers, consumers, items, shards = 4, 4, 10000, 4
	root := testRoot(t)
	admin := connect(t, zkAddr(t))
	newQueue(t, admin, root, shards)
	ctx := testenv.Context(t, 150*time.Second)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	l := newLedger()
	var cwg sync.WaitGroup
	start := time.Now()
	for i := 0; i < consumers; i++ {
		c := connect(t, zkAddr(t))
		consume(cctx, t, coord.NewQueue(c, root, shards), c, l, 0, &cwg)
	}
	var pwg sync.WaitGroup
	var queued atomic.Int64
	for i := 0; i < producers; i++ {
		c := connect(t, zkAddr(t))
		q := coord.NewQueue(c, root, shards)
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			per := items / producers
			n, err := produce(ctx, q, "eo", i*per, (i+1)*per)
			if err != nil {
				t.Errorf("producer %d: %v", i, err)
			}
			queued.Add(int64(n))
		}()
	}
	// Duplicates are refused.
	dup := coord.NewQueue(admin, root, shards)
	pwg.Wait()
	if ok, err := dup.Put(ctx, 0, key("eo", 7), nil); ok || err != nil {
		t.Fatalf("duplicate Put = %v, %v", ok, err)
	}
	produced := time.Since(start)
	testenv.Eventually(t, 120*time.Second, "all items completed", func() bool {
		_, done, _ := l.counts()
		return done == items || t.Failed()
	})
	stop()
	cwg.Wait()
	t.Logf("%d items: produced in %v, consumed in %v", items, produced.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if queued.Load() != items {
		t.Errorf("Put reported %d new items, want %d", queued.Load(), items)
	}
	l.mu.Lock()
	for k, n := range l.processed {
		if n != 1 {
			t.Errorf("key %s processed %d times", k, n)
		}
	}
	for k, n := range l.completed {
		if n != 1 {
			t.Errorf("key %s completed %d times", k, n)
		}
	}
	if len(l.processed) != items {
		t.Errorf("%d keys processed, want %d", len(l.processed), items)
	}
	l.mu.Unlock()
	if left, claims := queueLeft(t, admin, root, shards); left != 0 || claims != 0 {
		t.Errorf("left: %d items, %d claims", left, claims)
	}
}

// Consumers' sessions expire at random (through proxies): every item is
// consumed at least once and none is lost.
func TestQueueAtLeastOnceWithExpiry(t *testing.T) {
	t.Parallel()
	const consumers, items, shards = 4, 2000, 4
	root := testRoot(t)
	admin := connect(t, zkAddr(t))
	q := newQueue(t, admin, root, shards)
	ctx := testenv.Context(t, 150*time.Second)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	l := newLedger()
	var cwg sync.WaitGroup
	var proxies []*testenv.Proxy
	for i := 0; i < consumers; i++ {
		p, c := proxied(t, zkAddr(t), coord.Config{})
		proxies = append(proxies, p)
		consume(cctx, t, coord.NewQueue(c, root, shards), c, l, 3*time.Millisecond, &cwg)
	}
	// Expire every consumer's session once, at a random moment of the run,
	// while items are produced at a steady 250/s over 8 s.
	var ewg sync.WaitGroup
	var expiries atomic.Int64
	for _, p := range proxies {
		ewg.Add(1)
		go func() {
			defer ewg.Done()
			if !testenv.Sleep(cctx, time.Duration(500+rand.IntN(5000))*time.Millisecond) {
				return
			}
			if testenv.ExpireSession(cctx, p, testSessionTimeout) == nil {
				expiries.Add(1)
			}
		}()
	}
	for lo := 0; lo < items; lo += 50 {
		if _, err := produce(ctx, q, "alo", lo, lo+50); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ewg.Wait() // every expiry is over before the queue is checked
	testenv.Eventually(t, 120*time.Second, "every item processed and the queue empty", func() bool {
		n, _, _ := l.counts()
		if n < items {
			return t.Failed()
		}
		left, claims := queueLeft(t, admin, root, shards)
		return left == 0 && claims == 0
	})
	stop()
	cwg.Wait()
	processed, completedKeys, completions := l.counts()
	redelivered := 0
	l.mu.Lock()
	for _, n := range l.processed {
		redelivered += n - 1
	}
	l.mu.Unlock()
	t.Logf("%d expiries; %d keys processed (%d redeliveries), %d completed by a successful Complete (%d completions)",
		expiries.Load(), processed, redelivered, completedKeys, completions)
	if processed != items {
		t.Fatalf("%d keys processed, want %d", processed, items)
	}
	if completions > items {
		t.Fatalf("%d successful completions for %d items", completions, items)
	}
	if expiries.Load() != consumers {
		t.Fatalf("%d of %d sessions expired", expiries.Load(), consumers)
	}
}

// Connection loss injected while Puts are in flight (CutAll) never enqueues
// an item twice: items left in the queue plus items consumed equals the
// number of distinct keys.
func TestQueuePutConnectionLoss(t *testing.T) {
	t.Parallel()
	const producers, keys, shards = 4, 3000, 4
	root := testRoot(t)
	admin := connect(t, zkAddr(t))
	newQueue(t, admin, root, shards)
	ctx := testenv.Context(t, 120*time.Second)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	l := newLedger()
	var cwg sync.WaitGroup
	cc := connect(t, zkAddr(t))
	consume(cctx, t, coord.NewQueue(cc, root, shards), cc, l, 0, &cwg)

	var pwg sync.WaitGroup
	var proxies []*testenv.Proxy
	var queued atomic.Int64
	for i := 0; i < producers; i++ {
		p := testenv.ProxyFor(t, zkAddr(t))
		proxies = append(proxies, p)
		c := connect(t, p.Addr())
		q := coord.NewQueue(c, root, shards)
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			// Every producer puts every key: 4 contenders per key, plus
			// retries after connection loss.
			n, err := produce(ctx, q, "cl", 0, keys)
			if err != nil {
				t.Errorf("producer %d: %v", i, err)
			}
			queued.Add(int64(n))
		}()
	}
	done := make(chan struct{})
	var cuts atomic.Int64
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(20+rand.IntN(60)) * time.Millisecond):
				proxies[rand.IntN(len(proxies))].CutAll()
				cuts.Add(1)
			}
		}
	}()
	pwg.Wait()
	close(done)
	// Let the consumer drain a while, then stop it and count once no claim
	// is left (a Take cancelled mid-claim releases in the background).
	time.Sleep(500 * time.Millisecond)
	stop()
	cwg.Wait()
	testenv.Eventually(t, 10*time.Second, "no claims", func() bool { _, n := queueLeft(t, admin, root, shards); return n == 0 })
	left, claims := queueLeft(t, admin, root, shards)
	_, completedKeys, completions := l.counts()
	processed, _, _ := l.counts()
	t.Logf("%d cuts; Put reported %d new; %d left + %d consumed (%d processed, %d claims left)",
		cuts.Load(), queued.Load(), left, completions, processed, claims)
	if completions != completedKeys {
		t.Errorf("some key completed twice: %d completions of %d keys", completions, completedKeys)
	}
	if left+completions != keys {
		t.Errorf("queue %d + consumed %d = %d, want %d distinct keys", left, completions, left+completions, keys)
	}
	if queued.Load() > keys {
		t.Errorf("Put reported %d new items for %d keys", queued.Load(), keys)
	}
}

// Claim, Retry, Fail, Requeue, Release and Stats on one item; fencing after
// expiry.
func TestClaimLifecycle(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	ctx := testenv.Context(t, 60*time.Second)
	p, c := proxied(t, zkAddr(t), coord.Config{Owner: "test"})
	q := newQueue(t, c, root, 2)
	other := connectWith(t, zkAddr(t), coord.Config{Owner: "other"})
	oq := coord.NewQueue(other, root, 2)
	sess, _ := c.Session(ctx)
	osess, _ := other.Session(ctx)

	if ok, err := q.Put(ctx, 1, "abcd", []byte("v1")); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	names, ev, err := q.Items(ctx, 1)
	if err != nil || len(names) != 1 {
		t.Fatalf("Items = %v, %v", names, err)
	}
	name := names[0]
	cl, err := q.Claim(ctx, sess, 1, name)
	if err != nil {
		t.Fatal(err)
	}
	if string(cl.Data()) != "v1" || cl.Shard() != 1 || cl.Name() != name {
		t.Fatalf("claim = %q %d %s", cl.Data(), cl.Shard(), cl.Name())
	}
	if _, err := oq.Claim(ctx, osess, 1, name); !errors.Is(err, coord.ErrClaimed) {
		t.Fatalf("second claim: %v, want ErrClaimed", err)
	}
	if _, err := q.Claim(ctx, sess, 1, name); !errors.Is(err, coord.ErrClaimed) {
		t.Fatalf("same-process second claim: %v, want ErrClaimed", err)
	}
	st, err := q.Pending(ctx)
	if err != nil || st.Queued != 1 || st.Claimed != 1 {
		t.Fatalf("Pending = %+v, %v", st, err)
	}
	cls, err := q.Claims(ctx)
	if err != nil || len(cls) != 1 || cls[0].Shard != 1 || cls[0].Owner != "test" || cls[0].Session != sess.ID() {
		t.Fatalf("Claims = %+v, %v", cls, err)
	}
	if err := cl.Reschedule(ctx, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := cl.Complete(ctx); !errors.Is(err, coord.ErrClaimLost) {
		t.Fatalf("Complete after Reschedule: %v", err)
	}
	cl2, err := oq.Take(ctx, osess, 1, func(n string, d []byte, _ *atomic.Value) (func(), bool) { return nil, string(d) == "v2" })
	if err != nil || cl2.Name() != name {
		t.Fatalf("Take after Reschedule = %v, %v", cl2, err)
	}
	if _, err := cl2.Fail(ctx, []byte("dead"), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ev:
	case <-time.After(5 * time.Second):
		t.Fatal("Items watch did not fire")
	}
	failed, err := q.Failed(ctx)
	if err != nil || len(failed) != 1 || failed[0] != "s001-"+name {
		t.Fatalf("Failed = %v, %v", failed, err)
	}
	if d, err := q.FailedData(ctx, failed[0]); err != nil || string(d) != "dead" {
		t.Fatalf("FailedData = %q, %v", d, err)
	}
	newName, err := q.Requeue(ctx, failed[0], []byte("v3"))
	if err != nil || newName == "" {
		t.Fatalf("Requeue = %q, %v", newName, err)
	}
	if _, err := q.Requeue(ctx, failed[0], nil); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("second Requeue: %v", err)
	}
	cl3, err := q.Claim(ctx, sess, 1, newName)
	if err != nil || string(cl3.Data()) != "v3" {
		t.Fatalf("Claim requeued = %v, %v", cl3, err)
	}
	if err := cl3.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cl4, err := q.Claim(ctx, sess, 1, newName)
	if err != nil {
		t.Fatal(err)
	}

	// Fencing: the claiming session expires; Complete changes nothing.
	if err := testenv.ExpireSession(ctx, p, testSessionTimeout); err != nil {
		t.Fatal(err)
	}
	<-sess.Ctx().Done()
	if err := cl4.Complete(ctx); !errors.Is(err, coord.ErrClaimLost) {
		t.Fatalf("Complete after expiry: %v, want ErrClaimLost", err)
	}
	if _, err := q.Get(ctx, 1, newName); err != nil {
		t.Fatalf("item lost after fenced Complete: %v", err)
	}
	sess2, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl5, err := q.Claim(ctx, sess2, 1, newName)
	if err != nil {
		t.Fatalf("reclaim with new session: %v", err)
	}
	if err := cl5.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, sess2, 1, newName); !errors.Is(err, coord.ErrGone) {
		t.Fatalf("claim of completed item: %v, want ErrGone", err)
	}
	st, err = q.Pending(ctx)
	if err != nil || st.Queued != 0 || st.Claimed != 0 || st.Failed != 0 {
		t.Fatalf("final Pending = %+v, %v", st, err)
	}
	if _, err := q.Put(ctx, 0, "XYZ", nil); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := q.Put(ctx, 2, "abcd", nil); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("bad shard: %v", err)
	}
}

// A claim issued while partitioned is sent by go-zookeeper only after the
// partition heals, by which time the session has expired and the client
// runs a NEW session. The session fence makes it fail instead of creating
// a claim owned by the new session.
func TestClaimQueuedAcrossExpiryIsFenced(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	ctx := testenv.Context(t, 60*time.Second)
	p, c := proxied(t, zkAddr(t), coord.Config{})
	q := newQueue(t, c, root, 1)
	sess, _ := c.Session(ctx)
	if _, err := q.Put(ctx, 0, "aa01", []byte("x")); err != nil {
		t.Fatal(err)
	}
	names, _, _ := q.Items(ctx, 0)
	cl, err := q.Claim(ctx, sess, 0, names[0]) // establishes the session fence
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	res := make(chan error, 1)
	go func() {
		_, err := q.Claim(ctx, sess, 0, names[0])
		res <- err
	}()
	time.Sleep(2*testSessionTimeout + 500*time.Millisecond)
	p.Heal()
	select {
	case err := <-res:
		if !errors.Is(err, coord.ErrSessionExpired) {
			t.Fatalf("claim across expiry: %v, want ErrSessionExpired", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("claim did not return")
	}
	admin := connect(t, zkAddr(t))
	time.Sleep(200 * time.Millisecond)
	if kids, err := coord.NewQueue(admin, root, 1).Claims(ctx, 0); err != nil || len(kids) != 0 {
		t.Fatalf("claims after fenced claim: %v, %v", kids, err)
	}
	st, _ := c.Session(ctx)
	cl2, err := q.Claim(ctx, st, 0, names[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := cl2.Complete(ctx); err != nil {
		t.Fatal(err)
	}
}

// Take blocks on an empty shard until a Put wakes it through the child
// watch, and skips items it rejects until the recheck interval.
func TestTakeWaitsForPut(t *testing.T) {
	t.Parallel()
	ctx, q, sess := takeShard(t, 30*time.Second, 200*time.Millisecond)
	got := make(chan *coord.Claim, 1)
	go func() {
		cl, err := q.Take(ctx, sess, 0, nil)
		if err != nil {
			t.Error(err)
		}
		got <- cl
	}()
	time.Sleep(200 * time.Millisecond)
	if _, err := q.Put(ctx, 0, "beef", []byte("late")); err != nil {
		t.Fatal(err)
	}
	select {
	case cl := <-got:
		if string(cl.Data()) != "late" {
			t.Fatalf("took %q", cl.Data())
		}
		if err := cl.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Take not woken by Put")
	}
	// FIFO, with a rejected head item taken after the recheck.
	for i, k := range []string{"c001", "c002", "c003"} {
		if _, err := q.Put(ctx, 0, k, []byte(k)); err != nil {
			t.Fatal(err, i)
		}
	}
	var order []string
	var rejectOnce atomic.Bool
	for len(order) < 3 {
		cl, err := q.Take(ctx, sess, 0, func(_ string, d []byte, _ *atomic.Value) (func(), bool) {
			return nil, string(d) != "c001" || rejectOnce.Swap(true)
		})
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, string(cl.Data()))
		if err := cl.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(order) != "[c002 c003 c001]" {
		t.Fatalf("order = %v", order)
	}
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := q.Take(tctx, sess, 0, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take on empty shard: %v", err)
	}
}

// Queue.Pending's Stamp is the same in two reads with nothing changed in
// between, and differs once an item came and went, though every count is
// back where it was (the child versions moved).
func TestPendingStampSeesAnItemThatCameAndWent(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	ctx := testenv.Context(t, 30*time.Second)
	c := connect(t, zkAddr(t))
	q := newQueue(t, c, root, 2)
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, err := q.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := q.Pending(ctx)
	if err != nil || again.Stamp != before.Stamp {
		t.Fatalf("two reads of an unchanged queue: stamps %x and %x (%v)", before.Stamp, again.Stamp, err)
	}
	if ok, err := q.Put(ctx, 1, "abcd", []byte("v1")); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	cl, err := q.Take(ctx, sess, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := q.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Queued != before.Queued || after.Claimed != before.Claimed {
		t.Fatalf("counts after the item went: %+v, before %+v", after, before)
	}
	if after.Stamp == before.Stamp {
		t.Errorf("the same stamp %x after an item was queued, claimed and completed", after.Stamp)
	}
}

// Concurrent takers of one shard, one Client, with a filter that reserves
// something per admission (as the crawler's per-key slots): every item is
// claimed once, and every admission that did not become a claim (two
// takers judged the same item; one lost the in-process reservation or the
// claim) is given back, so none leaks.
func TestTakeGivesBackAdmissionsNotClaimed(t *testing.T) {
	t.Parallel()
	ctx, q, sess := takeShard(t, 60*time.Second, 20*time.Millisecond)
	const items, takers = 200, 16
	for i := range items {
		if _, err := q.Put(ctx, 0, fmt.Sprintf("a%03d", i), fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var held atomic.Int64 // admissions not given back
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			for {
				mu.Lock()
				done := len(seen) == items
				mu.Unlock()
				if done {
					return
				}
				var release func()
				tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				cl, err := q.Take(tctx, sess, 0, func(string, []byte, *atomic.Value) (func(), bool) {
					held.Add(1)
					release = func() { held.Add(-1) }
					return release, true
				})
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[string(cl.Data())]++
				mu.Unlock()
				if err := cl.Complete(ctx); err != nil {
					t.Error(err)
				}
				release()
			}
		})
	}
	wg.Wait()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("item %s claimed %d times", k, n)
		}
	}
	if len(seen) != items {
		t.Errorf("%d of %d items claimed", len(seen), items)
	}
	if n := held.Load(); n != 0 {
		t.Errorf("%d admissions never given back", n)
	}
}

// A Take filter's note for an item holds what the filter stored at its
// last look, for as long as that version of the item waits; a rewritten
// item (Reschedule's new data) starts with an empty note.
func TestTakeKeepsNotePerVersion(t *testing.T) {
	t.Parallel()
	ctx, q, sess := takeShard(t, 30*time.Second, 50*time.Millisecond)
	if _, err := q.Put(ctx, 0, "ab01", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	// look returns a filter that records the note each look finds, stores
	// the data it judged, and admits from the admitAt-th look on.
	look := func(seen *[]any, admitAt int) func(string, []byte, *atomic.Value) (func(), bool) {
		return func(_ string, d []byte, note *atomic.Value) (func(), bool) {
			*seen = append(*seen, note.Load())
			note.Store("noted " + string(d))
			return nil, len(*seen) >= admitAt
		}
	}
	var first []any
	cl, err := q.Take(ctx, sess, 0, look(&first, 3))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(first) != "[<nil> noted v1 noted v1]" {
		t.Fatalf("notes seen on the first version: %v", first)
	}
	if err := cl.Reschedule(ctx, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	var second []any
	cl, err = q.Take(ctx, sess, 0, look(&second, 2))
	if err != nil {
		t.Fatal(err)
	}
	if string(cl.Data()) != "v2" || fmt.Sprint(second) != "[<nil> noted v2]" {
		t.Fatalf("took %q; notes seen on the rewritten item: %v", cl.Data(), second)
	}
	if err := cl.Complete(ctx); err != nil {
		t.Fatal(err)
	}
}

// An item the filter turned down stays parked: a child event (another
// item queued) does not make Take judge it again, a Nudge naming it does
// at once (without judging the other parked items), and a Nudge without
// names judges them all.
func TestTakeParksTurnedDownItems(t *testing.T) {
	t.Parallel()
	ctx, q, sess := takeShard(t, 30*time.Second, time.Minute) // no recheck in this test
	var mu sync.Mutex
	judged := map[string]int{} // data -> filter calls
	names := map[string]string{}
	var allowA atomic.Bool
	filter := func(name string, d []byte, _ *atomic.Value) (func(), bool) {
		mu.Lock()
		defer mu.Unlock()
		judged[string(d)]++
		names[string(d)] = name
		return nil, string(d) == "b" || (string(d) == "a" && allowA.Load())
	}
	count := func(d string) int {
		mu.Lock()
		defer mu.Unlock()
		return judged[d]
	}
	for _, k := range []string{"a", "b"} {
		if _, err := q.Put(ctx, 0, "aa0"+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := q.Take(ctx, sess, 0, filter)
	if err != nil || string(cl.Data()) != "b" {
		t.Fatalf("first Take: %v, %v; want b (a turned down)", cl, err)
	}
	if err := cl.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan *coord.Claim, 1)
	go func() {
		cl, err := q.Take(ctx, sess, 0, filter)
		if err != nil {
			t.Error(err)
		}
		got <- cl
	}()
	if _, err := q.Put(ctx, 0, "aa0c", []byte("c")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count("c") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if count("c") != 1 || count("a") != 1 {
		t.Fatalf("after a child event: a judged %d times, c %d; want 1 and 1 (a parked)", count("a"), count("c"))
	}
	allowA.Store(true)
	mu.Lock()
	aName := names["a"]
	mu.Unlock()
	q.Nudge(0, aName)
	select {
	case cl := <-got:
		if cl == nil || string(cl.Data()) != "a" {
			t.Fatalf("took %v after a Nudge naming a", cl)
		}
		if err := cl.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Nudge naming a parked item did not wake Take")
	}
	if count("c") != 1 {
		t.Errorf("a Nudge naming a judged c again (%d calls)", count("c"))
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	go q.Take(tctx, sess, 0, filter) //nolint:errcheck // ends with tctx; c is never admitted
	time.Sleep(100 * time.Millisecond)
	q.Nudge(0)
	deadline = time.Now().Add(time.Second)
	for count("c") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if count("c") < 2 {
		t.Errorf("a Nudge without names did not judge the parked c again")
	}
}

// A shard that keeps changing (a child event more often than the recheck
// interval) still judges a parked item again once it has been parked for
// the recheck interval: its turn-down may have ended without a Nudge (a
// retry time that came).
func TestTakeRechecksParkedItemsOfABusyShard(t *testing.T) {
	t.Parallel()
	ctx, q, sess := takeShard(t, 30*time.Second, 200*time.Millisecond)
	if _, err := q.Put(ctx, 0, "ab0a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	parkedAt := time.Now()
	var judgedA atomic.Int32
	filter := func(_ string, d []byte, _ *atomic.Value) (func(), bool) {
		if string(d) != "a" {
			return nil, false // the busy shard's other items wait
		}
		return nil, judgedA.Add(1) > 1 // a: turned down (parked) at the first look
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a child event every 20 ms: the recheck timer never runs out
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := q.Put(ctx, 0, fmt.Sprintf("ac%04x", i), []byte("other")); err != nil && ctx.Err() == nil {
				t.Error(err)
				return
			}
		}
	}()
	cl, err := q.Take(ctx, sess, 0, filter)
	if err != nil {
		t.Fatal(err)
	}
	if string(cl.Data()) != "a" {
		t.Fatalf("took %q", cl.Data())
	}
	if took := time.Since(parkedAt); took > 3*time.Second {
		t.Errorf("a parked item of a busy shard was judged again after %v, want about the recheck (200ms)", took)
	}
}
