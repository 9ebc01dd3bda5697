package worker

import "time"

// candidate is what the claim filter (reserveFor) needs of a ready item to
// turn it down: its politeness key, not_before (Unix nanoseconds, 0 for
// none) and, once its key's turn was found further than claimLead, when
// that lead begins (local Unix nanoseconds, 0 for none: until then the
// item is turned down without asking the politeness state again). The
// filter keeps it in the item's note (coord.Queue.Take's reserve), which
// lives as long as that version of the item's data waits in coord's
// cache: 64 bytes an item waiting in an owned shard with a 15-byte key
// (56 measured before leadFrom, which moves the boxed candidate from Go's
// 24-byte size class to the 32-byte one), and the item's URL string,
// which the key slices and so keeps.
type candidate struct {
	key       string
	notBefore int64
	leadFrom  int64
}

// notBeforeNanos returns t as a candidate's notBefore.
func notBeforeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
