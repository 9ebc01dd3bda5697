package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		in     string
		hosts  []string
		chroot string
		bad    bool
	}{
		{in: "127.0.0.1:2181", hosts: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2/crawl/x", hosts: []string{"a:1", "b:2"}, chroot: "/crawl/x"},
		{in: "a:1/", hosts: []string{"a:1"}},
		{in: "", bad: true},
		{in: "a", bad: true},
		{in: "a:1/x/", bad: true},
		{in: "a:1//x", bad: true},
	} {
		hosts, chroot, err := parseServers(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("parseServers(%q) err = %v, want ErrInvalidArgument", tc.in, err)
			}
			continue
		}
		if err != nil || strings.Join(hosts, ",") != strings.Join(tc.hosts, ",") || chroot != tc.chroot {
			t.Errorf("parseServers(%q) = %v, %q, %v; want %v, %q", tc.in, hosts, chroot, err, tc.hosts, tc.chroot)
		}
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"ab", "00ff", strings.Repeat("a", 128)} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v", k, err)
		}
	}
	for _, k := range []string{"", "a", "AB", "0g", "ab/c", strings.Repeat("a", 129)} {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidArgument", k, err)
		}
	}
}

func TestShardNameAndSort(t *testing.T) {
	if got := ShardName(7); got != "s007" {
		t.Errorf("ShardName(7) = %q", got)
	}
	if got := ShardName(1234); got != "s1234" {
		t.Errorf("ShardName(1234) = %q", got)
	}
	names := []string{"u-0000000010", "u-0000000002", "u-0000000100", "u-0000000001"}
	sortFIFO(names)
	if strings.Join(names, ",") != "u-0000000001,u-0000000002,u-0000000010,u-0000000100" {
		t.Errorf("sortFIFO = %v", names)
	}
}

func TestRetry(t *testing.T) {
	p := retryPolicy{attempts: 4, initial: 10 * time.Millisecond, max: 40 * time.Millisecond}
	for n := 1; n <= 6; n++ {
		d := p.backoff(n)
		full := min(10*time.Millisecond<<(n-1), 40*time.Millisecond)
		if d < full/2 || d > full {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", n, d, full/2, full)
		}
	}
	ctx := context.Background()

	calls := 0
	err := retryWith(ctx, p, func(context.Context) error { calls++; return zk.ErrConnectionClosed })
	if !errors.Is(err, zk.ErrConnectionClosed) || calls != 4 {
		t.Errorf("connection loss: err=%v calls=%d, want wrapped ErrConnectionClosed after 4 calls", err, calls)
	}

	calls = 0
	err = retryWith(ctx, p, func(context.Context) error {
		calls++
		if calls < 3 {
			return zk.ErrNoServer
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("recovering: err=%v calls=%d", err, calls)
	}

	calls = 0
	err = retryWith(ctx, p, func(context.Context) error { calls++; return zk.ErrSessionExpired })
	if !errors.Is(err, ErrSessionExpired) || calls != 1 {
		t.Errorf("expiry: err=%v calls=%d, want ErrSessionExpired after 1 call", err, calls)
	}

	calls = 0
	err = retryWith(ctx, p, func(context.Context) error { calls++; return zk.ErrNodeExists })
	if !errors.Is(err, zk.ErrNodeExists) || calls != 1 {
		t.Errorf("non-retryable: err=%v calls=%d", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = retryWith(cctx, retryPolicy{attempts: 100, initial: time.Second, max: time.Second}, func(context.Context) error {
		calls++
		cancel()
		return zk.ErrConnectionClosed
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled: err=%v calls=%d", err, calls)
	}

	start := time.Now()
	err = retryWith(ctx, retryPolicy{attempts: 1000, initial: 5 * time.Millisecond, max: 5 * time.Millisecond, total: 50 * time.Millisecond},
		func(context.Context) error { return zk.ErrConnectionClosed })
	if err == nil || time.Since(start) > time.Second {
		t.Errorf("total bound: err=%v after %v", err, time.Since(start))
	}
}

func TestOwnersPartition(t *testing.T) {
	const shards = 64
	for n := 1; n <= 13; n++ {
		var members []string
		for i := 0; i < n; i++ {
			members = append(members, fmt.Sprintf("worker-%d", i))
		}
		seen := make(map[int]string)
		least, most := shards, 0
		for _, m := range members {
			var owned []int
			for s, o := range Owners(shards, members) {
				if o == m {
					owned = append(owned, s)
				}
			}
			least, most = min(least, len(owned)), max(most, len(owned))
			for _, s := range owned {
				if prev, dup := seen[s]; dup {
					t.Fatalf("n=%d: shard %d owned by %s and %s", n, s, prev, m)
				}
				seen[s] = m
			}
		}
		if len(seen) != shards {
			t.Fatalf("n=%d: %d of %d shards owned", n, len(seen), shards)
		}
		if most-least > 1 {
			t.Errorf("n=%d: members own %d to %d shards, want at most one apart", n, least, most)
		}
		if n > 1 {
			// Bounded loads: removing a member moves its shards and only a
			// few others (a cascade where a capacity is reached).
			fewer, moved := owners(shards, members[:n-1]), 0
			for s, m := range seen {
				if m != members[n-1] && fewer[s] != m {
					moved++
				}
			}
			if moved > 3*shards/n+2 {
				t.Errorf("n=%d: removing one member moved %d shards of the others", n, moved)
			}
		}
	}
	if got := Owners(8, nil); got != nil {
		t.Errorf("Owners with no members = %v", got)
	}
}

// combine sends an existence check that an earlier request of the batch
// sent once, unless an op between them changed its znode, and tells each
// request where its ops are.
func TestCombineSendsASharedCheckOnce(t *testing.T) {
	fence := &zk.CheckVersionRequest{Path: "/r/sessions/s", Version: -1}
	req := func(ops ...any) *commitReq { return &commitReq{ops: ops} }
	a := &zk.CreateRequest{Path: "/r/a"}
	b := &zk.CreateRequest{Path: "/r/b"}
	ver := &zk.CheckVersionRequest{Path: "/r/a", Version: 3}
	del := &zk.DeleteRequest{Path: "/r/sessions/s", Version: -1}
	ops, at, first := combine([]*commitReq{
		req(fence, a),
		req(fence, ver, b), // fence shared; a version check is always sent
		req(del),           // changes the fenced znode
		req(fence),         // so it is checked again
	})
	want := []any{fence, a, ver, b, del, fence}
	if len(ops) != len(want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	for i := range want {
		if ops[i] != want[i] {
			t.Errorf("op %d: %v, want %v", i, ops[i], want[i])
		}
	}
	wantAt := [][]int{{0, 1}, {0, 2, 3}, {4}, {5}}
	wantFirst := []int{0, 2, 4, 5}
	for k := range wantAt {
		if !slices.Equal(at[k], wantAt[k]) || first[k] != wantFirst[k] {
			t.Errorf("request %d: at %v first %d, want %v %d", k, at[k], first[k], wantAt[k], wantFirst[k])
		}
	}
}

// ShardName's fast path matches the "s%03d" form it stands for.
func TestShardNameForm(t *testing.T) {
	for _, i := range []int{0, 7, 42, 100, 999, 1000, 12345} {
		if got, want := ShardName(i), fmt.Sprintf("s%03d", i); got != want {
			t.Errorf("ShardName(%d) = %q, want %q", i, got, want)
		}
	}
}
