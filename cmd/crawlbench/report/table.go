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
	"done":    func(x SynthRun) string { return f1(x.CompleteP50Ms) },
	"workers": func(x SynthRun) string { return fmt.Sprint(x.Workers) },
	"beyond":  func(x SynthRun) string { return f2(x.BeyondFetchMs) + " · " + f2(x.SlotMs) + " · " + f0(x.Held) },
	"stages": func(x SynthRun) string {
		var p50 []string
		for _, s := range x.Stages {
			p50 = append(p50, f2(s.P50Ms))
		}
		return "(" + strings.Join(p50, ", ") + ")"
	},
}

// realFigures are the part 2 figures the table shows of a server's median-ratio loopback run (x).
var realFigures = map[string]func(rounds []*RealRun, x *RealRun) string{
	"wall":   func(_ []*RealRun, x *RealRun) string { return f2(x.ZKS) },
	"writes": func(_ []*RealRun, x *RealRun) string { return f2(x.WritesPerLine) },
	"fsync":  func(_ []*RealRun, x *RealRun) string { return fsyncCell(float64(x.ZKLines), x.FsyncRounds, x.FsyncS) },
	// ratio: and those of every round, "a (a, b, c)", when more than one.
	"ratio": func(rounds []*RealRun, x *RealRun) string {
		var r []string
		for _, y := range rounds {
			r = append(r, f2(y.Ratio))
		}
		return f2(x.Ratio) + map[bool]string{true: " (" + strings.Join(r, ", ") + ")"}[len(r) > 1]
	},
}

// beside formats a figure of each shared server, "a (forceSync=no: b; 3-node ensemble: c)";
// cell returns "" for a server that did not run.
func beside(cell func(Server) string) string {
	var others []string
	for _, s := range []Server{NoFsync, Quorum} {
		if c := cell(s); c != "" {
			others = append(others, s.Label()+": "+c)
		}
	}
	return cell(Fsync) + map[bool]string{true: " (" + strings.Join(others, "; ") + ")"}[len(others) > 0]
}

