package fetch

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"
)

// ParseRetryAfter reads delta-seconds and the three HTTP-date forms, gives
// 0 for a date already past, the largest duration for a delta too long for
// one, and ErrBadRetryAfter for anything else.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"31536000", 365 * 24 * time.Hour},
		{"99999999999999999999999", time.Duration(math.MaxInt64)},
		{"Fri, 27 Nov 2026 02:00:30 GMT", 30 * time.Second},     // IMF-fixdate
		{"Friday, 27-Nov-26 02:01:00 GMT", time.Minute},         // RFC 850
		{"Fri Nov 27 03:00:00 2026", time.Hour},                 // asctime
		{"Thu, 26 Nov 2026 02:00:00 GMT", 0},                    // past
		{"Fri, 27 Nov 2027 02:00:00 GMT", 365 * 24 * time.Hour}, // a year ahead
	}
	for _, c := range cases {
		got, err := ParseRetryAfter(c.in, now)
		if err != nil || got != c.want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", " ", "-5", "1.5", "+3", "3s", "soon", "Fri, 27 Nov 2026", "27 Nov 2026 02:00:30 GMT"} {
		if got, err := ParseRetryAfter(bad, now); !errors.Is(err, ErrBadRetryAfter) {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want ErrBadRetryAfter", bad, got, err)
		}
	}
	if !Throttled(http.StatusTooManyRequests) || !Throttled(http.StatusServiceUnavailable) || Throttled(500) || Throttled(200) {
		t.Error("Throttled: want true for 429 and 503 only")
	}
}

// near reports whether t is within tol of want.
func near(t, want time.Time, tol time.Duration) bool {
	d := t.Sub(want)
	return d > -tol && d < tol
}

// A 429 with Retry-After holds the key: Acquire returns only once it has
// passed, measured here; another key is not held; a value over the cap (a
// year) holds for the cap and says so.
func TestPolitenessRetryAfterHolds(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if next, capped := p.Answered("h:80", 429, time.Second); !next.IsZero() || capped {
		t.Fatalf("with max hold 0 (off): next %v capped %v, want nothing held", next, capped)
	}
	if err := p.SetMaxHold(-time.Second); !errors.Is(err, ErrInvalidLimit) {
		t.Fatalf("SetMaxHold(-1s) = %v, want ErrInvalidLimit", err)
	}
	if err := p.SetMaxHold(time.Hour); err != nil {
		t.Fatal(err)
	}
	const ra = 400 * time.Millisecond
	start := time.Now()
	next, capped := p.Answered("h:80", 429, ra)
	if capped || !near(next, start.Add(max(ra, 2*minBackoffStep)), 50*time.Millisecond) {
		t.Fatalf("Answered(429, %v) = %v (in %v), capped %v", ra, next, time.Until(next), capped)
	}
	if !p.HeldUntil("h:80").Equal(next) || !p.HeldUntil("other:80").IsZero() {
		t.Fatal("HeldUntil disagrees with Answered")
	}
	release, err := p.Acquire(context.Background(), "other:80")
	if err != nil || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("another key waited %v (err %v)", time.Since(start), err)
	}
	release()
	release, err = p.Acquire(context.Background(), "h:80")
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Now(); got.Before(next) {
		t.Fatalf("admitted %v before the hold ended", next.Sub(got))
	}
	release()

	if err := p.SetMaxHold(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	next, capped = p.Answered("y:80", 503, 365*24*time.Hour)
	if !capped || !near(next, start.Add(300*time.Millisecond), 50*time.Millisecond) {
		t.Fatalf("a year's Retry-After: next in %v capped %v, want 300ms and capped", time.Until(next), capped)
	}
	if _, capped := p.Answered("y:80", 503, 365*24*time.Hour); capped {
		t.Fatal("a second capped Retry-After of the same episode reported again")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(ctx, "y:80"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire during the hold = %v, want the deadline", err)
	}
}

// Consecutive 429s without Retry-After double the key's backoff from
// twice its rate interval, up to the cap; other answers halve it back to
// none; while it runs, request starts are spaced by it.
func TestPolitenessBackoff(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetMaxHold(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	backoff := func() time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.hosts["h:80"].backoff
	}
	for _, want := range []time.Duration{2, 4, 5, 5} {
		p.Answered("h:80", 429, 0)
		if got := backoff(); got != want*time.Second {
			t.Fatalf("after a 429: backoff %v, want %v", got, want*time.Second)
		}
	}
	for _, want := range []time.Duration{2500 * time.Millisecond, 1250 * time.Millisecond, 0, 0} {
		p.Answered("h:80", 200, 0)
		if got := backoff(); got != want {
			t.Fatalf("after a 200: backoff %v, want %v", got, want)
		}
	}
	p.Answered("h:80", 500, 0)
	if got := backoff(); got != 0 {
		t.Fatalf("a 500 started a backoff: %v", got)
	}

	// Unlimited rate: the first step is 1 s; starts are spaced by it.
	q, err := NewPoliteness(PolitenessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetMaxHold(time.Minute); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	hs := q.hostLocked("u:80", time.Now())
	hs.backoff = 300 * time.Millisecond // as after a 429 under a fast rate, without waiting 1 s
	q.mu.Unlock()
	var starts []time.Time
	for range 3 {
		release, err := q.Acquire(context.Background(), "u:80")
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, time.Now())
		release()
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 300*time.Millisecond {
			t.Errorf("starts %d and %d %v apart under a 300ms backoff", i-1, i, gap)
		}
	}
	// Turning the cap off drops the backoff and frees waiters at once.
	if err := q.SetMaxHold(0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	release, err := q.Acquire(context.Background(), "u:80")
	if err != nil || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("after SetMaxHold(0): waited %v (err %v)", time.Since(start), err)
	}
	release()
}

// A held key is not evicted while its hold lasts, so the hold is not lost.
func TestPolitenessHoldSurvivesSweep(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{IdleTTL: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetMaxHold(time.Hour); err != nil {
		t.Fatal(err)
	}
	p.Answered("h:80", 429, 10*time.Minute)
	time.Sleep(40 * time.Millisecond)
	p.mu.Lock()
	p.sweepLocked(time.Now())
	p.mu.Unlock()
	if p.HeldUntil("h:80").IsZero() {
		t.Fatal("the held key was evicted")
	}
}
