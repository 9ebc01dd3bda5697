package fetch

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// minBackoffStep is the smallest interval the 429/503 backoff uses as its
// base (Answered): under an unlimited rate the first 429 or 503 spaces the
// key's requests 1 s apart (twice the step).
const minBackoffStep = 500 * time.Millisecond

// SetMaxHold sets, live, the cap of a key's hold after a 429 or 503 answer
// (Answered): a Retry-After longer than d holds for d, and the backoff
// interval grows to d at most. 0 turns both off: Retry-After is ignored and
// no backoff is kept. Holds and backoffs already longer than the new cap
// are cut to it (0: dropped) and waiters in Acquire recompute at once.
// Errors: a negative d, changing nothing.
func (p *Politeness) SetMaxHold(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("politeness: max hold %v: %w (want >= 0, 0 = off)", d, ErrInvalidLimit)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maxHold == d {
		return nil
	}
	p.maxHold = d
	now := time.Now()
	for _, hs := range p.hosts {
		hs.backoff = min(hs.backoff, d)
		if limit := now.Add(d); hs.heldUntil.After(limit) {
			hs.heldUntil = limit
		}
		if d == 0 {
			hs.heldUntil = time.Time{}
		}
		close(hs.limitsChanged)
		hs.limitsChanged = make(chan struct{})
	}
	return nil
}

// MaxHold returns the cap set by SetMaxHold (0 = off).
func (p *Politeness) MaxHold() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxHold
}

// Answered records the HTTP status of a response from host (the caller's
// host key) and the wait its Retry-After asked for (ParseRetryAfter; 0 or
// negative: none). It may be called before or after the request's release;
// a request that got no response is not reported.
//
// A 429 or 503 (Throttled) holds the key: no request to it starts before
// now + max(retryAfter, backoff), where retryAfter is capped at MaxHold and
// backoff is the key's backoff interval, doubled by each 429 or 503 from
// max(the key's rate interval or Crawl-delay, minBackoffStep), at most
// MaxHold. While backoff is positive, requests to the key also start at
// least backoff apart. A 1xx, 2xx, 3xx or 4xx answer (other than 429)
// halves the backoff, which ends once it is no longer than that base: the
// key is back at its configured rate; another 5xx leaves it as it is. A hold only ever delays: the rate, Crawl-delay and
// adaptive delay still apply after it.
//
// It returns the key's next allowed start (the zero time when the key is
// not held at all) and whether retryAfter was over MaxHold and cut to it
// for the first time since the key's backoff last ended (or its state was
// evicted), so that a caller logging it says so once per episode.
// With MaxHold 0 it does nothing and returns the zero time and false.
func (p *Politeness) Answered(host string, status int, retryAfter time.Duration) (next time.Time, capped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maxHold <= 0 || host == "" {
		return time.Time{}, false
	}
	now := time.Now()
	hs := p.hostLocked(host, now)
	hs.lastUsed = now
	base := minBackoffStep
	if lim := hs.lim.Limit(); lim != rate.Inf && lim > 0 {
		base = max(base, time.Duration(float64(time.Second)/float64(lim)))
	}
	switch {
	case Throttled(status):
		hs.backoff = min(p.maxHold, 2*max(hs.backoff, base))
		if retryAfter > p.maxHold {
			retryAfter, capped = p.maxHold, !hs.capNoted
			hs.capNoted = true
		}
		if until := now.Add(max(retryAfter, hs.backoff)); until.After(hs.heldUntil) {
			hs.heldUntil = until
		}
	case status > 0 && status < 500 && hs.backoff > 0:
		hs.backoff /= 2
		if hs.backoff <= base {
			hs.backoff, hs.capNoted = 0, false
		}
		close(hs.limitsChanged) // a shorter spacing: waiters recompute
		hs.limitsChanged = make(chan struct{})
	}
	if next = heldLocked(hs); !next.After(now) {
		next = time.Time{}
	}
	return next, capped
}

// HeldUntil returns host's next allowed start under its hold (Answered):
// the zero time if it is not held now.
func (p *Politeness) HeldUntil(host string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.hosts[host]
	if hs == nil {
		return time.Time{}
	}
	if t := heldLocked(hs); t.After(time.Now()) {
		return t
	}
	return time.Time{}
}

// heldLocked is when hs's hold ends: the later of heldUntil and, while a
// backoff runs, the last start plus the backoff. Called with p.mu held.
func heldLocked(hs *hostState) time.Time {
	t := hs.heldUntil
	if hs.backoff > 0 && !hs.lastStart.IsZero() {
		if s := hs.lastStart.Add(hs.backoff); s.After(t) {
			t = s
		}
	}
	return t
}

// waitHold waits until hs's hold (heldLocked) has passed. A hold extended
// meanwhile is waited for as well; a shortened one or a cap change
// (limitsChanged) wakes the waiter to recompute. Errors: ctx's.
func (p *Politeness) waitHold(ctx context.Context, hs *hostState) error {
	return p.waitLeft(ctx, hs, func() time.Duration { return time.Until(heldLocked(hs)) })
}

// NextTurn returns how long a request to host must still wait for its
// turn as far as time goes: the longest of its rate limiter's next token
// (the per-host rate or Crawl-delay), its adaptive delay and its hold
// (HeldUntil); 0 when it may start now or the host has no state here.
// It does not count the host's in-flight slots nor the request budget,
// which Acquire waits for as well. A caller deciding when to prepare a
// request (the worker claims an item about a claim's round trip before
// its key's turn) calls it instead of waiting in Acquire.
func (p *Politeness) NextTurn(host string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.hosts[host]
	if hs == nil {
		return 0
	}
	now := time.Now()
	d := max(tokenWaitLocked(hs.lim, now), p.adaptiveWaitLocked(hs, now))
	if t := heldLocked(hs); t.After(now) {
		d = max(d, t.Sub(now))
	}
	return d
}
