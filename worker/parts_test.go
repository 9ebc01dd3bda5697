package worker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
)

// The worker's parts alone: the Worker only wires them, keySlots and retry
// work without it.

// The Worker holds its parts, each once, grouped by the part that uses
// them: at most 15 fields.
func TestWorkerFieldCount(t *testing.T) {
	if n := reflect.TypeFor[Worker]().NumField(); n > 15 {
		t.Errorf("Worker has %d fields, want <= 15: group a part's state into its own type", n)
	}
}

// keySlots caps the claims per politeness key and wakes the shards a busy
// key turned away, the longest waiting first, each once, naming the items
// it turned away (all of the shard past maxWaitingNames).
func TestKeySlots(t *testing.T) {
	ks := newKeySlots()
	if !ks.reserve("a.example", 2, 1, "u-1") || !ks.reserve("a.example", 2, 1, "u-2") {
		t.Fatal("the first two reservations under a limit of 2 were refused")
	}
	if !ks.reserve("b.example", 2, 1, "u-3") {
		t.Fatal("another key's reservation was refused")
	}
	for _, c := range []struct {
		shard int
		name  string
	}{{5, "u-7"}, {3, "u-4"}, {5, "u-8"}, {5, "u-7"}} {
		if ks.reserve("a.example", 2, c.shard, c.name) {
			t.Fatalf("a third reservation of a full key (shard %d) was granted", c.shard)
		}
	}
	if got, names := ks.free("a.example"); got != 5 || fmt.Sprint(names) != "[u-7 u-8]" {
		t.Errorf("first free woke shard %d for %v, want 5 (waited longest) for [u-7 u-8]", got, names)
	}
	if got, names := ks.free("a.example"); got != 3 || fmt.Sprint(names) != "[u-4]" {
		t.Errorf("second free woke shard %d for %v, want 3 for [u-4] (shard 5 waits once however often it was turned away)", got, names)
	}
	if got, _ := ks.free("b.example"); got != -1 {
		t.Errorf("free of a key nobody waits for woke shard %d, want -1", got)
	}
	if len(ks.held) != 0 || len(ks.waiting) != 0 {
		t.Errorf("after every slot was freed: held %v, waiting %v; want both empty (one entry per busy key only)", ks.held, ks.waiting)
	}
	ks.reserve("c.example", 1, 0, "u-0")
	for i := range maxWaitingNames + 1 {
		ks.reserve("c.example", 1, 2, fmt.Sprintf("u-%d", i))
	}
	if got, names := ks.free("c.example"); got != 2 || names != nil {
		t.Errorf("free after %d names woke shard %d for %d names, want shard 2 and no names (all)", maxWaitingNames+1, got, len(names))
	}
}

// keySlots.wakeIn sets one timer per key, which nudges every shard that
// waits for the key's turn once, with the items each turned away, then
// forgets them and itself; later puts a freed slot's waiter back under
// that timer.
func TestKeySlotsWakeIn(t *testing.T) {
	ks := newKeySlots()
	nudged := make(chan string, 4)
	nudge := func(shard int, names ...string) { nudged <- fmt.Sprint(shard, names) }
	start := time.Now()
	ks.wakeIn("a.example", 7, "u-1", 50*time.Millisecond, nudge)
	ks.wakeIn("a.example", 2, "u-2", time.Hour, nudge) // the key's timer is set: it stays
	ks.wakeIn("a.example", 7, "u-3", time.Hour, nudge)
	ks.later("a.example", 4, nil, time.Hour, nudge)
	got := []string{<-nudged, <-nudged, <-nudged}
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("woken after %v, want about 50ms", elapsed)
	}
	if fmt.Sprint(got) != "[7 [u-1 u-3] 2 [u-2] 4 []]" {
		t.Errorf("nudged %v, want [7 [u-1 u-3] 2 [u-2] 4 []] (each shard once with its items, the longest waiting first; 4 whole)", got)
	}
	select {
	case s := <-nudged:
		t.Errorf("shard %s nudged again", s)
	case <-time.After(100 * time.Millisecond):
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if len(ks.waiting) != 0 || len(ks.timers) != 0 {
		t.Errorf("after the wake: waiting %v, timers %v; want both empty", ks.waiting, ks.timers)
	}
}

// A key may hold its claim slots (per_host_max_in_flight + 1 under a
// rate, no prefetched claim at long intervals, 4 x in-flight without a
// rate) until three quarters of the worker's claim cap are held; from then
// on only keys holding no claim are admitted, so every key keeps one claim
// for its next turn.
func TestKeyClaimLimit(t *testing.T) {
	rated, unrated, slow := config.Default(), config.Default(), config.Default()
	rated.PerHostRatePerS, rated.PerHostMaxInFlight = 1, 1
	unrated.PerHostRatePerS, unrated.PerHostMaxInFlight = 0, 2
	slow.PerHostRatePerS, slow.PerHostMaxInFlight = 0.05, 2 // a 20 s interval: no prefetched claim
	for _, c := range []struct {
		cfg    *config.Config
		claims int64
		cap    int
		want   int
	}{
		{&rated, 0, 9640, 2}, {&rated, 7229, 9640, 2}, {&rated, 7230, 9640, 1}, {&rated, 9640, 9640, 1},
		{&unrated, 5, 8, 8}, {&unrated, 6, 8, 1}, {&slow, 0, 9640, 2}, {&slow, 7230, 9640, 1},
	} {
		if got := keyClaimLimit(c.cfg, c.claims, c.cap); got != c.want {
			t.Errorf("keyClaimLimit(rate %v, %d claims of %d) = %d, want %d", c.cfg.PerHostRatePerS, c.claims, c.cap, got, c.want)
		}
	}
}

