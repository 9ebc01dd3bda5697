package worker

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// counters are this worker's running totals, shown in its status node.
type counters struct {
	pages    atomic.Int64 // items finished (completed or dead-lettered)
	errors   atomic.Int64 // failed fetch attempts (network errors, 5xx, 429)
	bytes    atomic.Int64 // response body bytes stored
	inFlight atomic.Int64 // claimed items being processed (waiting for politeness, fetching, storing, completing)
	// idle fires when inFlight falls to 0 (releaseSlot): waitDone, pausing
	// between count reads, looks again when this worker has just finished
	// its last item (often the crawl's last page) and stays idle.
	idle        broadcast
	shardsOwned atomic.Int64
	cluster     atomic.Int64 // pages finished crawl-wide (refreshClusterPages)
	clusterMine atomic.Int64 // this worker's pages when cluster was last set
	// totalsRead and totalsPages: when R/totals was last summed and its
	// pages; used by refreshClusterPages, which runs in one goroutine at a
	// time (the session's heartbeat, or runSession before it starts one).
	totalsRead  time.Time
	totalsPages int64

	dropMu sync.Mutex
	drops  map[string]int64 // links dropped by the owned groups' drains, by reason
}

// drop counts n links dropped for reason.
func (c *counters) drop(reason string, n int) {
	c.dropMu.Lock()
	defer c.dropMu.Unlock()
	if c.drops == nil {
		c.drops = map[string]int64{}
	}
	c.drops[reason] += int64(n)
}

// dropCounts returns a copy of the drop counts (nil when none).
func (c *counters) dropCounts() map[string]int64 {
	c.dropMu.Lock()
	defer c.dropMu.Unlock()
	if len(c.drops) == 0 {
		return nil
	}
	out := make(map[string]int64, len(c.drops))
	for k, v := range c.drops {
		out[k] = v
	}
	return out
}

// Status is the JSON document of a worker's status node R/workers/<id>,
// refreshed every HeartbeatInterval. crawlctl status reads it.
type Status struct {
	ID            string    `json:"id"`
	Host          string    `json:"host"`
	PID           int       `json:"pid"`
	Session       string    `json:"session"`
	Started       time.Time `json:"started"`
	Heartbeat     time.Time `json:"heartbeat"`
	ConfigVersion int32     `json:"config_version"`
	ConfigError   string    `json:"config_error,omitempty"`
	// StorageError says why the worker stopped claiming: writing or
	// fsyncing its crawl log or WARC file failed (e.g. disk full). Empty
	// while writes work.
	StorageError string `json:"storage_error,omitempty"`
	Paused       bool   `json:"paused"`
	Pages        int64  `json:"pages"`
	Errors       int64  `json:"errors"`
	Bytes        int64  `json:"bytes"`
	InFlight     int64  `json:"in_flight"`
	ShardsOwned  int64  `json:"shards_owned"`
	// Dropped counts the links this worker's shard groups did not queue,
	// by reason (duplicate, per_host, total, bytes, url_length,
	// bad_record, host_budget, dead_letter_cap): docs/design.md "Quotas".
	Dropped map[string]int64 `json:"dropped,omitempty"`
	// HostsAtBudget counts the hosts of this worker's shard groups whose
	// URLs moved to the ready window (each fetched once: the count that
	// bounds their pages) reached max_pages_per_host, and HeldByBudget their
	// backlog URLs kept (host_budget_action keep), as the groups' managers
	// last computed them (docs/design.md "Per-host budgets"); 0 without a
	// budget.
	HostsAtBudget int64 `json:"hosts_at_budget,omitempty"`
	HeldByBudget  int64 `json:"held_by_budget,omitempty"`
	// Scheduled counts the recrawl schedule entries of this worker's
	// shard groups and NextDue the earliest due time among them, as their
	// owners last wrote them (docs/design.md "Recrawl"); omitted when none.
	Scheduled int64      `json:"scheduled,omitempty"`
	NextDue   *time.Time `json:"next_due,omitempty"`
	// View names the shard assignment (R/assignment) this worker's
	// ownership follows; a worker gaining a shard waits until every live
	// worker shows its view (docs/design.md "Shard handoff").
	View string `json:"view,omitempty"`
	// Loads maps each shard group running here to its politeness keys
	// with records queued (backlog or ready window): what the balancer
	// weighs (docs/design.md "Shard ownership").
	Loads map[int]int64 `json:"loads,omitempty"`
	// Version is the worker binary's zkcrawl version (Options.Version).
	Version string `json:"version,omitempty"`
}

var startedAt = time.Now().UTC()

