package coord

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// watchLatest is the one loop behind ConfigStore.Watch and WatchMembers: it
// delivers read's value into out now and after every event of the watch
// read set, every reconnect and every session expiry (go-zookeeper then
// fires the watches as not watching), until ctx is done or the client
// closes; then out is closed. Delivery is latest-wins (offerLatest) and
// skips a value whose key equals the last delivered one's. armed is
// the watch that still stands (nil when none, or it fired): read then sets
// no second one (zkquirks.go, quirk 6). A failed read is tried again after
// the retry policy's backoff, or at once after a reconnect. what names the
// watched znode in debug logs.
func watchLatest[T any, K comparable](ctx context.Context, c *Client, what string, out chan T, read func(ctx context.Context, armed <-chan zk.Event) (T, <-chan zk.Event, error), key func(T) K) {
	defer close(out)
	var last K
	first := true
	var ev <-chan zk.Event // the armed watch
	for attempt := 1; ; {
		epoch := c.reconnected()
		armed := ev
		if armed != nil && fired(armed) {
			armed = nil
		}
		v, w, err := read(ctx, armed)
		var changed <-chan zk.Event // nil after a failed read: wait for the backoff
		var wake <-chan time.Time
		if err != nil {
			if ctx.Err() != nil || c.isClosed() {
				return
			}
			c.log.Debug("watch: read failed, retrying", "znode", what, "err", err)
			wake = time.After(retryPol.backoff(attempt))
			attempt++
		} else {
			attempt, ev, changed = 1, w, w
			if k := key(v); first || k != last {
				first, last = false, k
				offerLatest(out, v)
			}
		}
		select {
		case <-changed:
		case <-wake:
		case <-epoch:
		case <-ctx.Done():
			return
		case <-c.closedCh:
			return
		}
	}
}

// offerLatest puts v into a 1-slot channel, replacing an unread value. Only
// the single producer calls it, so after draining the send cannot block.
func offerLatest[T any](out chan T, v T) {
	for {
		select {
		case out <- v:
			return
		default:
		}
		select {
		case <-out:
		default:
		}
	}
}
