package frontier

import (
	"testing"
	"time"
)

// summarize keeps the earliest due minutes, the last bucket counting the
// rest; the annex round-trips it; DueBy counts up to a time.
func TestScheduleSummary(t *testing.T) {
	minutes := map[int64]int64{}
	for m := int64(1000); m < 1100; m++ {
		minutes[m] = 2
	}
	s := summarize(minutes, map[int64]int64{5: 1, 1000: 1}, 202, 290)
	if len(s.Due) != maxDueBuckets || s.Due[0] != (DueBucket{5, 1}) || s.Due[1] != (DueBucket{1000, 3}) {
		t.Fatalf("buckets %v", s.Due[:2])
	}
	var sum int64
	for _, b := range s.Due {
		sum += b.Count
	}
	if sum != 202 {
		t.Fatalf("buckets count %d entries, want 202", sum)
	}
	if n, exact := s.DueBy(time.Unix(1010*60, 0)); n != 1+3+2*10 || !exact {
		t.Fatalf("DueBy minute 1010: %d %v", n, exact)
	}
	if _, exact := s.DueBy(time.Unix(1099*60, 0)); exact {
		t.Fatal("DueBy past the last bucket must say it is a lower bound")
	}
	h := HostCounts{Pages: map[uint64]int64{7: 3}, Held: 1, Schedule: s}
	back, err := DecodeHostCounts(h.Encode())
	if err != nil || back.Schedule.Entries != 202 || back.Schedule.Next != 290 || len(back.Schedule.Due) != maxDueBuckets || back.Pages[7] != 3 {
		t.Fatalf("annex round trip: %+v, %v", back, err)
	}
	if got, err := DecodeSchedule(h.Encode()); err != nil || got.Entries != 202 {
		t.Fatalf("DecodeSchedule: %+v, %v", got, err)
	}
	if held, _, err := DecodeHostTotals(h.Encode()); err != nil || held != 1 {
		t.Fatalf("totals of a format 2 annex: %d, %v", held, err)
	}
	if b := (HostCounts{Pages: map[uint64]int64{}, Schedule: ScheduleSummary{Entries: 1, Next: 5}}).Encode(); b == nil || b[0] != hostCountsFormatSched {
		t.Fatalf("a schedule alone must be written: %x", b)
	}
}

// An entry due earlier in the current minute is due now: the summary
// rounds due times up to the minute, so a count of whole minutes alone
// would say "nothing due" (and let an --exit-when-done worker leave) for
// up to a minute after `crawlctl recrawl --now` or `--revisit-from`.
func TestDueByCountsTheCurrentMinute(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC)
	due := now.Unix() - 10 // 12:00:20, in the minute that ends at 12:01
	s := summarize(map[int64]int64{dueMinute(due): 3}, nil, 3, due)
	if n, _ := s.DueBy(now); n != 3 {
		t.Errorf("DueBy(%v) = %d with Next %v; want 3", now, n, time.Unix(due, 0).UTC())
	}
	later := summarize(map[int64]int64{dueMinute(now.Unix() + 20): 2}, nil, 2, now.Unix()+20)
	if n, _ := later.DueBy(now); n != 0 {
		t.Errorf("DueBy(%v) = %d for entries due 20 s later; want 0", now, n)
	}
}