func (w *Worker) status(sess *coord.Session) []byte {
	host, _ := os.Hostname()
	live := w.current()
	st := Status{
		ID: w.opts.ID, Host: host, PID: os.Getpid(), Session: sess.String(),
		Started: startedAt, Heartbeat: time.Now().UTC(),
		ConfigVersion: live.version, Paused: live.cfg.Paused,
		Pages: w.counters.pages.Load(), Errors: w.counters.errors.Load(), Bytes: w.counters.bytes.Load(),
		InFlight: w.counters.inFlight.Load(), ShardsOwned: w.counters.shardsOwned.Load(),
		Dropped: w.counters.dropCounts(),
		Version: w.opts.Version,
	}
	totals := w.owner.Totals()
	st.HostsAtBudget, st.HeldByBudget, st.Loads = totals.AtBudget, totals.Held, totals.Active
	if totals.Scheduled > 0 {
		next := time.Unix(totals.NextDue, 0).UTC()
		st.Scheduled, st.NextDue = totals.Scheduled, &next
	}
	if e := w.cfgErr.Load(); e != nil {
		st.ConfigError = *e
	}
	st.StorageError = w.outputError()
	if v := w.view.Load(); v != nil {
		st.View = *v
	}
	b, _ := json.Marshal(st)
	return b
}

// join registers this worker in R/workers under sess (membership recipe).
func (w *Worker) join(ctx context.Context, sess *coord.Session) (*coord.Member, error) {
	return coord.Join(ctx, sess, w.root, w.opts.ID, w.status(sess))
}

// heartbeat refreshes the status node m of sess and the cluster page count
// until ctx ends, and moves the status node to standby and back as the
// outputs fail and recover (updatePresence).
func (w *Worker) heartbeat(ctx context.Context, sess *coord.Session, m *coord.Member) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	p := &presence{member: m}
	defer func() {
		if p.standby != nil { // the next session starts in the worker list
			w.standby.Store(false)
			lctx, cancel := context.WithTimeout(context.Background(), w.opts.SessionTimeout)
			_ = p.standby.Leave(lctx)
			cancel()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.updatePresence(ctx, sess, p)
		if w.current().cfg.MaxPages > 0 {
			w.refreshClusterPages(ctx)
		}
	}
}

// refreshClusterPages sets the crawl-wide page count for max_pages: the
// larger of the live workers' status nodes (fresh, but they count only
// their current runs) and the durable R/totals (every run of every worker,
// also those that died or restarted, added to every totalsInterval; read at
// most that often). So a restarted worker or a replaced cluster does not
// start the count over.
func (w *Worker) refreshClusterPages(ctx context.Context) {
	_, data, err := coord.Members(ctx, w.client, w.root)
	if err != nil {
		return
	}
	var total int64
	for _, d := range data {
		var st Status
		if json.Unmarshal(d, &st) == nil {
			total += st.Pages
		}
	}
	if time.Since(w.counters.totalsRead) >= totalsInterval {
		if t, _, err := ReadTotals(ctx, w.client, w.root); err == nil {
			w.counters.totalsRead, w.counters.totalsPages = time.Now(), t.Pages
		}
	}
	mine := w.counters.pages.Load()
	w.counters.cluster.Store(max(total, w.counters.totalsPages, mine))
	w.counters.clusterMine.Store(mine)
}

// capped reports whether max_pages is reached: the crawl-wide count of the
// last refresh (the heartbeat's sum and totals up to totalsInterval old)
// plus this worker's pages since. Exact for a lone worker (but for the
// items in flight when the cap is reached); with several, it can overshoot
// by what the others crawled since their last heartbeat.
func (c *counters) capped(cfg config.Config) bool {
	return cfg.MaxPages > 0 && c.cluster.Load()+c.pages.Load()-c.clusterMine.Load() >= cfg.MaxPages
}