// retry stops at the first success, at an error its policy does not retry,
// after its attempts, and when ctx ends, returning the last error.
func TestRetry(t *testing.T) {
	errFlaky, errFatal := errors.New("flaky"), errors.New("fatal")
	quick := retryPolicy{attempts: 4, pause: every(time.Millisecond)}
	run := func(ctx context.Context, p retryPolicy, results ...error) (calls, failed int, err error) {
		err = retry(ctx, p, func(err error) bool { return errors.Is(err, errFlaky) },
			func(n int, _ error) {
				failed++
				if n != failed {
					t.Errorf("failed called with retry %d, want %d", n, failed)
				}
			},
			func(context.Context) error {
				calls++
				return results[min(calls, len(results))-1]
			})
		return calls, failed, err
	}
	ctx := context.Background()
	if calls, failed, err := run(ctx, quick, errFlaky, errFlaky, nil); err != nil || calls != 3 || failed != 2 {
		t.Errorf("success on the third call: %d calls, %d failed, %v; want 3, 2, nil", calls, failed, err)
	}
	if calls, _, err := run(ctx, quick, errFlaky, errFatal); err != errFatal || calls != 2 {
		t.Errorf("non-retryable error: %d calls, %v; want 2 and the fatal error", calls, err)
	}
	if calls, failed, err := run(ctx, quick, errFlaky); err != errFlaky || calls != 4 || failed != 3 {
		t.Errorf("always failing: %d calls, %d failed, %v; want 4 (attempts), 3, the last error", calls, failed, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	calls, _, err := run(cctx, retryPolicy{pause: every(10 * time.Second)}, errFlaky)
	if err != errFlaky || calls != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("ctx ended during the pause: %d calls, %v after %v; want 1 call, the last error, at once", calls, err, time.Since(start))
	}
}

// persist calls a finisher again while it fails with connection loss and
// stops at any other outcome.
func TestPersistRetriesConnectionLoss(t *testing.T) {
	w := newWorker(Options{ID: "p1", Logger: testLogger(t)}, "/zkcrawl/parts")
	calls := 0
	results := []error{fmt.Errorf("%w: %w", coord.ErrConnectionLoss, zk.ErrConnectionClosed), nil}
	start := time.Now()
	err := w.persist(context.Background(), "complete", frontier.Item{URL: pipelinePage}, func(context.Context) error {
		calls++
		return results[calls-1]
	})
	if err != nil || calls != 2 || time.Since(start) < persistRetryInterval {
		t.Errorf("persist: %v after %d calls in %v; want nil after 2 calls, one persistRetryInterval apart", err, calls, time.Since(start))
	}
	calls = 0
	err = w.persist(context.Background(), "complete", frontier.Item{URL: pipelinePage}, func(context.Context) error {
		calls++
		return coord.ErrClaimLost
	})
	if !errors.Is(err, coord.ErrClaimLost) || calls != 1 {
		t.Errorf("persist of a lost claim: %v after %d calls; want ErrClaimLost after 1", err, calls)
	}
}

// One stage of an attempt alone: store writes the exchange through the
// store seam and notes its status, size, digest and record position in the
// attempt's crawl-log line, nothing else.
func TestAttemptStoreStage(t *testing.T) {
	p := newPipeline(t, config.Default(), nil)
	a := &attempt{w: p.w, ctx: context.Background(), claim: &memClaim{calls: p.calls}, it: frontier.Item{URL: pipelinePage}, key: "a.example", live: p.w.current()}
	res := &fetch.Result{URL: pipelinePage, Status: 200, MIME: "text/html", Body: []byte("<p>hi</p>"), RemoteIP: "192.0.2.1", Started: time.Now()}
	if !a.store(res) {
		t.Fatal("store reported failure")
	}
	p.wantCalls(t, "warc "+pipelinePage)
	e := a.entry
	if e.Status != 200 || e.Bytes != int64(len(res.Body)) || e.MIME != "text/html" || e.WARCFile != "mem.warc.gz" || e.WARCOffset != 1 || e.Digest != storage.Digest(res.Body) {
		t.Errorf("crawl-log line after store: %+v", e)
	}
	if got := p.w.counters.bytes.Load(); got != int64(len(res.Body)) {
		t.Errorf("bytes counted %d, want %d", got, len(res.Body))
	}
}

// takersFor: under a rate 4 takers a shard, without one 16, and more when
// few shards are owned, so a worker keeps 256 Takes under way in all.
func TestTakersFor(t *testing.T) {
	rated, unrated := &config.Config{PerHostRatePerS: 1}, &config.Config{}
	for _, c := range []struct {
		owned int64
		cfg   *config.Config
		want  int
	}{
		{64, rated, 4}, {64, unrated, 16}, {21, rated, 13}, {21, unrated, 16}, {5, rated, 52}, {5, unrated, 52}, {0, rated, 4}, {0, unrated, 16},
	} {
		if got := takersFor(c.owned, c.cfg); got != c.want {
			t.Errorf("takersFor(%d, rate %v) = %d, want %d", c.owned, c.cfg.PerHostRatePerS, got, c.want)
		}
	}
}
