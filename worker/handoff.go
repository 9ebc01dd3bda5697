package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// Shard handoff politeness. When this worker gains a shard
// from another one, awaitHandoff waits until the previous owner's claims are
// gone (they end with its session, so the wait lasts as long as that session
// does) and records the time (handoffs). The previous owner's last request
// to a politeness key of that shard ended before then, so this worker's
// first request to such a key waits one effective interval (the stricter of the rate and
// the Crawl-delay known so far) from that time: Politeness.Spend. The
// robots.txt fetch that may come first goes through politeness as well
// (robotsGate), and the Crawl-delay it reveals is set before its slot is freed, so the page
// fetch after it waits the Crawl-delay.

// handoffKeysRemembered bounds the politeness keys remembered as already
// spent after a handoff (an LRU: a forgotten key is at worst spent once
// more).
const handoffKeysRemembered = 100_000

// handoffState is what the worker remembers of shard handoffs.
type handoffState struct {
	gained *lru.Cache[int, time.Time]    // shard -> when it was handed over to us
	spent  *lru.Cache[string, time.Time] // politeness key -> the handoff its bucket was spent for
}

func newHandoffState() *handoffState {
	g, _ := lru.New[int, time.Time](1 << 16) // sizes > 0: cannot fail
	s, _ := lru.New[string, time.Time](handoffKeysRemembered)
	return &handoffState{gained: g, spent: s}
}

// handedOver records that shard was handed over to this worker at t.
func (h *handoffState) handedOver(shard int, t time.Time) { h.gained.Add(shard, t) }

// coolAfterHandoff spends the politeness bucket of the attempt's key as of
// the handoff of the item's shard, once per handoff, so the first request
// to the key after a handoff waits the effective interval from it. A cached
// robots.txt Crawl-delay is set first, so it counts.
func (a *attempt) coolAfterHandoff() { a.coolShard(a.claim.Shard()) }

// coolShard is coolAfterHandoff for the attempt's key in shard (a browser
// subrequest's, whose shard is not its page's).
func (a *attempt) coolShard(shard int) {
	w, cfg := a.w, a.live.cfg
	at, ok := w.handoffs.gained.Get(shard)
	if !ok {
		return
	}
	if prev, ok := w.handoffs.spent.Get(a.key); ok && prev.Equal(at) {
		return
	}
	if cfg.ObeyRobots {
		if d, origin, ok := w.robots.CachedCrawlDelay(a.it.URL, cfg.UserAgent); ok {
			w.polite.SetCrawlDelay(a.key, origin, d)
		}
	}
	w.polite.Spend(a.key, at)
	w.handoffs.spent.Add(a.key, at)
}

// robotsAllowed asks robots.txt about the item (Robots.Allowed) and sets
// its key's Crawl-delay. A robots.txt that is not cached is fetched through
// robotsGate, each request in a politeness slot of its host. Errors:
// Robots.Allowed's (ctx's while waiting for a slot among them).
func (a *attempt) robotsAllowed() (bool, error) {
	w, url, ua := a.w, a.it.URL, a.live.cfg.UserAgent
	ok, err := w.robots.Allowed(a.ctx, url, ua)
	if err == nil && ok {
		// Every origin's delay, none included: the key's is the largest
		// of its origins' (Politeness.SetCrawlDelay).
		d, origin := w.robots.CrawlDelay(a.ctx, url, ua)
		w.polite.SetCrawlDelay(a.key, origin, d)
	}
	return ok, err
}

// robotsGate is the worker's fetch.RobotsOptions.Gate: every robots.txt
// request (each redirect hop, and those made for the sitemaps of a seed)
// takes a politeness slot of target's host key (frontier.Layout.Key of the
// normalized target), like any page request, so no request to a host
// bypasses its rate, Crawl-delay or in-flight cap. release sets the
// Crawl-delay that robotsURL's now cached robots.txt gives its host key
// before freeing the slot, so the next request to the host waits it, and
// notes when the request reached the server (Politeness.Reached), from
// which strict politeness counts the interval.
// Errors: a target that does not normalize (no key: robots.txt counts as
// unreachable), or ctx's while waiting.
func (w *Worker) robotsGate(ctx context.Context, robotsURL, target string) (func(reached time.Time), error) {
	key := func(raw string) (string, error) {
		u, err := frontier.Normalize(raw)
		if err != nil {
			return "", err
		}
		if k := w.layout.Key(u); k != "" {
			return k, nil
		}
		return "", fmt.Errorf("no politeness key for %q", raw)
	}
	host, err := key(target)
	if err != nil {
		return nil, err
	}
	release, err := w.polite.Acquire(ctx, host)
	if err != nil {
		return nil, err
	}
	if err := w.checkHeard(); err != nil { // as fetchItem: the fetch is a request to the host
		release()
		return nil, err
	}
	return func(reached time.Time) {
		var ua string
		if live := w.current(); live != nil {
			ua = live.cfg.UserAgent
		}
		if d, origin, ok := w.robots.CachedCrawlDelay(robotsURL, ua); ok {
			if rk, err := key(robotsURL); err == nil {
				w.polite.SetCrawlDelay(rk, origin, d)
			}
		}
		w.polite.Reached(host, reached)
		release()
	}, nil
}

// handoffWarnEvery is how often awaitOthersClaims says it is still waiting,
// once the previous owner's claims have outlived two session timeouts
// (they should have ended with its session by then).
const handoffWarnEvery = 30 * time.Second

// awaitOthersClaims returns once no other worker holds a claim in shard. It
// has no deadline: a claim lives exactly as long as its owner's session, so
// this waits out the previous owner's in-flight fetches however long they
// take, or its session's expiry. pause sleeps between checks; a read error
// is retried the same way. Errors: ctx's.
func (w *Worker) awaitOthersClaims(ctx context.Context, shard int, pause func() error) error {
	started, warned := time.Now(), time.Time{}
	for {
		claims, err := w.front.Queue().Claims(ctx, shard)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && !slices.ContainsFunc(claims, func(c coord.ClaimInfo) bool { return c.Owner != w.opts.ID }) {
			return nil
		}
		if time.Since(started) > 2*w.opts.SessionTimeout && time.Since(warned) > handoffWarnEvery {
			w.log.Warn("gained shard: still waiting for the previous owner's claims to end (they end with its session)",
				"shard", coord.ShardName(shard), "waited", time.Since(started).Round(time.Second), "error", err)
			warned = time.Now()
		}
		if err := pause(); err != nil {
			return err
		}
	}
}
