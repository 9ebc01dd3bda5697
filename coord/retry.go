package coord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// retryPolicy bounds the retries of a ZooKeeper operation after connection
// loss: exponential backoff with jitter, capped per sleep, in number of
// attempts and in total time. It follows the advice of "The Resilient
// ZooKeeper Application" (Hadoop: The Definitive Guide): retry recoverable
// connection loss, never retry session expiry, and never blind-retry a
// non-idempotent operation (retryWrite resolves those).
//
// Hand-written rather than taken from a backoff library because it must know
// ZooKeeper's error classes (connection loss vs session expiry).
type retryPolicy struct {
	attempts int           // maximum number of calls, including the first (>= 1)
	initial  time.Duration // first backoff; each later one doubles, up to max
	max      time.Duration // caps a single backoff
	total    time.Duration // bounds the time from the first call to the start of the last
}

// retryPol is every recipe's policy: 12 attempts, 20ms doubling to 1s,
// within 20s. That outlasts a leader election in a healthy ensemble and a
// typical session timeout, after which either the connection is back or
// the session has expired.
var retryPol = retryPolicy{attempts: 12, initial: 20 * time.Millisecond, max: time.Second, total: 20 * time.Second}

// backoff returns the sleep before retry number n (n = 1 for the first
// retry): min(max, initial*2^(n-1)), with "equal jitter" (a uniformly random
// value in [d/2, d]) so that clients that lost the same server do not retry
// in lockstep.
func (p retryPolicy) backoff(n int) time.Duration {
	d := p.initial
	for i := 1; i < n && d < p.max; i++ {
		d *= 2
	}
	d = min(d, p.max)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// retry calls fn until it succeeds, returns a non-retryable error, or the
// policy or ctx gives up. Only connection loss (isConnectionLoss) is retried,
// so fn must be idempotent; a non-idempotent write goes through retryWrite.
//
// Errors: nil on success; an error wrapping ErrSessionExpired as soon as fn
// reports session expiry (never retried); ctx.Err() (wrapping the last error)
// when ctx is done; the last connection-loss error, wrapped with the attempt
// count, when the policy is exhausted; any other error of fn unchanged.
func (c *Client) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	return retryWith(ctx, retryPol, fn)
}

// retryWith is retry under policy p.
func retryWith(ctx context.Context, p retryPolicy, fn func(ctx context.Context) error) error {
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
		case !isConnectionLoss(err):
			return err
		}
		if attempt >= p.attempts {
			return fmt.Errorf("coord: gave up after %d attempts: %w", attempt, err)
		}
		d := p.backoff(attempt)
		if p.total > 0 && time.Since(start)+d > p.total {
			return fmt.Errorf("coord: gave up after %d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err)
		}
		if !sleepCtx(ctx, d) {
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		}
	}
}

// retryWrite runs write, a non-idempotent write (a multi, a create, a
// compare-and-set), under retry's policy until its outcome is known. A
// write cut off by connection loss may or may not have committed, so it is
// never simply sent again: when settle is not nil, it is called before the
// next attempt to learn the lost attempt's outcome by reading back (the
// version or nonce the write set, a node carrying its GUID): done ends the
// call with err (nil: it committed), !done sends write again. Without
// settle, write must recognize its own earlier commit in the server's
// answer to the next attempt (a claim znode of its own session, a dead
// letter already gone).
//
// Errors: as retry's, and those of write and settle.
func (c *Client) retryWrite(ctx context.Context, write func(ctx context.Context) error, settle func(ctx context.Context) (done bool, err error)) error {
	lost, settled := false, false
	var final error
	err := c.retry(ctx, func(ctx context.Context) error {
		if lost && settle != nil {
			if done, err := settle(ctx); done {
				settled, final = true, err
				return nil
			}
		}
		err := write(ctx)
		lost = isConnectionLoss(err)
		return err
	})
	if settled {
		return final
	}
	return err
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
