package report

// The results table: the template table.md.tmpl and the functions it
// calls to pick and format the runs behind each row.

import (
	"cmp"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"text/template"
)

//go:embed table.md.tmpl
var tableText string

// synthFigures are the part 1 figures the table shows per run, by name.
var synthFigures = map[string]func(x SynthRun) string{
	"pages/s": func(x SynthRun) string { return f0(x.PagesPerS) },
	"writes":  func(x SynthRun) string { return f2(x.ZKWritesPerPage) },
	"steps":   func(x SynthRun) string { return f2(x.StepsPerMulti) },
	"fsync":   func(x SynthRun) string { return fsyncCell(float64(x.Pages), x.FsyncRounds, x.FsyncS) },
	"cpu":     func(x SynthRun) string { return f2(x.WorkerCPUMsPerPage) + " + " + f2(x.ZKCPUMsPerPage) },
	"claim":   func(x SynthRun) string { return f1(x.ClaimP50Ms) + " · " + f1(x.ClaimP99Ms) },
	"data":    func(x SynthRun) string { return f1(x.DataPerURL) },
	"beyond":  func(x SynthRun) string { return f2(x.BeyondFetchMs) + " · " + f2(x.SlotMs) + " · " + f0(x.Held) },
	"stages": func(x SynthRun) string {
		var p50 []string
		for _, s := range x.Stages {
			p50 = append(p50, f2(s.P50Ms))
		}
		return "(" + strings.Join(p50, ", ") + ")"
	},
}

// tableFuncs are the functions table.md.tmpl calls beside the formatting
// ones of format.go.
var tableFuncs = template.FuncMap{
	"met": met, "signed": signed, "mb": mb, "kbMB": kbMB, "dropLine": dropLine, "realRounds": realRounds, "realRatios": realRatios,
	"add":  func(a, b float64) float64 { return a + b },
	"add2": func(a, b int) int { return a + b },
	// synth formats a figure of the part 1 runs: "a / b / c" by worker
	// count, forceSync=yes, then (forceSync=no: ...).
	"synth": func(runs []SynthRun, figure string) string {
		var yes, no []string
		for _, x := range runs {
			if x.ForceSync {
				yes = append(yes, synthFigures[figure](x))
			} else {
				no = append(no, synthFigures[figure](x))
			}
		}
		if len(no) == 0 {
			return strings.Join(yes, " / ")
		}
		return strings.Join(yes, " / ") + " (forceSync=no: " + strings.Join(no, " / ") + ")"
	},
	// most is the largest of a figure over the part 1 runs, 0 for none.
	"most": func(runs []SynthRun, figure string) float64 {
		m := 0.0
		for _, x := range runs {
			values := map[string][]float64{"writes": {x.ZKWritesPerPage}, "data": {x.DataPerURL}, "chunk": {x.ChunkBytesPerKy}, "rss": x.PeakRSSMB}
			for _, v := range values[figure] {
				m = max(m, v)
			}
		}
		return m
	},
	"workerCounts": func(runs []SynthRun) string {
		var counts []string
		for _, x := range runs {
			if x.ForceSync {
				counts = append(counts, fmt.Sprint(x.Workers))
			}
		}
		return strings.Join(counts, " / ")
	},
	// ofSync is the first run of a forceSync setting, nil for none.
	"ofSync": func(runs []SynthRun, fsync bool) *SynthRun {
		if i := slices.IndexFunc(runs, func(x SynthRun) bool { return x.ForceSync == fsync }); i >= 0 {
			return &runs[i]
		}
		return nil
	},
	// threeWorkers is the pages/s of the (last) 3-worker forceSync=yes run.
	"threeWorkers": func(runs []SynthRun) float64 {
		v := 0.0
		for _, x := range runs {
			if x.ForceSync && x.Workers == 3 {
				v = x.PagesPerS
			}
		}
		return v
	},
	// correctness lists the outcomes of every part 1 run against the
	// ground truth, equal outcomes counted together.
	"correctness": func(s *Synth) string {
		var outcomes []string
		seen := map[string]int{}
		for _, x := range s.Attempts {
			o := fmt.Sprintf("%s of %s; %d, %d, %d, %d", f0(float64(x.URLs)), f0(float64(s.Expected)), x.Missing, x.Dups, x.Extra, x.WrongStatus)
			if seen[o]++; seen[o] == 1 {
				outcomes = append(outcomes, o)
			}
		}
		for i, o := range outcomes {
			outcomes[i] = fmt.Sprintf("%d runs: %s", seen[o], o)
		}
		return strings.Join(outcomes, " / ")
	},
	"correct": func(s *Synth) bool {
		return !slices.ContainsFunc(s.Attempts, func(x SynthRun) bool {
			return x.Missing != 0 || x.Dups != 0 || x.Extra != 0 || x.WrongStatus != 0 || x.URLs != s.Expected
		})
	},
	// retired: every part 1 run's batches retired, with seen keys = pages.
	"retired": func(s *Synth) bool {
		return !slices.ContainsFunc(s.Attempts, func(x SynthRun) bool { return !x.Retired || x.SeenKeys != x.Pages })
	},
	"median":     func(runs []RealRun, fsync bool) *RealRun { return realPick(loopback(runs, fsync)) },
	"latencyRun": func(runs []RealRun) *RealRun { return realPick(realRuns(runs, true, true)) },
	// realPages lists each part 2 run's pages against wget's; "N runs: x"
	// when all are x.
	"realPages": func(runs []RealRun) string {
		var res []string
		for _, x := range runs {
			res = append(res, fmt.Sprintf("%s of %s (+%d not in wget's mirror); %d, %d", f0(float64(x.ZKPages-x.Extra)), f0(float64(x.WgetPages)), x.Extra, x.Missing, x.Dups))
		}
		if len(res) > 1 && !slices.ContainsFunc(res, func(o string) bool { return o != res[0] }) {
			return fmt.Sprintf("%d runs: %s", len(res), res[0])
		}
		return strings.Join(res, " / ")
	},
	"realComplete": func(runs []RealRun) bool {
		return !slices.ContainsFunc(runs, func(x RealRun) bool { return x.Missing != 0 || x.Dups != 0 })
	},
	"fsyncCell": func(lines int, rounds, s float64) string { return fsyncCell(float64(lines), rounds, s) },
}

