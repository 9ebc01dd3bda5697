package worker

import (
	"context"
	"errors"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// deadLetterPause is how long a claim loop waits after an undecodable item
// could not be moved to the dead letters and was released instead, so that
// claiming it again does not spin.
const deadLetterPause = time.Second

// failUndecodable moves the claimed item whose data does not decode
// (decodeErr) to the dead letters with Claim.Fail under
// max_dead_letters (past it the item is completed, its data kept only in
// this log line), retried through connection loss like every finisher
// (persist). If that still fails (for example the dead letter's znode
// already exists, or its ACL refuses us), the claim is released, so the
// item is not held for the rest of the session's life, and the loop pauses
// deadLetterPause before claiming again. It reports whether the item left
// the queue.
func (w *Worker) failUndecodable(ctx context.Context, claim *coord.Claim, decodeErr error) bool {
	w.log.Error("undecodable queue item moved to failed", "item", claim.Name(), "data", string(claim.Data()), "error", decodeErr)
	rec := failedRecord(claim.Data(), decodeErr.Error())
	pseudo := frontier.Item{URL: "item " + claim.Name()}
	var max int64
	if live := w.current(); live != nil {
		max = live.cfg.MaxDeadLetters
	}
	kept := false
	err := w.persist(ctx, "fail", pseudo, func(ctx context.Context) (err error) {
		kept, err = claim.Fail(ctx, rec, max)
		return err
	})
	switch {
	case err == nil && !kept:
		w.log.Warn("undecodable queue item completed, not kept: R/failed is at max_dead_letters", "item", claim.Name())
		w.counters.drop(dropDeadLetter, 1)
		w.metrics.dropped(dropDeadLetter, 1)
		return true
	case err == nil:
		return true
	case errors.Is(err, coord.ErrClaimLost), errors.Is(err, coord.ErrGone):
		return false // the claim or the item is gone already: nothing is held
	}
	w.log.Error("moving the undecodable item to failed failed; releasing its claim",
		"item", claim.Name(), "error", err)
	w.abandon(ctx, claim, pseudo, err)
	sleepCtx(ctx, deadLetterPause)
	return false
}