// tableFuncs are the functions table.md.tmpl calls beside format.go's.
var tableFuncs = template.FuncMap{
	"met": met, "signed": signed, "mb": mb, "kbMB": kbMB, "dropLine": dropLine,
	"realRounds": func(runs []RealRun) int { return len(loopback(runs, Fsync)) }, // part 2's loopback rounds
	"add":        func(a, b any) float64 { return float(a) + float(b) },
	// synth: a figure of each server's part 1 runs (beside), "a / b / c" by worker count.
	"synth": func(runs []SynthRun, figure string) string {
		by := map[Server][]string{}
		for _, x := range runs {
			by[x.Server] = append(by[x.Server], synthFigures[figure](x))
		}
		return beside(func(s Server) string { return strings.Join(by[s], " / ") })
	},
	// real: a figure of each server's part 2 loopback run of median ratio (beside).
	"real": func(runs []RealRun, figure string) string {
		return beside(func(s Server) string {
			if x := realPick(loopback(runs, s)); x != nil {
				return realFigures[figure](loopback(runs, s), x)
			}
			return ""
		})
	},
	// ceiling: part 5's multis/s of each server (beside); implied: the cluster pages/s at its writes/page.
	"ceiling": func(runs []CeilingRun, implied bool) string {
		return beside(func(s Server) string {
			for _, x := range runs {
				if x.Server == s {
					return map[bool]string{false: f0(x.TxPerS), true: f0(x.ImpliedPagesS) + " at " + f2(x.WritesPerPage) + " writes/page"}[implied]
				}
			}
			return ""
		})
	},
	"fsync": func() Server { return Fsync }, "nofsync": func() Server { return NoFsync },
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
	// on is the first run on server s, nil for none.
	"on": func(runs []SynthRun, s Server) *SynthRun {
		if i := slices.IndexFunc(runs, func(x SynthRun) bool { return x.Server == s }); i >= 0 {
			return &runs[i]
		}
		return nil
	},
	"three":      three,
	"recrawlOff": recrawlOff,
	// recrawlAB: part 1's fastest 3-worker runs with recrawl on / off on each server (beside): pages/s
	// "on / off = ratio (each pair's ratio)", or CPU ms per page (workers + ZooKeeper) and writes per page.
	"recrawlAB": func(s *Synth, figure string) string {
		return beside(func(srv Server) string {
			on, off := three(s.Recrawl, srv, 0), recrawlOff(s, srv)
			if on.Workers == 0 || off.Workers == 0 {
				return ""
			} else if figure == "cpu" {
				return fmt.Sprintf("%s + %s / %s + %s; %s / %s", f2(on.WorkerCPUMsPerPage), f2(on.ZKCPUMsPerPage), f2(off.WorkerCPUMsPerPage), f2(off.ZKCPUMsPerPage), f2(on.ZKWritesPerPage), f2(off.ZKWritesPerPage))
			}
			var rounds []string
			for _, x := range s.RecrawlAttempts {
				y := three(s.Attempts, srv, x.Attempt) // the round's plain run, or the pair's (Pair > 0)
				for _, z := range s.RecrawlAttempts {
					if !z.Recrawl && x.Pair > 0 && z.Pair == x.Pair && z.Server == srv && z.Attempt == x.Attempt {
						y = z
					}
				}
				if x.Recrawl && x.Server == srv && y.Workers > 0 {
					rounds = append(rounds, f2(x.PagesPerS/y.PagesPerS))
				}
			}
			return fmt.Sprintf("%s / %s = %s (%s)", f0(on.PagesPerS), f0(off.PagesPerS), f2(on.PagesPerS/off.PagesPerS), strings.Join(rounds, ", "))
		})
	},
	// correctness tallies the outcomes of every part 1 run against the ground truth.
	"correctness": func(s *Synth) string {
		return tally(s.Attempts, func(x SynthRun) string {
			return fmt.Sprintf("%s of %s; %d, %d, %d, %d", f0(float64(x.URLs)), f0(float64(s.Expected)), x.Missing, x.Dups, x.Extra, x.WrongStatus)
		})
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
	"median":     func(runs []RealRun, s Server) *RealRun { return realPick(loopback(runs, s)) },
	"latencyRun": func(runs []RealRun) *RealRun { return realPick(realRuns(runs, true, Fsync)) },
	// realPages tallies each part 2 run's pages against wget's.
	"realPages": func(runs []RealRun) string {
		return tally(runs, func(x RealRun) string {
			return fmt.Sprintf("%s of %s (+%d not in wget's mirror); %d, %d", f0(float64(x.ZKPages-x.Extra)), f0(float64(x.WgetPages)), x.Extra, x.Missing, x.Dups)
		})
	},
	"realComplete": func(runs []RealRun) bool {
		return !slices.ContainsFunc(runs, func(x RealRun) bool { return x.Missing != 0 || x.Dups != 0 })
	},
}

// three returns the 3-worker run on server srv of attempt (0: the first of any); Workers 0 for none.
func three(runs []SynthRun, srv Server, attempt int) SynthRun {
	for _, x := range runs {
		if x.Workers == 3 && x.Server == srv && (attempt == 0 || x.Attempt == attempt) {
			return x
		}
	}
	return SynthRun{}
}

// recrawlOff returns the fastest 3-worker run with recrawl off on srv (of a round or a --recrawl-pairs pair).
func recrawlOff(s *Synth, srv Server) SynthRun {
	off := three(s.Runs, srv, 0)
	for _, x := range s.RecrawlAttempts {
		if !x.Recrawl && x.Server == srv && x.PagesPerS > off.PagesPerS {
			off = x
		}
	}
	return off
}

// tally lists the outcome of each run in the order first seen, equal
// ones counted together: "2 runs: a / 1 runs: b".
func tally[R any](runs []R, outcome func(R) string) string {
	var order []string
	seen := map[string]int{}
	for _, x := range runs {
		o := outcome(x)
		if seen[o]++; seen[o] == 1 {
			order = append(order, o)
		}
	}
	for i, o := range order {
		order[i] = fmt.Sprintf("%d runs: %s", seen[o], o)
	}
	return strings.Join(order, " / ")
}

// Table renders the results table in GitHub markdown (table.md.tmpl).
func (r *Results) Table() string { return render("table", tableText, r, nil) }

// render executes the template text with the functions of both templates and extra; an
// error (a template bug) is written into the output, where the report's reader sees it.
func render(name, text string, data any, extra template.FuncMap) string {
	t := template.New(name).Funcs(template.FuncMap{"f0": f0, "f1": f1, "f2": f2}).Funcs(tableFuncs).Funcs(markdownFuncs).Funcs(extra)
	var b strings.Builder
	if err := template.Must(t.Parse(text)).Execute(&b, data); err != nil {
		fmt.Fprintf(&b, "\n\n**The report could not be rendered:** %v\n", err)
	}
	return b.String()
}

// realRuns returns part 2's runs on server s, in round order: the loopback
// rounds, or (latency) the runs through the delaying proxy.
func realRuns(runs []RealRun, latency bool, s Server) []*RealRun {
	var of []*RealRun
	for i := range runs {
		if x := &runs[i]; (x.LatencyMS > 0) == latency && x.Server == s {
			of = append(of, x)
		}
	}
	return of
}

// loopback returns part 2's loopback runs on server s.
func loopback(runs []RealRun, s Server) []*RealRun { return realRuns(runs, false, s) }

// realPick returns the run of median ratio (the lower middle of an even count), nil for none.
func realPick(runs []*RealRun) *RealRun {
	if len(runs) == 0 {
		return nil
	}
	of := slices.Clone(runs)
	slices.SortStableFunc(of, func(a, b *RealRun) int { return cmp.Compare(a.Ratio, b.Ratio) })
	return of[(len(of)-1)/2]
}
