package report

// Number and list formatting shared by the table and BENCHMARKS.md.

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// english groups thousands with commas (CLDR's English number format).
var english = message.NewPrinter(language.English)

// num formats v with d decimals and thousands separators; "—" for NaN and ±Inf (not taken).
func num(v float64, d int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return english.Sprintf("%.*f", d, v)
}

// f0, f1 and f2 format a number of any of the report's kinds (float) with 0, 1 and 2 decimals.
func f0(v any) string { return num(float(v), 0) }
func f1(v any) string { return num(float(v), 1) }
func f2(v any) string { return num(float(v), 2) }

// met renders a target's verdict.
func met(ok bool) string { return map[bool]string{true: "met", false: "**NOT MET**"}[ok] }

// signed formats a change in MB with its sign; "±0.0" within 0.05.
func signed(v float64) string {
	switch {
	case math.Abs(v) < 0.05:
		return "±0.0"
	case v > 0:
		return "+" + f1(v)
	}
	return f1(v)
}

// mb formats bytes as MB with one decimal; kbMB KiB as MB without.
func mb(bytes int64) string { return f1(float64(bytes) / (1 << 20)) }
func kbMB(kb int64) string  { return f0(float64(kb) / 1024) }

// joinNums formats values with d decimals, ", " between; "—" for none.
func joinNums[T int | float64](v []T, d int) string {
	if len(v) == 0 {
		return "—"
	}
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = num(float64(x), d)
	}
	return strings.Join(out, ", ")
}

// opsLine formats counts by name (requests by op, dropped links by reason), most
// frequent first, with errs[name] in parentheses when positive.
func opsLine[V int64 | float64](ops, errs map[string]V) string {
	var parts []string
	for _, k := range slices.SortedFunc(maps.Keys(ops), func(a, b string) int { return cmp.Or(cmp.Compare(ops[b], ops[a]), cmp.Compare(a, b)) }) {
		s := k + " " + f0(float64(ops[k]))
		if errs[k] > 0 {
			s += " (" + f0(float64(errs[k])) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// dropLine formats dropped-link counts by reason, largest first; "none" for none.
func dropLine(m map[string]int64) string { return orNone(opsLine(m, nil)) }

// orNone is s, or "none" when s is empty.
func orNone(s string) string { return cmp.Or(s, "none") }

// lastLine returns the last non-empty line of s (a command's summary).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// fsyncCell formats a run's group fsync figures: pages per round · fsync ms per page ("-": not recorded).
func fsyncCell(pages, rounds, s float64) string {
	perRound, msPer := "-", "-"
	if rounds > 0 {
		perRound = f1(pages / rounds)
	}
	if pages > 0 && s > 0 {
		msPer = f2(s * 1000 / pages)
	}
	return perRound + " · " + msPer
}
