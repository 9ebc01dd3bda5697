package coord_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// SessionTimeout reports what the server granted, not what was asked:
// testenv's ZooKeeper (tickTime 200 ms) clamps to [0.4 s, 4 s].
func TestSessionTimeoutGranted(t *testing.T) {
	t.Parallel()
	addr := zkAddr(t)
	for _, tc := range []struct{ asked, want time.Duration }{
		{10 * time.Second, 4 * time.Second},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
		{100 * time.Millisecond, 400 * time.Millisecond},
	} {
		c := connectWith(t, addr, coord.Config{SessionTimeout: tc.asked})
		if _, got := c.Lease(); got != tc.want {
			t.Errorf("asked %v: SessionTimeout() = %v, want %v (granted)", tc.asked, got, tc.want)
		}
	}
}

// Under a one-way partition (the client's packets dropped, the server's
// delivered) watch events keep arriving, but the server hears nothing and
// will expire the session: LastHeard must not move. Before, every watch
// event refreshed it, so a cut-off worker believed its session safe.
func TestLastHeardIgnoresWatchEvents(t *testing.T) {
	t.Parallel()
	addr := zkAddr(t)
	p, a := proxied(t, addr, coord.Config{SessionTimeout: 4 * time.Second})
	b := connect(t, addr)
	ctx := testenv.Context(t, 60*time.Second)
	const watched = 20
	roots := make([]string, watched)
	for i := range roots {
		roots[i] = testRoot(t)
		lists := coord.WatchMembers(ctx, a, roots[i])
		select { // the first list: the watch is armed
		case <-lists:
		case <-ctx.Done():
			t.Fatal("no member list")
		}
	}
	sb, err := b.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "a ping answered", func() bool { return time.Since(heardOf(a)) < time.Second })

	p.HalfOpen()
	halfOpen := time.Now()
	for i, root := range roots { // one watch event every 100 ms for 2 s
		time.Sleep(100 * time.Millisecond)
		if _, err := coord.Join(ctx, sb, root, fmt.Sprintf("m%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if last := heardOf(a); last.After(halfOpen) {
		t.Errorf("LastHeard moved to %v after the half-open partition began (%v ago): watch events counted as answers",
			last.Sub(halfOpen).Round(time.Millisecond), time.Since(last).Round(time.Millisecond))
	}
	t.Logf("last answered request sent %v before the partition", halfOpen.Sub(heardOf(a)).Round(time.Millisecond))
	p.Heal()
}

// heardOf is c.Lease()'s heard.
func heardOf(c *coord.Client) time.Time {
	heard, _ := c.Lease()
	return heard
}
