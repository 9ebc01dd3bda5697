package coord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the retries of an idempotent ZooKeeper operation after
// connection loss: exponential backoff with jitter, capped per sleep, in
// number of attempts and in total time. It follows the advice of "The
// Resilient ZooKeeper Application" (Hadoop: The Definitive Guide): retry
// recoverable connection loss, never retry session expiry, and never
// blind-retry a non-idempotent operation.
//
// Hand-written rather than taken from a backoff library because it must know
// ZooKeeper's error classes (connection loss vs session expiry).
type RetryPolicy struct {
	// Attempts is the maximum number of calls, including the first (>= 1).
	Attempts int
	// Initial is the first backoff; each later one doubles, up to Max.
	Initial time.Duration
	// Max caps a single backoff.
	Max time.Duration
	// Total bounds the time spent from the first call to the start of the
	// last one; 0 means no bound besides Attempts and the context.
	Total time.Duration
}

// DefaultRetryPolicy is used by the recipes unless WithRetryPolicy overrides
// it: 12 attempts, 20ms doubling to 1s, within 20s. That outlasts a leader
// election in a healthy ensemble and a typical session timeout, after which
// either the connection is back or the session has expired.
var DefaultRetryPolicy = RetryPolicy{Attempts: 12, Initial: 20 * time.Millisecond, Max: time.Second, Total: 20 * time.Second}

// normalized fills zero fields with DefaultRetryPolicy's values.
func (p RetryPolicy) normalized() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultRetryPolicy.Attempts
	}
	if p.Initial <= 0 {
		p.Initial = DefaultRetryPolicy.Initial
	}
	if p.Max < p.Initial {
		p.Max = p.Initial
	}
	return p
}

// Backoff returns the sleep before retry number n (n = 1 for the first
// retry): min(Max, Initial*2^(n-1)), with "equal jitter" (a uniformly random
// value in [d/2, d]) so that clients that lost the same server do not retry
// in lockstep.
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.normalized()
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	if d > p.Max {
		d = p.Max
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// Retry calls fn until it succeeds, returns a non-retryable error, or the
// policy or ctx gives up. Only connection loss (IsConnectionLoss) is retried,
// so fn must be idempotent, or must itself detect whether an earlier attempt
// committed (as Queue.Put does through its seen marker).
//
// Errors: nil on success; an error wrapping ErrSessionExpired as soon as fn
// reports session expiry (never retried); ctx.Err() (wrapping the last error)
// when ctx is done; the last connection-loss error, wrapped with the attempt
// count, when the policy is exhausted; any other error of fn unchanged.
func Retry(ctx context.Context, p RetryPolicy, fn func(ctx context.Context) error) error {
	p = p.normalized()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(ctx)
		switch {
		case err == nil:
			return nil
		case isExpired(err):
			if errors.Is(err, ErrSessionExpired) {
				return err
			}
			return fmt.Errorf("%w: %w", ErrSessionExpired, err)
		case !IsConnectionLoss(err):
			return err
		}
		if attempt >= p.Attempts {
			return fmt.Errorf("coord: gave up after %d attempts: %w", attempt, err)
		}
		d := p.Backoff(attempt)
		if p.Total > 0 && time.Since(start)+d > p.Total {
			return fmt.Errorf("coord: gave up after %d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// sleepCtx sleeps for d or until ctx is done; it reports whether the full
// sleep happened.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
