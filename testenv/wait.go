package testenv

import (
	"context"
	"testing"
	"time"
)

// Eventually polls cond every 20ms until it returns true, failing t with
// t.Fatalf naming what once d has passed without it holding. cond runs on
// the calling goroutine; it is called at least once.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Context returns a context that ends after d (context.WithTimeout) and is
// cancelled at t's cleanup at the latest.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Sleep waits d or until ctx ends, whichever is first; it reports whether
// it waited the full d.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
