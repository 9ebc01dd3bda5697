package coord

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// A client whose clock runs an hour ahead still reads ZooKeeper's clock
// from Now once it has written anything (issue 10 item 6: retry times taken
// from a skewed clock left items unclaimable by the others).
func TestNowFollowsZooKeeperClock(t *testing.T) {
	srv := testenv.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, srv.Addr(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.clock.mu.Lock()
	c.clock.now = func() time.Time { return time.Now().Add(time.Hour) }
	c.clock.mu.Unlock()
	if d := c.Now().Sub(time.Now()); d < 59*time.Minute {
		t.Fatalf("before any write Now is %v from the true time; want the local clock (+1h)", d)
	}
	p := "/clock-test"
	if _, err := c.create(ctx, p, nil, zk.FlagPersistent, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.set(ctx, p, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if d := c.Now().Sub(time.Now()).Abs(); d > time.Second {
		t.Fatalf("Now is %v from ZooKeeper's (and this machine's true) clock after a write; want under 1 s", d)
	}
}

func TestServerClockKeepsBestSample(t *testing.T) {
	var sc serverClock
	t0 := time.UnixMilli(1_000_000)
	sc.sample(t0, t0.Add(100*time.Millisecond), t0.Add(time.Hour).UnixMilli())   // rtt 100 ms
	sc.sample(t0, t0.Add(10*time.Millisecond), t0.Add(2*time.Hour).UnixMilli())  // rtt 10 ms: better
	sc.sample(t0, t0.Add(500*time.Millisecond), t0.Add(3*time.Hour).UnixMilli()) // worse: ignored
	if got := sc.offset.Round(time.Minute); got != 2*time.Hour {
		t.Fatalf("offset %v; want the 10 ms sample's 2h", got)
	}
	later := t0.Add(2 * clockWindow)
	sc.sample(later, later.Add(500*time.Millisecond), later.Add(4*time.Hour).UnixMilli()) // old best expired
	if got := sc.offset.Round(time.Minute); got != 4*time.Hour {
		t.Fatalf("offset %v; want a stale sample replaced (4h)", got)
	}
}
