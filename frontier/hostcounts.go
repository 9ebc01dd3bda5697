package frontier

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// HostID returns the id a host key (see Host) has in HostCounts: the
// key's Fingerprint (the first 8 bytes of its SHA-256, big-endian). With
// 8,192 hosts per group the chance that two share an id is about
// n^2/2^65 = 2e-12.
func HostID(host string) uint64 { return Fingerprint(host) }

// MaxHostCounts bounds the hosts a HostCounts keeps, so its encoding stays
// under about 90 KiB in the group's cursor (docs/design.md, "Per-host
// budgets").
const MaxHostCounts = 8192

// HostCounts is one shard group's per-host page counts for
// max_pages_per_host, kept by the group's owner in the annex of the
// group's cursor (Step.Annex), with two totals the owner computed
// when it wrote them.
type HostCounts struct {
	// Pages maps HostID to the URLs moved to the ready window (each fetched or sent to the
	// dead letters) of that host; hosts with no page have no entry.
	Pages map[uint64]int64
	// Held counts the group's backlog records of hosts at their budget
	// kept in the backlog (host_budget_action keep), which no step moves:
	// a crawl whose only backlog is held is done.
	Held int64
	// AtBudget counts the group's hosts whose count reached
	// max_pages_per_host.
	AtBudget int64
	// Schedule is the group's recrawl schedule as the owner last wrote
	// it (zero: none).
	Schedule ScheduleSummary
}

// hostCountsFormat is the first byte of an encoded HostCounts;
// hostCountsFormatSched is format 1 with a ScheduleSummary after the
// totals.
const (
	hostCountsFormat      = 1
	hostCountsFormatSched = 2
)

// errHostCounts is wrapped by every DecodeHostCounts error.
var errHostCounts = errors.New("frontier: bad host counts")

// Trim forgets the smallest counts (ties: the smaller id) until at most
// limit hosts are left, and returns how many it forgot. Hosts at the
// budget have the largest counts, so they are forgotten last.
func (h *HostCounts) Trim(limit int) int {
	over := len(h.Pages) - limit
	if over <= 0 {
		return 0
	}
	ids := make([]uint64, 0, len(h.Pages))
	for id := range h.Pages {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uint64) int {
		return cmp.Or(cmp.Compare(h.Pages[a], h.Pages[b]), cmp.Compare(a, b))
	})
	for _, id := range ids[:over] {
		delete(h.Pages, id)
	}
	return over
}

// Encode returns h as: format byte 1, uvarint Held, uvarint AtBudget,
// (format 2, when h.Schedule has entries: the schedule, appendSchedule),
// uvarint n, then n x (uvarint gap from the previous id (the first from 0)
// in increasing id order, uvarint count); entries with a count <= 0 are
// left out. It returns nil when h holds nothing (no entry, Held and
// AtBudget 0), so a crawl without budgets writes no annex.
func (h HostCounts) Encode() []byte {
	ids := make([]uint64, 0, len(h.Pages))
	for id, n := range h.Pages {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	sched := h.Schedule.Entries > 0
	if len(ids) == 0 && h.Held <= 0 && h.AtBudget <= 0 && !sched {
		return nil
	}
	slices.Sort(ids)
	out := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(ids)*12)
	out = append(out, hostCountsFormat)
	if sched {
		out[0] = hostCountsFormatSched
	}
	out = binary.AppendUvarint(out, uint64(max(h.Held, 0)))
	out = binary.AppendUvarint(out, uint64(max(h.AtBudget, 0)))
	if sched {
		out = appendSchedule(out, h.Schedule)
	}
	out = binary.AppendUvarint(out, uint64(len(ids)))
	prev := uint64(0)
	for _, id := range ids {
		out = binary.AppendUvarint(out, id-prev)
		out = binary.AppendUvarint(out, uint64(h.Pages[id]))
		prev = id
	}
	return out
}

