package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// gate holds the committer goroutine inside its next combined multi (the
// observer runs on that goroutine, after the reply) until released, so that
// a test can line up the requests of the following combined multi.
type gate struct {
	armed   atomic.Bool
	hold    chan struct{}
	mu      sync.Mutex
	results []error // outcome of every combined multi, in order
}

func (g *gate) observe(op string, _ time.Duration, err error) {
	if op != "multi" {
		return
	}
	g.mu.Lock()
	g.results = append(g.results, err)
	g.mu.Unlock()
	if g.armed.CompareAndSwap(true, false) {
		<-g.hold
	}
}

func (g *gate) outcomes() []error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]error(nil), g.results...)
}

// gcClient connects to addr with a gate observer and creates root.
func gcClient(t *testing.T, addr, root string) (*Client, *gate) {
	t.Helper()
	g := &gate{hold: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, addr, Config{SessionTimeout: 2 * time.Second, Observer: g.observe,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.ensurePath(ctx, root); err != nil {
		t.Fatal(err)
	}
	return c, g
}

// queued returns the number of requests waiting in c's committer.
func queued(c *Client) int {
	b := c.committer()
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// waitFor polls cond every 5ms for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type multiResult struct {
	res []zk.MultiResponse
	idx int
	err error
}

// holdAndQueue sends a create of root/gate, holds the committer in it, and
// starts the requests one after another so that they queue in order; it
// returns a function that releases the gate and waits for their results.
func holdAndQueue(t *testing.T, c *Client, g *gate, root string, reqs ...[]any) func() []multiResult {
	t.Helper()
	g.armed.Store(true)
	gateDone := make(chan error, 1)
	go func() {
		_, _, err := c.multi(context.Background(), nil, fence(root), &zk.CreateRequest{Path: root + "/gate", Acl: openACL})
		gateDone <- err
	}()
	waitFor(t, "gate multi in flight", func() bool { return !g.armed.Load() })
	out := make([]multiResult, len(reqs))
	var wg sync.WaitGroup
	for i, ops := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, idx, err := c.multi(context.Background(), nil, ops...)
			out[i] = multiResult{res, idx, err}
		}()
		waitFor(t, fmt.Sprintf("request %d queued", i), func() bool { return queued(c) == i+1 })
	}
	return func() []multiResult {
		close(g.hold)
		if err := <-gateDone; err != nil {
			t.Fatalf("gate multi: %v", err)
		}
		wg.Wait()
		return out
	}
}

// fence returns a check of root, standing for the session-marker check
// that starts coord's fenced multis (only those are grouped).
func fence(root string) *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: root, Version: -1}
}

func mustExist(t *testing.T, c *Client, want bool, paths ...string) {
	t.Helper()
	for _, p := range paths {
		ok, _, err := c.exists(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Errorf("znode %s exists=%v, want %v", p, ok, want)
		}
	}
}

