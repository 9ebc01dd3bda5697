package frontier_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// schedCrawl is a one-group crawl with an owner running it, whose config
// a test may change.
type schedCrawl struct {
	t    *testing.T
	root string
	cfg  atomic.Pointer[config.Config]
	f    *frontier.Frontier
	o    *frontier.Owner
	stop func()
}

func newSchedCrawl(t *testing.T, cfg config.Config) *schedCrawl {
	sc := &schedCrawl{t: t, root: testRoot(t)}
	sc.cfg.Store(&cfg)
	ctx := testenv.Context(t, 30*time.Second)
	if _, _, err := frontier.Create(ctx, connect(t, zkAddr(t)), sc.root, frontier.Layout{Shards: 1, Spread: 1}); err != nil {
		t.Fatal(err)
	}
	sc.start()
	return sc
}

// start runs a new owner of group 0 on its own client and session.
func (sc *schedCrawl) start() {
	t := sc.t
	c := connect(t, zkAddr(t))
	ctx, cancel := context.WithCancel(context.Background())
	f, err := frontier.Open(ctx, c, sc.root)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := frontier.NewOwner(f, frontier.OwnerOptions{Log: testenv.Logger(), Config: func() config.Config { return *sc.cfg.Load() }})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); o.Run(ctx, sess, 0) }()
	sc.f, sc.o = f, o
	sc.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(sc.stop)
}

