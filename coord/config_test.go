package coord_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func TestConfigReadWrite(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, 30*time.Second)
	c := connect(t, zkAddr(t))
	s := coord.Store(c, testRoot(t)+"/config")
	if _, _, err := s.Read(ctx); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("Read of missing: %v", err)
	}
	if _, err := s.Write(ctx, []byte("a"), 0); !errors.Is(err, coord.ErrVersionConflict) {
		t.Fatalf("CAS on missing: %v", err)
	}
	v, err := s.Write(ctx, []byte("a"), -1)
	if err != nil || v != 0 {
		t.Fatalf("create = %d, %v", v, err)
	}
	if v, err = s.Write(ctx, []byte("b"), 0); err != nil || v != 1 {
		t.Fatalf("CAS = %d, %v", v, err)
	}
	if _, err := s.Write(ctx, []byte("c"), 0); !errors.Is(err, coord.ErrVersionConflict) {
		t.Fatalf("stale CAS: %v", err)
	}
	if v, err = s.Write(ctx, []byte("d"), -1); err != nil || v != 2 {
		t.Fatalf("unconditional = %d, %v", v, err)
	}
	data, ver, err := s.Read(ctx)
	if err != nil || string(data) != "d" || ver != 2 {
		t.Fatalf("Read = %q %d %v", data, ver, err)
	}
	if _, err := s.Write(ctx, nil, -2); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("bad version: %v", err)
	}
}

// 1,000 rapid compare-and-set writes: every watcher ends on the last value,
// and sees versions only increase.
func TestConfigWatchRapidWrites(t *testing.T) {
	t.Parallel()
	const writes, watchers = 1000, 3
	ctx := testenv.Context(t, 60*time.Second)
	path := testRoot(t) + "/config"
	wc := connect(t, zkAddr(t))
	w := coord.Store(wc, path)
	ver, err := w.Write(ctx, []byte("0"), -1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	final := fmt.Sprint(writes)
	for i := 0; i < watchers; i++ {
		c := connect(t, zkAddr(t))
		ch := coord.Store(c, path).Watch(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int32(-2)
			n := 0
			for v := range ch {
				n++
				if v.Version <= last {
					t.Errorf("watcher %d: version %d after %d", i, v.Version, last)
				}
				last = v.Version
				if string(v.Data) == final {
					t.Logf("watcher %d: %d values delivered", i, n)
					return
				}
			}
			t.Errorf("watcher %d: channel closed before the last value (last version %d)", i, last)
		}()
	}
	for i := 1; i <= writes; i++ {
		if ver, err = w.Write(ctx, []byte(strconv.Itoa(i)), ver); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// A watcher whose session expired while partitioned gets the current value
// after rejoining (the writes happened during the partition).
func TestConfigWatchAcrossExpiry(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, 60*time.Second)
	path := testRoot(t) + "/config"
	w := coord.Store(connect(t, zkAddr(t)), path)
	if _, err := w.Write(ctx, []byte("before"), -1); err != nil {
		t.Fatal(err)
	}
	p, c := proxied(t, zkAddr(t), coord.Config{})
	ch := coord.Store(c, path).Watch(ctx)
	if v := <-ch; string(v.Data) != "before" {
		t.Fatalf("first value %q", v.Data)
	}
	sess, _ := c.Session(ctx)
	done := make(chan error, 1)
	go func() { done <- testenv.ExpireSession(ctx, p, testSessionTimeout) }()
	time.Sleep(500 * time.Millisecond)
	for i := 0; i < 5; i++ {
		if _, err := w.Write(ctx, []byte(fmt.Sprintf("during-%d", i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.After(15 * time.Second)
	for {
		select {
		case v := <-ch:
			if string(v.Data) == "during-4" {
				select {
				case <-sess.Ctx().Done():
				default:
					t.Fatal("session did not expire")
				}
				// And changes after the rejoin keep coming.
				if _, err := w.Write(ctx, []byte("after"), -1); err != nil {
					t.Fatal(err)
				}
				for v := range ch {
					if string(v.Data) == "after" {
						return
					}
				}
				t.Fatal("watch closed")
			}
		case <-deadline:
			t.Fatal("watcher never got the value written during the partition")
		}
	}
}

// Create makes the znode and its parents once; a second Create, from any
// client, finds it and changes nothing.
func TestConfigCreateOnce(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, 30*time.Second)
	c := connect(t, zkAddr(t))
	s := coord.Store(c, testRoot(t)+"/a/b/totals")
	if _, err := s.Create(ctx, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, []byte("second")); !errors.Is(err, coord.ErrVersionConflict) {
		t.Fatalf("second Create: %v, want ErrVersionConflict", err)
	}
	if data, v, err := s.Read(ctx); err != nil || string(data) != "first" || v != 0 {
		t.Fatalf("Read = %q, %d, %v", data, v, err)
	}
}

// Store opens a node by its elements; Children reads the children's data;
// Delete removes the node with everything below it and reports how many
// znodes went; an absent node is ErrNotFound for both; a bad element makes
// every call fail with ErrInvalidArgument.
func TestStoreChildrenDelete(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, 30*time.Second)
	c := connect(t, zkAddr(t))
	root := testRoot(t)
	for _, id := range []string{"a", "b"} {
		if _, err := coord.Store(c, root, coord.TotalsNode, id, "deep").Write(ctx, []byte(id), -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coord.Store(c, root, coord.TotalsNode, "a").Write(ctx, []byte("A"), -1); err != nil {
		t.Fatal(err)
	}
	totals := coord.Store(c, root, coord.TotalsNode)
	if got := totals.String(); got != root+"/totals" {
		t.Errorf("String = %q, want %q", got, root+"/totals")
	}
	kids, err := totals.Children(ctx)
	if err != nil || len(kids) != 2 || string(kids["a"]) != "A" || len(kids["b"]) != 0 {
		t.Fatalf("Children = %q, %v", kids, err)
	}
	var calls int64
	n, err := totals.Delete(ctx, func(deleted int64) { calls = deleted })
	if err != nil || n != 5 || calls != 5 {
		t.Fatalf("Delete = %d (progress %d), %v; want 5 znodes", n, calls, err)
	}
	if _, err := totals.Children(ctx); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("Children of a deleted node: %v, want ErrNotFound", err)
	}
	if _, err := totals.Delete(ctx, nil); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}
	if _, _, err := coord.Store(c, root, "a/b").Read(ctx); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("Store with a slash in an element: %v, want ErrInvalidArgument", err)
	}
	if _, err := coord.Store(c, "/").Delete(ctx, nil); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("Delete of the ZooKeeper root: %v, want ErrInvalidArgument", err)
	}
}
