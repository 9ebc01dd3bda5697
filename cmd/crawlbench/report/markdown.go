package report

// BENCHMARKS.md around the table (the template benchmarks.md.tmpl) and its functions.

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"time"
)

//go:embed benchmarks.md.tmpl
var markdownText string

// Markdown renders BENCHMARKS.md around table (the output of Table).
func (r *Results) Markdown(table string) string {
	return render("BENCHMARKS.md", markdownText, r, template.FuncMap{"table": func() string { return table }})
}

// markdownFuncs are the functions benchmarks.md.tmpl calls beside the table's.
var markdownFuncs = template.FuncMap{
	"mul":         func(a, b int) int { return a * b },
	"div":         func(a, b int) int { return a / max(b, 1) },
	"ratio":       func(a, b any) float64 { return float(a) / float(b) },
	"pct":         func(v float64) float64 { return v * 100 },
	"ticks":       func(tickMS int64, n float64) float64 { return n * float64(tickMS) / 1000 },
	"perPage":     func(s any, pages int) float64 { return float(s) * 1000 / float64(pages) },
	"join":        strings.Join,
	"joinFloats":  joinNums[float64],
	"orNone":      orNone,
	"opsLine":     opsLine[float64],
	"lastLine":    lastLine,
	"elapsed":     func(r *Results) time.Duration { return r.Finished.Sub(r.Started).Round(time.Second) },
	"rounds":      func(s *Synth) int { return max(len(s.Attempts)/max(len(s.Runs), 1), 1) },
	"allAttempts": func(s *Synth) []SynthRun { return append(slices.Clone(s.Attempts), s.BaselineAttempts...) },
	"mark":        synthMark,
	"joinInts":    func(v []int) string { return joinNums(v, 0) },
	"configLine":  pairs[any],
	"claimsLine":  pairs[int],
}

// synthMark marks a part 1 run in its table: " ✓" when the summary table
// shows it, the build's name for a baseline run.
func synthMark(s *Synth, x SynthRun) string {
	runs, mark := s.Runs, ""
	if x.Baseline {
		runs, mark = s.Baseline, " ("+s.BaselineName+")"
	}
	if slices.ContainsFunc(runs, func(y SynthRun) bool { return y.Crawl == x.Crawl }) {
		mark += " ✓"
	}
	return mark
}

// float converts a number of any of the report's kinds to float64.
func float(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("report: %T is not a number", v))
}

// pairs formats m as "k v, k v", keys sorted.
func pairs[V any](m map[string]V) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(out, ", ")
}