// Table renders the results table in GitHub markdown (table.md.tmpl).
func (r *Results) Table() string { return render("table", tableText, r, nil) }

// render executes the template text with the functions of both templates
// and extra; an error (a bug of the template) is written into the output,
// where the report's reader sees it.
func render(name, text string, data any, extra template.FuncMap) string {
	t := template.New(name).Funcs(template.FuncMap{
		"f0": func(v any) string { return num(float(v), 0) },
		"f1": func(v any) string { return num(float(v), 1) },
		"f2": func(v any) string { return num(float(v), 2) },
	}).Funcs(tableFuncs).Funcs(markdownFuncs).Funcs(extra)
	var b strings.Builder
	if err := template.Must(t.Parse(text)).Execute(&b, data); err != nil {
		fmt.Fprintf(&b, "\n\n**The report could not be rendered:** %v\n", err)
	}
	return b.String()
}

// realRuns returns part 2's runs on the ZooKeeper of one forceSync
// setting, in round order: the loopback rounds, or (latency) the runs
// through the delaying proxy.
func realRuns(runs []RealRun, latency, fsync bool) []*RealRun {
	var of []*RealRun
	for i := range runs {
		if x := &runs[i]; (x.LatencyMS > 0) == latency && x.ForceSync == fsync {
			of = append(of, x)
		}
	}
	return of
}

// loopback returns part 2's loopback runs of one forceSync setting.
func loopback(runs []RealRun, fsync bool) []*RealRun { return realRuns(runs, false, fsync) }

// realPick returns the run of median ratio of runs (the lower middle of
// an even count), nil for none.
func realPick(runs []*RealRun) *RealRun {
	if len(runs) == 0 {
		return nil
	}
	of := slices.Clone(runs)
	slices.SortStableFunc(of, func(a, b *RealRun) int { return cmp.Compare(a.Ratio, b.Ratio) })
	return of[(len(of)-1)/2]
}

// realRounds counts the loopback rounds of part 2.
func realRounds(runs []RealRun) int { return len(loopback(runs, true)) }

// realRatios lists the loopback ratios of one forceSync setting in round
// order, as " (a, b, c)"; "" for a single round.
func realRatios(runs []RealRun, fsync bool) string {
	var r []string
	for _, x := range loopback(runs, fsync) {
		r = append(r, f2(x.Ratio))
	}
	if len(r) < 2 {
		return ""
	}
	return " (" + strings.Join(r, ", ") + ")"
}
