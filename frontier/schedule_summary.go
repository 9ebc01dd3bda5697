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
	// Policy is SchedulePolicy of the config the owner computed the due
	// times under: a reader whose config has another (recrawl --now, new
	// bounds or rules) cannot trust Next and Due until the owner's next
	// step (BacklogPending counts every entry as due then).
	Policy uint64
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
// the count is a lower bound; or no whole minute is due but Next is, and
// the count is the earliest minute's, an upper bound). It is never 0
// while Next <= t.
func (s ScheduleSummary) DueBy(t time.Time) (n int64, exact bool) {
	limit := t.Unix() / 60
	for i, b := range s.Due {
		if b.Minute > limit {
			if n == 0 && s.Next > 0 && s.Next <= t.Unix() {
				// The earliest minute holds Next, due by t: count it
				// whole (some of it may fall due later in that minute),
				// so that "nothing due" is never said of a due entry.
				return b.Count, false
			}
			return n, true
		}
		if i == maxDueBuckets-1 {
			return n, false
		}
		n += b.Count
	}
	return n, true
}

// summarize returns the summary of entries whose due minutes (minute ->
// count) are those of minutes plus extra; next is the earliest due
// second. It keeps the maxDueBuckets earliest minutes (a bounded max-heap
// over the distinct minutes: no sort of them all), the last counting every
// later entry.
func summarize(minutes, extra map[int64]int64, entries, next int64) ScheduleSummary {
	s := ScheduleSummary{Entries: entries, Next: next}
	count := func(m int64) int64 { return minutes[m] + extra[m] }
	var early []int64 // the maxDueBuckets earliest distinct minutes, as a max-heap
	var total int64
	consider := func(m int64) {
		if len(early) < maxDueBuckets {
			early = append(early, m)
			for i := len(early) - 1; i > 0 && early[(i-1)/2] < early[i]; i = (i - 1) / 2 {
				early[i], early[(i-1)/2] = early[(i-1)/2], early[i]
			}
			return
		}
		if m >= early[0] {
			return
		}
		early[0] = m
		for i := 0; ; {
			c := 2*i + 1
			if c >= len(early) {
				break
			}
			if c+1 < len(early) && early[c+1] > early[c] {
				c++
			}
			if early[i] >= early[c] {
				break
			}
			early[i], early[c] = early[c], early[i]
			i = c
		}
	}
	for m, n := range minutes {
		if n > 0 {
			total += count(m)
			consider(m)
		}
	}
	for m, n := range extra {
		if n > 0 && minutes[m] <= 0 {
			total += n
			consider(m)
		}
	}
	slices.Sort(early)
	var shown int64
	for i, m := range early {
		n := count(m)
		if i == maxDueBuckets-1 {
			n = total - shown // this minute and every later one
		}
		s.Due = append(s.Due, DueBucket{m, n})
		shown += n
	}
	return s
}

// appendSchedule appends s as uvarint Entries, uvarint Next, Policy (8
// bytes, big-endian), uvarint n,
// n x (uvarint minute gap from the previous (the first from 0), uvarint
// count).
func appendSchedule(out []byte, s ScheduleSummary) []byte {
	out = binary.AppendUvarint(out, uint64(max(s.Entries, 0)))
	out = binary.AppendUvarint(out, uint64(max(s.Next, 0)))
	out = binary.BigEndian.AppendUint64(out, s.Policy)
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
	if err == nil {
		if len(r) < 8 {
			return s, r, fmt.Errorf("%w: truncated at schedule policy", errHostCounts)
		}
		s.Policy, r = binary.BigEndian.Uint64(r), r[8:]
	}
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
