package frontier

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// maxDueBuckets bounds the due minutes a ScheduleSummary keeps.
const maxDueBuckets = 64

// ScheduleSummary is what a group's owner last wrote of its recrawl
// schedule (docs/design.md, "Recrawl"): the schedule entries waiting in
// the backlog and the earliest of their due times, so that status and the
// done check need no batch read. It travels in the cursor's annex
// (HostCounts.Schedule), written in the same fenced multi as the entries.
type ScheduleSummary struct {
	// Entries counts the schedule entries in the backlog (not moved yet).
	Entries int64
	// Next is the earliest due time, Unix seconds (0 when Entries is 0;
	// a time in the past when an entry is overdue).
	Next int64
	// Due lists the earliest due minutes: Unix minutes (a due time
	// rounded up to the minute) in increasing order, with the entries due
	// at each; at most maxDueBuckets, the last of a full list counting
	// every entry due at or after its minute.
	Due []DueBucket
}

// DueBucket is one minute of ScheduleSummary.Due.
type DueBucket struct {
	Minute int64
	Count  int64
}

// DueBy returns the entries due at or before t and whether the count is
// exact (false: t lies past the summary's last minute of a full list, so
// the count is a lower bound).
func (s ScheduleSummary) DueBy(t time.Time) (n int64, exact bool) {
	limit := t.Unix() / 60
	for i, b := range s.Due {
		if b.Minute > limit {
			return n, true
		}
		if i == maxDueBuckets-1 {
			return n, false
		}
		n += b.Count
	}
	return n, true
}

// summarize returns the summary of entries with the given due minutes
// (minute -> count), next the earliest due second.
func summarize(minutes map[int64]int64, entries, next int64) ScheduleSummary {
	s := ScheduleSummary{Entries: entries, Next: next}
	keys := make([]int64, 0, len(minutes))
	for m, n := range minutes {
		if n > 0 {
			keys = append(keys, m)
		}
	}
	slices.Sort(keys)
	var rest int64
	for i, m := range keys {
		if i < maxDueBuckets-1 {
			s.Due = append(s.Due, DueBucket{m, minutes[m]})
			continue
		}
		if i == maxDueBuckets-1 {
			s.Due = append(s.Due, DueBucket{Minute: m})
		}
		rest += minutes[m]
	}
	if len(s.Due) == maxDueBuckets {
		s.Due[maxDueBuckets-1].Count = rest
	}
	return s
}

// appendSchedule appends s as uvarint Entries, uvarint Next, uvarint n,
// n x (uvarint minute gap from the previous (the first from 0), uvarint
// count).
func appendSchedule(out []byte, s ScheduleSummary) []byte {
	out = binary.AppendUvarint(out, uint64(max(s.Entries, 0)))
	out = binary.AppendUvarint(out, uint64(max(s.Next, 0)))
	out = binary.AppendUvarint(out, uint64(len(s.Due)))
	prev := int64(0)
	for _, b := range s.Due {
		out = binary.AppendUvarint(out, uint64(b.Minute-prev))
		out = binary.AppendUvarint(out, uint64(b.Count))
		prev = b.Minute
	}
	return out
}

// decodeSchedule parses appendSchedule's output at the start of r and
// returns the rest. Errors wrap errHostCounts.
func decodeSchedule(r []byte) (ScheduleSummary, []byte, error) {
	var s ScheduleSummary
	var err error
	next := func(what string) int64 {
		if err != nil {
			return 0
		}
		v, k := binary.Uvarint(r)
		if k <= 0 || v > 1<<62 {
			err = fmt.Errorf("%w: truncated or out of range at schedule %s", errHostCounts, what)
			return 0
		}
		r = r[k:]
		return int64(v)
	}
	s.Entries, s.Next = next("entries"), next("next")
	n := next("buckets")
	if err == nil && n > maxDueBuckets {
		return s, r, fmt.Errorf("%w: %d due buckets, limit %d", errHostCounts, n, maxDueBuckets)
	}
	prev := int64(0)
	for i := int64(0); i < n && err == nil; i++ {
		prev += next("minute")
		s.Due = append(s.Due, DueBucket{Minute: prev, Count: next("count")})
	}
	return s, r, err
}
