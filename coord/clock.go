package coord

import (
	"sync"
	"time"
)

// serverClock estimates the offset of ZooKeeper's clock from this
// process's, from the mtime the server stamps on every setData: the server
// took its time somewhere between the request's send and its reply, so
// offset = mtime - (send + reply)/2, within half the round trip. The
// sample with the smallest round trip of the last clockWindow wins (a slow
// reply says little), and a sample older than that is replaced by any new
// one, so a clock that is stepped later is followed within clockWindow.
//
// ZooKeeper stamps mtime with the leader's wall clock (ZooKeeper
// internals: DataTree.setData takes the transaction's time from the
// leader), so every worker that asks Client.Now compares retry times on one
// clock, whatever its own says: a worker clock an hour ahead cannot leave
// the items it retries unclaimable for an hour.
type serverClock struct {
	mu     sync.Mutex
	offset time.Duration // server - local
	rtt    time.Duration // round trip of the sample kept
	at     time.Time     // local time of the sample kept; zero before the first
	now    func() time.Time
}

// clockWindow is how long a sample is preferred to worse later ones.
const clockWindow = time.Minute

// sample records a setData whose request left at sent, whose reply came at
// got (local clock), and whose znode the server stamped mtimeMs (ms since
// the Unix epoch).
func (sc *serverClock) sample(sent, got time.Time, mtimeMs int64) {
	if mtimeMs <= 0 || got.Before(sent) {
		return
	}
	rtt := got.Sub(sent)
	mid := sent.Add(rtt / 2)
	off := time.UnixMilli(mtimeMs).Sub(mid)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.at.IsZero() || rtt <= sc.rtt || got.Sub(sc.at) > clockWindow {
		sc.offset, sc.rtt, sc.at = off, rtt, got
	}
}

// Now returns the current time on ZooKeeper's clock as this client last
// estimated it (see serverClock): the local clock plus the measured offset,
// within half a round trip plus a millisecond of mtime's resolution. Before
// the first setData of this client it is the local clock. Use it for times
// that other processes compare, such as a retry's not-before time (a
// worker's heartbeat is a setData every few seconds, so a worker's estimate
// is always fresh).
func (c *Client) Now() time.Time {
	sc := &c.clock
	sc.mu.Lock()
	now, offset := sc.now, sc.offset
	sc.mu.Unlock()
	if now == nil {
		now = time.Now
	}
	return now().Add(offset)
}

// local returns the client's local clock (time.Now unless a test skews it).
func (sc *serverClock) local() time.Time {
	sc.mu.Lock()
	now := sc.now
	sc.mu.Unlock()
	if now != nil {
		return now()
	}
	return time.Now()
}

// localOf converts a time ZooKeeper stamped (ms since the Unix epoch, e.g.
// a znode's mtime) to the local clock with the estimated offset; zero for
// a stamp <= 0.
func (sc *serverClock) localOf(serverMs int64) time.Time {
	if serverMs <= 0 {
		return time.Time{}
	}
	sc.mu.Lock()
	offset := sc.offset
	sc.mu.Unlock()
	return time.UnixMilli(serverMs).Add(-offset)
}