// waitDone returns nil once the crawl is done: nothing in flight here and,
// read as one consistent snapshot, no ready item, no claim, no inbox post
// and no backlog record but those held by host budgets (frontier.Pending.
// Empty); then, with a positive QuietPeriod, still so QuietPeriod later.
// Items waiting for a retry still count as ready. With max_pages reached,
// no claim and nothing in flight here is enough.
//
// It reads ZooKeeper only while this worker is idle. While unclaimed work
// is left (ready items no one holds, posts, backlog) it polls the cheap
// counts (2 x shards exists and a cursor per group, frontier.Frontier.
// Pending) every donePoll, doubling up to doneBackoff while they keep
// finding work: at most about (2 x shards + 2 x groups) / doneBackoff reads
// per second per idle worker. A worker that finishes its last item in
// flight (counters.idle) and stays idle for localPoll ends that pause and
// reads, still at most once per doneMinGap: the worker that fetched the
// crawl's last page sees it done a few round trips later, not up to
// doneBackoff. Once the only work left is claimed (the
// crawl's last pages), it reads them again with watches
// (frontier.Frontier.WatchPending: 2 x shards + groups getChildren and a
// cursor per group) and waits for a watch to fire, then reads again, at
// most once per doneMinGap: done is seen within doneMinGap
// and a few round trips of the last completion, and an idle worker makes
// at most 2 x shards + 3 x groups reads per doneMinGap while only
// claimed work is left. A worker that fetched nothing since its last read
// reads at most once per idleGap instead (doneIdleGap; shorter under a
// quiet period), in both cases: the crawl's last page is another
// worker's, which sees the crawl done, and its exit (a member leaving,
// below) ends the wait. A watch lost across a reconnect fires too;
// doneFallback bounds the wait on watches all the same. A worker that has
// finished, since its last read, at least as many items as that read found
// left (workLeft) and goes idle reads at once, doneMinGap or not: the
// crawl's last pages were most often its own. A read that finds nothing
// left is confirmed by a second that finds every counted znode at the
// same child or data version (frontier.Frontier.PendingStamp: no watch
// needed, and a fresh ZooKeeper's first watched reads are slow); one that
// a watched read found empty, by a second read while no watch has fired
// (docs/design.md, "When a batch crawl is done"). A member leaving the
// worker list (a worker that saw the crawl done and exited) ends any of
// these waits at once, doneMinGap included.
func (w *Worker) waitDone(ctx context.Context) error {
	var quietSince, lastRead time.Time
	var left, idle <-chan struct{}
	pause, watching := donePoll, false
	// seenLeft is the work the last read found (ready items, unheld backlog,
	// due entries, posts) and finishedAt this worker's finished items then:
	// once it has finished at least that many since and goes idle, all it
	// saw may be done (most often: the crawl's last pages were its own), so
	// it reads at once instead of waiting out doneMinGap. At most one such
	// read per that many items, so a worker that idles between pages of a
	// big backlog (one host at a rate) does not read more often.
	seenLeft, finishedAt := -1, int64(0)
	// The first read waits until this worker is placed and then
	// donePlacedSettle (on a fresh crawl its 256 reads would otherwise
	// queue, on the one connection, ahead of the join, the first
	// assignment, the owned groups' loads and the first claims: make
	// demo-real's first page came 0.1-0.2 s later), at most donePlaceWait
	// (a worker in standby, or a balancer settling under a per-host rate).
	start := time.Now()
	if err := sleepOrChange(ctx, donePlaceWait, w.placed.Wait(), nil, nil); err != nil {
		return err
	}
	if err := sleepOrChange(ctx, min(donePlacedSettle, donePlaceWait-time.Since(start)), nil, nil, nil); err != nil {
		return err
	}
	for {
		if err := w.idleHere(ctx); err != nil {
			return err
		}
		memberLeft := isClosed(left)
		worked := isClosed(idle)      // this worker finished its last item since the last read
		left = w.left.Wait()          // a member leaving (done elsewhere) ends the waits below
		idle = w.counters.idle.Wait() // so does this worker finishing its last item from now on
		minGap := doneMinGap
		if !worked && quietSince.IsZero() {
			minGap = idleGap(w.opts.QuietPeriod)
		}
		caughtUp := func() bool {
			return seenLeft >= 0 && w.counters.pages.Load()-finishedAt >= int64(seenLeft)
		}
		if gap := minGap - time.Since(lastRead); gap > 0 && !memberLeft && !(worked && caughtUp()) {
			// Watches fire on every claim and completion: read at most
			// once per doneMinGap (doneIdleGap while this worker fetched
			// nothing: the crawl's last page is another's, who sees the
			// crawl done and whose exit ends the wait), but at once after
			// a member left (rare: most often a worker that saw the crawl
			// done).
			if err := sleepOrChange(ctx, gap, nil, left, idle); err != nil {
				return err
			}
			if isClosed(idle) && !isClosed(left) && !caughtUp() {
				// It fetched meanwhile: its last item may be the crawl's.
				if gap := doneMinGap - time.Since(lastRead); gap > 0 && !sleepCtx(ctx, gap) {
					return ctx.Err()
				}
			}
		}
		lastRead = time.Now()
		var changed <-chan struct{}
		st, stamp, err := w.front.PendingStamp(ctx)
		done := false
		switch {
		case err != nil:
		case st.Empty():
			// Confirm: a second read that finds every counted znode as the
			// first did (the same child and data versions) shows the crawl
			// done at the end of the first, with no watch set.
			again, stamp2, err2 := w.front.PendingStamp(ctx)
			done = err2 == nil && again.Empty() && stamp2 == stamp
			if !done {
				changed = closedSignal // something moved: look again soon
			}
		case onlyClaimedLeft(st):
			// Only claimed work is left: wait for it on watches.
			st, changed, err = w.front.WatchPending(ctx)
			if err == nil && st.Empty() {
				// It ended meanwhile: confirm while no watch has fired.
				again, err2 := w.front.Pending(ctx)
				done = err2 == nil && again.Empty() && !isClosed(changed)
			}
		}
		watching = err == nil && onlyClaimedLeft(st)
		seenLeft, finishedAt = -1, w.counters.pages.Load()
		if err == nil {
			seenLeft = workLeft(st)
		}
		if err == nil && !done && w.counters.capped(w.current().cfg) && st.Claimed == 0 {
			done = true // max_pages reached: what is left queued stays for a later run
		}
		if done && w.counters.inFlight.Load() == 0 {
			if quietSince.IsZero() {
				quietSince = time.Now()
			}
			if time.Since(quietSince) >= w.opts.QuietPeriod {
				return nil
			}
		} else {
			quietSince = time.Time{}
		}
		wait := pause
		switch {
		case !quietSince.IsZero():
			wait = min(donePoll, w.opts.QuietPeriod-time.Since(quietSince))
		case watching && !isClosed(changed):
			wait, pause = doneFallback, donePoll
		case watching:
			wait, pause = 0, donePoll // a watch fired meanwhile: read again
		case err == nil && st.Ready == 0 && st.Claimed == 0 && st.Posts == 0:
			pause = donePoll // only the backlog is left: an owner step moves it soon
		default:
			pause = min(2*pause, doneBackoff)
		}
		if err := sleepOrChange(ctx, wait, changed, left, idle); err != nil {
			return err
		}
		if isClosed(idle) && !isClosed(changed) && !isClosed(left) {
			// This worker's last item finished: read if it stays idle for
			// localPoll (between two claims it does not), else at idleHere's
			// next sample.
			if !sleepCtx(ctx, localPoll) {
				return ctx.Err()
			}
		}
	}
}

