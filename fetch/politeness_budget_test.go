package fetch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The request budget (MaxRequests) caps requests admitted across hosts, and
// a request waiting for its host's rate holds no budget slot: with a budget
// of 1, host a's second request waits 500 ms for its token while host b's
// request is admitted at once.
func TestPolitenessRequestBudgetNotHeldWhileWaitingForRate(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 2, Burst: 1, MaxInFlight: 1, MaxRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rel, err := p.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	rel() // a's token is spent: its next request waits 500 ms
	waiting := make(chan error, 1)
	go func() {
		rel, err := p.Acquire(ctx, "a")
		if err == nil {
			rel()
		}
		waiting <- err
	}()
	time.Sleep(50 * time.Millisecond) // a waits for its token now
	start := time.Now()
	relB, err := p.Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("b admitted after %v: a's wait for its rate held the budget's only slot", d)
	}
	if n, budget := p.Requests(); n != 1 || budget != 1 {
		t.Errorf("Requests() = %d, %d; want 1, 1", n, budget)
	}
	relB()
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Requests(); n != 0 {
		t.Errorf("Requests() = %d after every release, want 0", n)
	}
}

// No more than MaxRequests requests are admitted at once over many hosts
// with no rate limit, and all are admitted in the end; SetMaxRequests
// changes the budget live and rejects a negative one.
func TestPolitenessRequestBudgetCapsInFlight(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{MaxRequests: 3})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	cur, peak := 0, 0
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			rel, err := p.Acquire(t.Context(), string(rune('a'+i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			cur++
			peak = max(peak, cur)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			cur--
			mu.Unlock()
			rel()
		})
	}
	wg.Wait()
	if peak != 3 {
		t.Errorf("peak requests in flight %d, want 3 (MaxRequests)", peak)
	}
	if err := p.SetMaxRequests(-1); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("SetMaxRequests(-1) = %v, want ErrInvalidLimit", err)
	}
	if _, err := NewPoliteness(PolitenessOptions{MaxRequests: -1}); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("NewPoliteness(MaxRequests -1) = %v, want ErrInvalidLimit", err)
	}
	// Lowered to 1 while one request holds a slot: the next waits until it
	// is released, and ctx's end gives up with nothing held.
	if err := p.SetMaxRequests(1); err != nil {
		t.Fatal(err)
	}
	rel, err := p.Acquire(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(ctx, "y"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire over a full budget = %v, want the deadline", err)
	}
	rel()
	if n, _ := p.Requests(); n != 0 {
		t.Errorf("Requests() = %d after every release, want 0", n)
	}
}

// A request that waited for the budget after its token came takes the
// token when it starts: the spacing of a host's request starts never
// beats the rate (two in flight allowed, so the bucket, not the
// end-of-request restart, spaces them). Had both taken a token before the
// budget wait, they would start together when the budget frees.
func TestPolitenessRequestBudgetKeepsSpacing(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 10, Burst: 1, MaxInFlight: 2, MaxRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// Spend host h's token, then hold the only budget slot elsewhere for
	// 300 ms while h's next two requests wait (their tokens come at 100
	// and 200 ms).
	rel, err := p.Acquire(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	rel()
	hold, err := p.Acquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			rel, err := p.Acquire(ctx, "h")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			rel()
		})
	}
	time.Sleep(300 * time.Millisecond)
	hold()
	wg.Wait()
	if len(starts) == 2 {
		gap := starts[1].Sub(starts[0])
		if gap < 0 {
			gap = -gap
		}
		if gap < 80*time.Millisecond { // 100 ms less scheduling slack
			t.Errorf("h's two requests after the budget wait started %v apart, want >= 100ms (rate 10/s)", gap)
		}
	}
}

// A request whose token came while it waited for the budget starts as soon
// as a budget slot frees, not one more interval later: the token is taken
// when the request starts, so none is spent unused.
func TestPolitenessRequestBudgetLosesNoInterval(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 2, Burst: 1, MaxInFlight: 1, MaxRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rel, err := p.Acquire(ctx, "h") // h's token spent at 0
	if err != nil {
		t.Fatal(err)
	}
	rel()
	hold, err := p.Acquire(ctx, "other") // the only budget slot, until 750 ms
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan time.Time, 1)
	go func() {
		rel, err := p.Acquire(ctx, "h") // its token comes at 500 ms
		if err != nil {
			t.Error(err)
			started <- time.Time{}
			return
		}
		started <- time.Now()
		rel()
	}()
	time.Sleep(750 * time.Millisecond)
	freed := time.Now()
	hold()
	if wait := (<-started).Sub(freed); wait > 150*time.Millisecond {
		t.Errorf("h started %v after the budget slot freed, its token long there; want at once (< 150ms), not at the next token (250ms)", wait)
	}
}
