package worker

import "time"

// candidate is what the claim filter (reserveFor) needs of a ready item to
// turn it down: its politeness key and not_before (Unix nanoseconds, 0 for
// none). The filter keeps it in the item's note (coord.Queue.Take's
// reserve), which lives as long as that version of the item's data waits
// in coord's cache: 56 bytes an item waiting in an owned shard (measured:
// the note, the boxed candidate and a 15-byte key string of its own), and
// the item's URL string, which the key slices and so keeps.
type candidate struct {
	key       string
	notBefore int64
}

// notBeforeNanos returns t as a candidate's notBefore.
func notBeforeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