// closedSignal is a closed channel: a wait on it ends at once.
var closedSignal = func() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// idleGap returns the least time between two count reads of a worker that
// fetched nothing since the last (waitDone): doneIdleGap, or with a quiet
// period a quarter of it (at least doneMinGap), so that workers that see
// the crawl done start their quiet periods within that of each other and
// leave together, not one quiet period after another.
func idleGap(quiet time.Duration) time.Duration {
	if quiet <= 0 {
		return doneIdleGap
	}
	return min(max(quiet/4, doneMinGap), doneIdleGap)
}

// workLeft counts the items st says are still to do: ready (claimed or
// not), unheld backlog records that are not schedule entries, schedule
// entries due now, and inbox posts (a post counts one, whatever it holds).
func workLeft(st frontier.Pending) int {
	return st.Ready + max(0, st.Backlog-st.Held-st.Scheduled) + st.DueNow + st.Posts
}

// onlyClaimedLeft reports whether every ready item left is claimed and no
// post or unheld backlog record is left: the crawl's last pages, or none.
func onlyClaimedLeft(st frontier.Pending) bool {
	return st.Ready <= st.Claimed && st.Posts == 0 && st.Backlog-st.Held <= 0
}

// sleepOrChange waits d, or until changed, left or idle is closed (nil:
// never), or until ctx ends (then its error).
func sleepOrChange(ctx context.Context, d time.Duration, changed, left, idle <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-left:
	case <-idle:
	case <-timer.C:
	}
	return nil
}

// idleHere returns once nothing is in flight in this worker (checked every
// localPoll: an atomic read) or with ctx's error. A sample, not an event:
// a busy worker's in-flight count falls to 0 for a moment between claims
// many times a second, and a read at each would keep lastRead recent (its
// last page's done check then waits out doneMinGap).
func (w *Worker) idleHere(ctx context.Context) error {
	for w.counters.inFlight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(localPoll):
		}
	}
	return ctx.Err()
}

// isClosed reports whether ch is closed (ch is only ever closed).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// The pauses of waitDone: donePlaceWait at most before the first read
// (until this worker is placed, then donePlacedSettle); localPoll between looks at this worker's
// in-flight count; donePoll to doneBackoff between count reads while
// unclaimed work is left (cut short when this worker finishes its last
// item in flight and stays idle for localPoll); doneFallback at most on armed watches (a watch
// can be lost across a reconnect, and a backlog drop by an owner step
// changes no watched znode); doneMinGap at least between two reads, and
// doneIdleGap while this worker fetched nothing since the last (two idle
// workers of three made 65% of a one-host crawl's ZooKeeper requests at
// doneMinGap).
const (
	donePlaceWait    = time.Second
	donePlacedSettle = 250 * time.Millisecond
	localPoll        = 20 * time.Millisecond
	doneMinGap       = 200 * time.Millisecond
	doneIdleGap      = 2 * time.Second
	donePoll         = 100 * time.Millisecond
	doneBackoff      = 500 * time.Millisecond
	doneFallback     = 3 * time.Second
)