// TestGroupCommit runs the group-commit tests against one real ZooKeeper.
func TestGroupCommit(t *testing.T) {
	addr := testenv.ZooKeeper(t).Addr()

	t.Run("Concurrent", func(t *testing.T) {
		root := "/gc/concurrent"
		c, _ := gcClient(t, addr, root)
		m0, r0 := c.CommitStats()
		const n = 200
		start := make(chan struct{})
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			go func() {
				<-start
				p := fmt.Sprintf("%s/n-%03d", root, i)
				res, idx, err := c.multi(context.Background(), nil, fence(root),
					&zk.CreateRequest{Path: p, Data: []byte(p), Acl: openACL},
					&zk.DeleteRequest{Path: p, Version: 0})
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: op %d: %w", p, idx, err)
				case len(res) != 3 || res[1].String != p || idx != -1:
					errs <- fmt.Errorf("%s: got idx %d, responses %+v", p, idx, res)
				default:
					errs <- nil
				}
			}()
		}
		close(start)
		for i := 0; i < n; i++ {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		m1, r1 := c.CommitStats()
		multis, reqs := m1-m0, r1-r0
		t.Logf("%d multis carried %d requests (%.1f per transaction)", multis, reqs, float64(reqs)/float64(multis))
		if reqs != n {
			t.Errorf("requests sent = %d, want %d", reqs, n)
		}
		if multis > n/4 {
			t.Errorf("%d combined multis for %d concurrent requests: want at most %d", multis, n, n/4)
		}
	})

	t.Run("OneRequestFails", func(t *testing.T) {
		root := "/gc/fail"
		c, g := gcClient(t, addr, root)
		for _, n := range []string{"existing", "victim"} {
			if _, err := c.create(context.Background(), root+"/"+n, nil, 0, nil); err != nil {
				t.Fatal(err)
			}
		}
		create := func(name string) *zk.CreateRequest {
			return &zk.CreateRequest{Path: root + "/" + name, Acl: openACL}
		}
		check := func(name string) *zk.CheckVersionRequest {
			return &zk.CheckVersionRequest{Path: root + "/" + name, Version: -1}
		}
		results := holdAndQueue(t, c, g, root,
			[]any{fence(root), create("q0")},
			[]any{fence(root), create("q1"), create("existing")}, // fails on its own
			[]any{fence(root), &zk.DeleteRequest{Path: root + "/victim", Version: -1}},
			[]any{fence(root), check("victim"), create("q3")}, // fails in the batch because of q2
			[]any{fence(root), create("q4")},
			[]any{fence(root), check("q0")}, // passes in the batch because of q0
		)()
		want := []struct {
			idx int
			err error
			n   int
		}{{-1, nil, 2}, {2, zk.ErrNodeExists, 0}, {-1, nil, 2}, {1, zk.ErrNoNode, 0}, {-1, nil, 2}, {-1, nil, 2}}
		for i, r := range results {
			if r.idx != want[i].idx || !errors.Is(r.err, want[i].err) || (r.err == nil) != (want[i].err == nil) || len(r.res) != want[i].n {
				t.Errorf("request q%d: got (%v, %d, %v), want %d responses, idx %d, error %v", i, r.res, r.idx, r.err, want[i].n, want[i].idx, want[i].err)
			}
		}
		mustExist(t, c, true, root+"/q0", root+"/q4")
		mustExist(t, c, false, root+"/q1", root+"/q3", root+"/victim")
		// gate; q0-q5 (fails in q1: independent, reported); q0,q2-q5 (fails
		// in q3, which depends on q2); q0,q2 alone; q3-q5 (fails in q3, now
		// first: reported); q4,q5.
		got := g.outcomes()
		wantMultis := []error{nil, zk.ErrNodeExists, zk.ErrNoNode, nil, zk.ErrNoNode, nil}
		if len(got) != len(wantMultis) {
			t.Fatalf("combined multis: %v, want %v", got, wantMultis)
		}
		for i := range wantMultis {
			if !errors.Is(got[i], wantMultis[i]) || (got[i] == nil) != (wantMultis[i] == nil) {
				t.Errorf("combined multi %d: %v, want %v", i, got[i], wantMultis[i])
			}
		}
	})

	t.Run("SharedCheckGone", func(t *testing.T) {
		// Three requests behind one existence check, sent once: it fails,
		// so each is told in turn (the one that sent it, then the others
		// in their own combined multi), and nothing is created.
		root := "/gc/sharedgone"
		c, g := gcClient(t, addr, root)
		gone := &zk.CheckVersionRequest{Path: root + "/marker", Version: -1}
		create := func(name string) *zk.CreateRequest {
			return &zk.CreateRequest{Path: root + "/" + name, Acl: openACL}
		}
		results := holdAndQueue(t, c, g, root,
			[]any{gone, create("x0")},
			[]any{gone, create("x1")},
			[]any{gone, create("x2")},
		)()
		for i, r := range results {
			if r.idx != 0 || !errors.Is(r.err, zk.ErrNoNode) {
				t.Errorf("request x%d: (%v, %d, %v), want idx 0, %v", i, r.res, r.idx, r.err, zk.ErrNoNode)
			}
		}
		mustExist(t, c, false, root+"/x0", root+"/x1", root+"/x2")
		if got := g.outcomes(); len(got) != 4 {
			t.Errorf("combined multis %v: want the gate and 3 failed", got)
		}
	})

	t.Run("CancelledBeforeSend", func(t *testing.T) {
		root := "/gc/cancel"
		c, g := gcClient(t, addr, root)
		// Already cancelled: orphan gets ctx.Err() at once.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		orphaned := make(chan error, 2)
		orphan := func(res []zk.MultiResponse, err error) {
			if res != nil {
				err = fmt.Errorf("orphan got responses %v with %w", res, err)
			}
			orphaned <- err
		}
		_, idx, err := c.multi(ctx, orphan, fence(root), &zk.CreateRequest{Path: root + "/early", Acl: openACL})
		if !errors.Is(err, context.Canceled) || idx != -1 {
			t.Fatalf("multi with cancelled ctx: (%d, %v)", idx, err)
		}
		if err := <-orphaned; !errors.Is(err, context.Canceled) {
			t.Fatalf("orphan: %v, want %v", err, context.Canceled)
		}

		// Cancelled while queued behind a multi in flight; the one in flight
		// is cancelled too and its orphan gets the real outcome.
		g.armed.Store(true)
		flightCtx, cancelFlight := context.WithCancel(context.Background())
		flightOrphan := make(chan []zk.MultiResponse, 1)
		flightDone := make(chan error, 1)
		go func() {
			_, _, err := c.multi(flightCtx, func(res []zk.MultiResponse, err error) {
				if err != nil {
					t.Errorf("in-flight orphan: %v", err)
				}
				flightOrphan <- res
			}, fence(root), &zk.CreateRequest{Path: root + "/flight", Acl: openACL})
			flightDone <- err
		}()
		waitFor(t, "multi in flight", func() bool { return !g.armed.Load() })
		qctx, qcancel := context.WithCancel(context.Background())
		qDone := make(chan error, 1)
		go func() {
			_, _, err := c.multi(qctx, orphan, fence(root), &zk.CreateRequest{Path: root + "/queued", Acl: openACL})
			qDone <- err
		}()
		waitFor(t, "request queued", func() bool { return queued(c) == 1 })
		qcancel()
		cancelFlight()
		for _, ch := range []chan error{qDone, flightDone} {
			select {
			case err := <-ch:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled multi returned %v, want %v", err, context.Canceled)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("cancelled multi did not return while the committer was busy")
			}
		}
		m0, _ := c.CommitStats()
		close(g.hold)
		if err := <-orphaned; !errors.Is(err, context.Canceled) {
			t.Errorf("queued request's orphan: %v, want %v", err, context.Canceled)
		}
		if res := <-flightOrphan; len(res) != 2 || res[1].String != root+"/flight" {
			t.Errorf("in-flight orphan got %+v, want the create's response", res)
		}
		mustExist(t, c, false, root+"/early", root+"/queued")
		mustExist(t, c, true, root+"/flight")
		if m1, _ := c.CommitStats(); m1 != m0 {
			t.Errorf("%d multis sent for cancelled requests", m1-m0)
		}
	})

	t.Run("LargeRequestAlone", func(t *testing.T) {
		root := "/gc/large"
		c, g := gcClient(t, addr, root)
		big := bytes.Repeat([]byte("x"), maxCommitBytes+1)
		m0, r0 := c.CommitStats()
		results := holdAndQueue(t, c, g, root,
			[]any{fence(root), &zk.CreateRequest{Path: root + "/small0", Acl: openACL}},
			[]any{fence(root), &zk.CreateRequest{Path: root + "/big", Data: big, Acl: openACL}},
			[]any{fence(root), &zk.CreateRequest{Path: root + "/small1", Acl: openACL}},
		)()
		for i, r := range results {
			if r.err != nil {
				t.Errorf("request %d: %v", i, r.err)
			}
		}
		m1, r1 := c.CommitStats()
		if m1-m0 != 4 || r1-r0 != 4 {
			t.Errorf("gate + 3 requests went as %d multis carrying %d requests, want 4 and 4", m1-m0, r1-r0)
		}
		data, _, err := c.get(context.Background(), root+"/big")
		if err != nil || len(data) != len(big) {
			t.Errorf("big znode: %d bytes, %v", len(data), err)
		}
		mustExist(t, c, true, root+"/small0", root+"/small1")
	})

	t.Run("UnfencedAlone", func(t *testing.T) {
		root := "/gc/unfenced"
		c, g := gcClient(t, addr, root)
		if _, err := c.create(context.Background(), root+"/existing", nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		release := holdAndQueue(t, c, g, root)
		m0, r0 := c.CommitStats()
		// Sent at once, past the held committer, with its own failure index.
		_, idx, err := c.multi(context.Background(), nil,
			&zk.CreateRequest{Path: root + "/a", Acl: openACL}, &zk.CreateRequest{Path: root + "/existing", Acl: openACL})
		if idx != 1 || !errors.Is(err, zk.ErrNodeExists) {
			t.Errorf("unfenced failing multi: (%d, %v), want (1, %v)", idx, err, zk.ErrNodeExists)
		}
		res, idx, err := c.multi(context.Background(), nil, &zk.CreateRequest{Path: root + "/b", Acl: openACL})
		if err != nil || idx != -1 || len(res) != 1 {
			t.Errorf("unfenced multi: (%v, %d, %v), want success", res, idx, err)
		}
		if m1, r1 := c.CommitStats(); m1 != m0 || r1 != r0 {
			t.Errorf("unfenced multis went through group commit: %d multis, %d requests", m1-m0, r1-r0)
		}
		release()
		mustExist(t, c, true, root+"/b")
		mustExist(t, c, false, root+"/a")
	})

	t.Run("Closed", func(t *testing.T) {
		c, _ := gcClient(t, addr, "/gc/closed")
		c.Close()
		if _, idx, err := c.multi(context.Background(), nil, fence("/gc/closed"), &zk.CreateRequest{Path: "/gc/closed/x", Acl: openACL}); !errors.Is(err, ErrClosed) || idx != -1 {
			t.Errorf("multi after Close: (%d, %v), want (-1, ErrClosed)", idx, err)
		}
	})
}
