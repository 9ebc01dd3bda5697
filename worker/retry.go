package worker

import (
	"context"
	"time"
)

// retryPolicy is how the worker calls a whole step again after it failed:
// a post of links, a claim's end, joining the worker list. coord already
// retries each ZooKeeper request through brief connection loss
// (coord/retry.go, "The Resilient ZooKeeper Application"); these policies
// cover the failures that outlast it (a quorum loss, an id still held by a
// previous session). Hand-written beside coord's because the steps differ
// in which errors they retry and for how long; a backoff library would add
// a dependency for a dozen lines.
type retryPolicy struct {
	// attempts bounds the calls, the first included; 0: no bound, retry
	// for as long as ctx lives.
	attempts int
	// pause returns the wait before retry n (n = 1 for the first retry).
	pause func(n int) time.Duration
}

// every returns a pause of d before each retry.
func every(d time.Duration) func(int) time.Duration {
	return func(int) time.Duration { return d }
}

// retry calls op until it returns nil or an error that retryable rejects,
// p's attempts are used up, or ctx ends; failed, if not nil, is called with
// the retry number and the error before each pause. It returns nil or op's
// last error; a ctx that ends, during a call or a pause, ends it with op's
// last error.
func retry(ctx context.Context, p retryPolicy, retryable func(error) bool, failed func(n int, err error), op func(ctx context.Context) error) error {
	for n := 1; ; n++ {
		err := op(ctx)
		if err == nil || ctx.Err() != nil || !retryable(err) || (p.attempts > 0 && n >= p.attempts) {
			return err
		}
		if failed != nil {
			failed(n, err)
		}
		if !sleepCtx(ctx, p.pause(n)) {
			return err
		}
	}
}

// anyError retries every error.
func anyError(error) bool { return true }

// sleepCtx waits d or until ctx ends; it reports whether the whole wait
// passed (sleepOrChange with no change channel).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	return sleepOrChange(ctx, d, nil, nil, nil) == nil
}