// DecodeHostTotals reads only the totals at the head of Encode's output
// (HostCounts.Held and AtBudget), without the per-host list: what status
// and the done check need, every poll, of every group. Empty data is zero;
// errors wrap errHostCounts (unknown format, truncated).
func DecodeHostTotals(data []byte) (held, atBudget int64, err error) {
	if len(data) == 0 {
		return 0, 0, nil
	}
	if data[0] != hostCountsFormat && data[0] != hostCountsFormatSched {
		return 0, 0, fmt.Errorf("%w: format %d, want %d or %d", errHostCounts, data[0], hostCountsFormat, hostCountsFormatSched)
	}
	r := data[1:]
	var v [2]uint64
	for i, what := range []string{"held", "at budget"} {
		x, k := binary.Uvarint(r)
		if k <= 0 || x > 1<<62 {
			return 0, 0, fmt.Errorf("%w: truncated or out of range at %s", errHostCounts, what)
		}
		v[i], r = x, r[k:]
	}
	return int64(v[0]), int64(v[1]), nil
}

// DecodeHostCounts parses Encode's output; empty data (a cursor without an
// annex) is zero counts. Errors wrap errHostCounts and say what is wrong:
// an unknown format, a truncated or oversized list, ids out of order,
// trailing bytes.
func DecodeHostCounts(data []byte) (HostCounts, error) {
	h := HostCounts{Pages: map[uint64]int64{}}
	if len(data) == 0 {
		return h, nil
	}
	if data[0] != hostCountsFormat && data[0] != hostCountsFormatSched {
		return h, fmt.Errorf("%w: format %d, want %d or %d", errHostCounts, data[0], hostCountsFormat, hostCountsFormatSched)
	}
	r := data[1:]
	var err error
	next := func(what string) uint64 {
		if err != nil {
			return 0
		}
		v, k := binary.Uvarint(r)
		if k <= 0 || (what != "host id" && v > 1<<62) {
			err = fmt.Errorf("%w: truncated or out of range at %s", errHostCounts, what)
			return 0
		}
		r = r[k:]
		return v
	}
	h.Held, h.AtBudget = int64(next("held")), int64(next("at budget"))
	if err == nil && data[0] == hostCountsFormatSched {
		h.Schedule, r, err = decodeSchedule(r)
	}
	n := next("count")
	if err == nil && n > uint64(len(r)/2) {
		return h, fmt.Errorf("%w: %d hosts in %d bytes", errHostCounts, n, len(r))
	}
	prev := uint64(0)
	for i := uint64(0); i < n && err == nil; i++ {
		gap, c := next("host id"), next("host count")
		if err == nil && i > 0 && gap == 0 {
			return h, fmt.Errorf("%w: host %d of %d repeats an id", errHostCounts, i, n)
		}
		prev += gap
		h.Pages[prev] = int64(c)
	}
	if err == nil && len(r) != 0 {
		err = fmt.Errorf("%w: %d trailing bytes", errHostCounts, len(r))
	}
	return h, err
}

// DecodeSchedule reads the ScheduleSummary of an annex (Encode's output)
// without the per-host list: what status and the done check need. Empty
// data and format 1 are no schedule; errors wrap errHostCounts.
func DecodeSchedule(data []byte) (ScheduleSummary, error) {
	if len(data) == 0 || data[0] == hostCountsFormat {
		return ScheduleSummary{}, nil
	}
	if data[0] != hostCountsFormatSched {
		return ScheduleSummary{}, fmt.Errorf("%w: format %d, want %d or %d", errHostCounts, data[0], hostCountsFormat, hostCountsFormatSched)
	}
	r := data[1:]
	for _, what := range []string{"held", "at budget"} {
		_, k := binary.Uvarint(r)
		if k <= 0 {
			return ScheduleSummary{}, fmt.Errorf("%w: truncated at %s", errHostCounts, what)
		}
		r = r[k:]
	}
	s, _, err := decodeSchedule(r)
	return s, err
}
