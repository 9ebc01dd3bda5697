package report

// BENCHMARKS.md around the table (the template benchmarks.md.tmpl) and its functions.

import (
	_ "embed"
	"fmt"
	"maps"
	"reflect"
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
	"allAttempts": func(s *Synth) []SynthRun { return slices.Concat(s.Attempts, s.RecrawlAttempts, s.BaselineAttempts) },
	"mark":        synthMark,
	"joinInts":    func(v []int) string { return joinNums(v, 0) },
	"configLine":  pairs[any],
	"claimsLine":  pairs[int],
}

// synthMark marks a part 1 run in its table: " ✓" when the summary table
// shows it, the build's name for a baseline run, "recrawl on" for one.
func synthMark(s *Synth, x SynthRun) string {
	runs, mark := s.Runs, ""
	if x.Baseline {
		runs, mark = s.Baseline, " ("+s.BaselineName+")"
	} else if x.Recrawl {
		runs, mark = s.Recrawl, " (recrawl on)"
	} else if x.Pair > 0 {
		runs, mark = nil, " (recrawl off)"
	}
	if slices.ContainsFunc(runs, func(y SynthRun) bool { return y.Crawl == x.Crawl }) {
		mark += " ✓"
	}
	return mark
}

// float converts a number of any kind (the report's int, int64 and float64) to float64; it panics on
// anything else (a template bug).
func float(v any) float64 { return reflect.ValueOf(v).Convert(reflect.TypeFor[float64]()).Float() }

// pairs formats m as "k v, k v", keys sorted.
func pairs[V any](m map[string]V) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(out, ", ")
}
