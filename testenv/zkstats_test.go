package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestReadZKStatsAndWriteCeiling: the ceiling's multis each commit one
// transaction (the zxid advances by the multis, failed ones included) and
// leave no znode behind; ReadZKStats reads the zxid, the version and the
// data figures of a live server.
func TestReadZKStatsAndWriteCeiling(t *testing.T) {
	srv := ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := ReadZKStats(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if before.Version == "" || before.Znodes < 1 || before.DataBytes < 0 {
		t.Fatalf("ReadZKStats = %+v", before)
	}
	c, err := WriteCeiling(ctx, srv.Addr(), 2, 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if c.Multis == 0 || c.Errors != 0 || c.ZxidDelta != c.Multis+c.Errors || c.Elapsed < 300*time.Millisecond {
		t.Fatalf("WriteCeiling = %+v; want multis, no errors, one zxid per multi", c)
	}
	after, err := ReadZKStats(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if after.Znodes != before.Znodes || after.Zxid <= before.Zxid {
		t.Fatalf("after the ceiling: %+v, before %+v; want the same znodes and a later zxid", after, before)
	}
	conn, events, err := zk.Connect([]string{srv.Addr()}, 2*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := awaitSession(ctx, events, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := SessionTimeouts(ctx, srv.Addr())
	if err != nil || got[conn.SessionID()] != 2*time.Second {
		t.Fatalf("SessionTimeouts = %v, %v; want session %#x granted 2s", got, err, conn.SessionID())
	}
}

// awaitSession waits until events reports a session, up to timeout.
func awaitSession(ctx context.Context, events <-chan zk.Event, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev, open := <-events:
			if !open {
				return errors.New("connection closed")
			}
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("no session within %v", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
