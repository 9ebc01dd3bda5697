package report

// Number and list formatting shared by the table and BENCHMARKS.md.

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Formatting helpers: "—" for a missing figure.
func f0(v float64) string { return num(v, 0) }
func f1(v float64) string { return num(v, 1) }
func f2(v float64) string { return num(v, 2) }

// num formats v with d decimals and thousands separators; "—" for NaN and
// ±Inf.
func num(v float64, d int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	s := fmt.Sprintf("%.*f", d, v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// met renders a target's verdict.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**NOT MET**"
}

// yesNo renders a forceSync setting in a table cell.
func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// signed formats a change in MB with its sign.
func signed(v float64) string {
	if v < 0.05 && v > -0.05 {
		return "±0.0"
	}
	if v > 0 {
		return "+" + f1(v)
	}
	return f1(v)
}

// mb formats bytes as MB with one decimal.
func mb(bytes int64) string { return f1(float64(bytes) / (1 << 20)) }

// kbMB formats KiB as MB without decimals.
func kbMB(kb int64) string { return f0(float64(kb) / 1024) }

// joinFloats formats values with d decimals, ", " between; "—" for none.
func joinFloats(v []float64, d int) string {
	var out []string
	for _, x := range v {
		out = append(out, num(x, d))
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// opsLine formats counts by name (requests by op, dropped links by
// reason), most frequent first, with errs[name] in parentheses when
// positive.
func opsLine(ops, errs map[string]float64) string {
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := names[i], names[j]
		return ops[a] > ops[b] || ops[a] == ops[b] && a < b
	})
	parts := make([]string, 0, len(names))
	for _, k := range names {
		s := k + " " + f0(ops[k])
		if errs[k] > 0 {
			s += " (" + f0(errs[k]) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// dropLine formats dropped-link counts by reason, largest first; "none"
// for none.
func dropLine(m map[string]int64) string {
	f := map[string]float64{}
	for k, v := range m {
		f[k] = float64(v)
	}
	return orNone(opsLine(f, nil))
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// lastLine returns the last non-empty line of s (a command's summary).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// maxOf returns the largest of v, NaN for none.
func maxOf(v []float64) float64 {
	m := math.NaN()
	for _, x := range v {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}

// perRound formats pages per fsync round ("-" when no round was recorded,
// e.g. a results.json from before the fsync metric).
func perRound(pages, rounds float64) string {
	if rounds <= 0 {
		return "-"
	}
	return f1(pages / rounds)
}

// fsyncCell formats the group fsync figures of a run: pages per fsync
// round · fsync ms per page.
func fsyncCell(pages, rounds, s float64) string {
	return perRound(pages, rounds) + " · " + msPer(s, pages)
}

// msPer formats seconds spent per page in milliseconds ("-" without pages).
func msPer(s, pages float64) string {
	if pages <= 0 || s <= 0 {
		return "-"
	}
	return f2(s * 1000 / pages)
}