// ready returns the ready items by URL.
func (sc *schedCrawl) ready() map[string]frontier.Item {
	t := sc.t
	ctx := testenv.Context(t, 30*time.Second)
	q := sc.f.Queue()
	names, err := q.ReadyNames(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]frontier.Item{}
	for _, n := range names {
		data, err := q.Get(ctx, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		it, err := frontier.DecodeItem(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[it.URL]; dup {
			t.Fatalf("%s is ready twice", it.URL)
		}
		out[it.URL] = it
	}
	return out
}

// waitFor polls until cond holds of the ready items and the pending counts.
func (sc *schedCrawl) waitFor(what string, cond func(map[string]frontier.Item, frontier.Pending) bool) map[string]frontier.Item {
	sc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := sc.ready()
		p, err := sc.f.Pending(testenv.Context(sc.t, 30*time.Second))
		if err != nil {
			sc.t.Fatal(err)
		}
		if cond(r, p) {
			return r
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("%s: not reached; ready %v, pending %+v", what, keysOf(r), p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func keysOf(m map[string]frontier.Item) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (sc *schedCrawl) enqueue(items ...frontier.Item) {
	sc.t.Helper()
	if _, err := sc.f.Enqueue(testenv.Context(sc.t, 30*time.Second), items); err != nil {
		sc.t.Fatal(err)
	}
}

// Schedule entries of seen URLs are kept, not dropped: only the due one
// becomes ready (with the adapted interval), a duplicate entry keeps the
// newest capture, a new owner reloads the schedule without making any URL
// ready twice, and `recrawl --now` (recrawl_due_before) makes the rest due.
func TestScheduleDueDedupReloadAndNow(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Recrawl = true
	cfg.PerHostMaxInFlight = 4 // a window of 17
	sc := newSchedCrawl(t, cfg)
	now := time.Now().UTC().Truncate(time.Second)
	u := func(p string) string { return "http://sched.example/" + p }
	sc.enqueue(frontier.Item{URL: u("due")}, frontier.Item{URL: u("later")}, frontier.Item{URL: u("dup")})
	sc.waitFor("the new URLs ready", func(r map[string]frontier.Item, _ frontier.Pending) bool { return len(r) == 3 })
	// Clear the ready window as fetches would (completion), then hand back
	// the captures as schedule entries.
	clearReady(t, sc)
	old := &frontier.Capture{Time: now.Add(-2 * time.Hour), IntervalS: 3600, Digest: "0123456789abcdef"} // unchanged: 5040 s, due 36 min ago
	recent := &frontier.Capture{Time: now, IntervalS: 3600}
	sc.enqueue(frontier.Item{URL: u("due"), Prev: old}, frontier.Item{URL: u("later"), Prev: recent})
	// One step: the newer capture replaces the due one, the older again is
	// a duplicate; then a later step gets an older one again.
	sc.enqueue(frontier.Item{URL: u("dup"), Prev: old}, frontier.Item{URL: u("dup"), Prev: recent}, frontier.Item{URL: u("dup"), Prev: old})
	sc.enqueue(frontier.Item{URL: u("dup"), Prev: old})
	r := sc.waitFor("the due entry ready", func(r map[string]frontier.Item, p frontier.Pending) bool {
		return len(r) == 1 && p.Scheduled == 2
	})
	it, ok := r[u("due")]
	if !ok || it.Prev == nil || it.Prev.Digest != old.Digest || it.Prev.IntervalS < 4800 || it.Prev.IntervalS > 5300 {
		t.Fatalf("ready item %+v, want %s with its capture and an interval near 5040 s", it, u("due"))
	}
	p, err := sc.f.Pending(testenv.Context(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if p.DueNow != 0 || p.DueHour != 0 || p.NextDue.Before(now.Add(time.Hour)) || p.Empty() {
		t.Fatalf("pending %+v: want nothing due within the hour, the next due in over 1 h, and not empty (a ready item)", p)
	}
	clearReady(t, sc)
	sc.waitFor("done but for the schedule", func(r map[string]frontier.Item, p frontier.Pending) bool { return len(r) == 0 && p.Empty() })

	// A new owner reloads the schedule: nothing becomes ready.
	sc.stop()
	sc.start()
	time.Sleep(500 * time.Millisecond)
	sc.waitFor("reloaded", func(r map[string]frontier.Item, p frontier.Pending) bool { return len(r) == 0 && p.Scheduled == 2 })

	// recrawl --now, narrowed to one URL, then all.
	c2 := *sc.cfg.Load()
	c2.RecrawlDueBefore = now.Add(time.Second).Format(time.RFC3339)
	c2.RecrawlDueMatch = "/later$"
	sc.cfg.Store(&c2)
	sc.waitFor("the matching entry due at once", func(r map[string]frontier.Item, p frontier.Pending) bool {
		_, ok := r[u("later")]
		return len(r) == 1 && ok && p.Scheduled == 1
	})
	c3 := c2
	c3.RecrawlDueMatch = ""
	sc.cfg.Store(&c3)
	sc.waitFor("every entry due at once", func(r map[string]frontier.Item, p frontier.Pending) bool { return len(r) == 2 && p.Scheduled == 0 })
}

// With recrawl_new_first a host's new URLs fill its ready window before
// its due entries; without it the due entries go first.
func TestScheduleNewFirst(t *testing.T) {
	t.Parallel()
	for _, newFirst := range []bool{true, false} {
		cfg := config.Default()
		cfg.Recrawl, cfg.RecrawlNewFirst = true, newFirst
		cfg.Paused = true
		sc := newSchedCrawl(t, cfg)
		sc.stop() // fill the inbox first: one step sees everything
		at := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
		var items []frontier.Item
		for _, p := range []string{"s1", "s2", "s3", "s4"} {
			items = append(items, frontier.Item{URL: "http://nf.example/" + p, Prev: &frontier.Capture{Time: at, IntervalS: 3600}})
		}
		for _, p := range []string{"n1", "n2", "n3", "n4"} {
			items = append(items, frontier.Item{URL: "http://nf.example/" + p})
		}
		sc.enqueue(items...)
		sc.start()
		r := sc.waitFor("the window full", func(r map[string]frontier.Item, _ frontier.Pending) bool { return len(r) == 5 })
		entries := 0
		for _, it := range r {
			if it.Prev != nil {
				entries++
			}
		}
		if want := map[bool]int{true: 1, false: 4}[newFirst]; entries != want {
			t.Fatalf("new_first %v: %d of the 5 ready items are recrawls, want %d", newFirst, entries, want)
		}
	}
}

// clearReady deletes every ready item (as completions would) and tells
// nobody: the owner's resync finds them gone.
func clearReady(t *testing.T, sc *schedCrawl) {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	c := connect(t, zkAddr(t))
	q, err := coord.OpenQueue(ctx, c, sc.root)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names, err := q.ReadyNames(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range names {
		cl, err := q.Take(ctx, sess, 0, func(string, []byte, *atomic.Value) (func(), bool) { return nil, true })
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A batch whose pending records are all schedule entries, under half of
// it, is compacted into the newest batch and retires; every key reaches
// the seen chunks exactly once (entries of URLs new to the group carry the
// fold mark, their compacted copies do not).
func TestScheduleCompaction(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Recrawl = true
	sc := newSchedCrawl(t, cfg)
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var items []frontier.Item
	const n = 1000
	for i := range n {
		items = append(items, frontier.Item{URL: fmt.Sprintf("http://c%04d.example/p", i), Prev: &frontier.Capture{Time: at, IntervalS: 86400, Digest: "00112233445566ff"}})
	}
	sc.enqueue(items...)
	stats := func() frontier.GroupStats {
		st, err := sc.f.Backlog().Stats(testenv.Context(t, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return st[0]
	}
	sc.waitFor("all scheduled", func(r map[string]frontier.Item, p frontier.Pending) bool { return p.Scheduled == n && len(r) == 0 })
	if st := stats(); st.Batches < 2 || st.Seen != 0 {
		t.Fatalf("stats %+v: want at least 2 batches and no seen chunk", st)
	}
	c2 := *sc.cfg.Load()
	c2.RecrawlDueBefore = time.Now().UTC().Format(time.RFC3339)
	c2.RecrawlDueMatch = `^http://c0[0-5]\d\d\.`
	sc.cfg.Store(&c2)
	sc.waitFor("600 due moved, the first batch compacted", func(r map[string]frontier.Item, p frontier.Pending) bool {
		st := stats()
		return len(r) == 600 && p.Scheduled == n-600 && st.Batches == 1 && st.Seen > 600
	})
	c3 := c2
	c3.RecrawlDueMatch = ""
	sc.cfg.Store(&c3)
	sc.waitFor("everything moved and retired", func(r map[string]frontier.Item, p frontier.Pending) bool {
		st := stats()
		return len(r) == n && p.Scheduled == 0 && st.Batches == 0 && st.Seen == n
	})
}

// Two owners of one group at once (a handoff overlap): the cursor's
// version fences them, each reloads the other's writes, and every due
// entry becomes ready exactly once while the rest stay scheduled.
func TestScheduleTwoOwners(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Recrawl = true
	sc := newSchedCrawl(t, cfg)
	firstStop := sc.stop
	sc.start() // a second owner, the first still running
	at := time.Now().UTC().Truncate(time.Second)
	var items []frontier.Item
	const n = 200
	for i := range n {
		c := &frontier.Capture{Time: at, IntervalS: 86400} // not due
		if i%2 == 0 {
			c.Time = at.Add(-48 * time.Hour) // due
		}
		items = append(items, frontier.Item{URL: fmt.Sprintf("http://two%03d.example/", i), Prev: c})
	}
	// Half through the second owner's local hand-off, half posted to the
	// inbox, which both owners drain.
	plain, err := frontier.Open(testenv.Context(t, 30*time.Second), connect(t, zkAddr(t)), sc.root)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 20 {
		if i%40 == 0 {
			sc.enqueue(items[i : i+20]...)
		} else if _, err := plain.Enqueue(testenv.Context(t, 30*time.Second), items[i:i+20]); err != nil {
			t.Fatal(err)
		}
	}
	sc.waitFor("the due half ready once, the rest scheduled", func(r map[string]frontier.Item, p frontier.Pending) bool {
		return len(r) == n/2 && p.Scheduled == n/2 && p.Backlog == n/2
	})
	firstStop()
	time.Sleep(300 * time.Millisecond)
	sc.waitFor("still so under the second owner alone", func(r map[string]frontier.Item, p frontier.Pending) bool {
		return len(r) == n/2 && p.Scheduled == n/2
	})
}
