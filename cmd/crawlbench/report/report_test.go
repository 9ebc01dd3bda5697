package report

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"strings"
	"testing"
)

func TestNumGroupsThousands(t *testing.T) {
	cases := map[float64]string{1234567.891: "1,234,567.89", 999: "999.00", -12345: "-12,345.00", 0.5: "0.50"}
	for v, want := range cases {
		if got := num(v, 2); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
	if got := f0(math.NaN()); got != "—" {
		t.Errorf("f0(NaN) = %q", got)
	}
}

// tableRow returns the table line whose measure contains measure.
func tableRow(t *testing.T, table, measure string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.Contains(l, measure) {
			return l
		}
	}
	t.Fatalf("no row %q in\n%s", measure, table)
	return ""
}

func TestTableJudgesTargets(t *testing.T) {
	r := &Results{
		Queued: &Queued{URLs: 300000, Hosts: 3000, SeedPerS: 40000, PostedDataPerURL: 3, DrainedDataPerURL: 49,
			PostedZnodesPerURL: 0.001, DrainedZnodesPerURL: 0.02},
		Trap: &Trap{Links: 10000, URLLength: 1900, TimeS: 40, AbortMB: 512, Runs: []TrapRun{
			{Flavour: "repetitive", GrowthMB: 1, PeakGrowthMB: 2},
			{Flavour: "subdomain", GrowthMB: 30, PeakGrowthMB: 33, Dropped: map[string]int64{"bytes": 5}},
		}},
		Real: &Real{MaxInFlight: 8, Runs: []RealRun{
			{Server: Fsync, WgetS: 2, ZKS: 1, Ratio: 0.5, WritesPerLine: 1.3, ZKPages: 10, WgetPages: 10},
			{Server: NoFsync, WgetS: 2, ZKS: 3, Ratio: 1.5, WritesPerLine: 1.2, ZKPages: 10, WgetPages: 10},
			{Server: Quorum, WgetS: 2, ZKS: 2.2, Ratio: 1.1, WritesPerLine: 1.2, ZKPages: 10, WgetPages: 10},
		}},
	}
	table := r.Table()
	for measure, want := range map[string]string{
		"seeding rate":                   "**NOT MET**",
		"znodes per queued URL":          "met",
		"ZooKeeper data per queued URL":  "**NOT MET**", // 49 B after the drain
		"repetitive: ZooKeeper data":     "met",
		"subdomain: ZooKeeper data":      "**NOT MET**", // the peak counts
		"loopback: ratio zkcrawl / wget": "met",         // judged on standalone forceSync=yes
		"writes per crawl log line":      "**NOT MET**",
		"pages zkcrawl of wget; missing": "met",
	} {
		row := tableRow(t, table, measure)
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(row), "|"), "|")
		if got := strings.TrimSpace(cells[len(cells)-1]); got != want {
			t.Errorf("row %q: verdict %q, want %q:\n%s", measure, got, want, row)
		}
	}
	if row := tableRow(t, table, "loopback: ratio"); !strings.Contains(row, "0.50 (forceSync=no: 1.50; 3-node ensemble: 1.10)") {
		t.Errorf("ratio row does not show forceSync=no and the ensemble beside yes: %s", row)
	}
	if row := tableRow(t, table, "subdomain: ZooKeeper data"); !strings.Contains(row, "bytes 5") {
		t.Errorf("trap row lacks the dropped counts: %s", row)
	}
}

// TestRealPickMedian: of several loopback rounds the table judges the one of
// median ratio, and lists every round.
func TestRealPickMedian(t *testing.T) {
	runs := []RealRun{
		{Round: 1, Server: Fsync, Ratio: 1.3}, {Round: 1, Ratio: 0.7},
		{Round: 2, Server: Fsync, Ratio: 0.9}, {Round: 2, Ratio: 0.8},
		{Round: 3, Server: Fsync, Ratio: 0.95}, {Round: 3, Ratio: 0.9},
		{LatencyMS: 5, Server: Fsync, Ratio: 0.2},
	}
	if got := realPick(loopback(runs, Fsync)); got == nil || got.Ratio != 0.95 {
		t.Errorf("median forceSync=yes round = %+v, want ratio 0.95", got)
	}
	if got := realPick(realRuns(runs, true, Fsync)); got == nil || got.Ratio != 0.2 {
		t.Errorf("latency run = %+v, want ratio 0.2", got)
	}
	if got := realFigures["ratio"](loopback(runs, Fsync), &runs[4]); got != "0.95 (1.30, 0.90, 0.95)" {
		t.Errorf("ratio cell = %q", got)
	}
}

// update rewrites the golden file: go test ./cmd/crawlbench/report -update
var update = flag.Bool("update", false, "rewrite testdata/BENCHMARKS.golden.md")

// TestMarkdownGolden renders testdata/results.json (every field filled,
// arbitrary figures) and compares it with the report it gave before: a
// change to the report's text or rows shows here, to be reviewed and
// accepted with -update.
func TestMarkdownGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	got := r.Markdown(r.Table())
	if *update {
		if err := os.WriteFile("testdata/BENCHMARKS.golden.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/BENCHMARKS.golden.md")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("report differs from testdata/BENCHMARKS.golden.md at line %d:\ngot:  %s\nwant: %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("report has %d lines, testdata/BENCHMARKS.golden.md %d", len(gl), len(wl))
	}
}

// TestSynthAddKeepsFastest: Add keeps, per kind, worker count and server,
// the run of most pages/s, in the order the pairs first ran, and every
// attempt in its kind's list; a --recrawl-pairs plain run joins the
// recrawl attempts only. recrawlOff finds it.
func TestSynthAddKeepsFastest(t *testing.T) {
	var s Synth
	for _, r := range []SynthRun{
		{Workers: 1, Server: Fsync, PagesPerS: 10, Attempt: 1}, {Workers: 1, Server: NoFsync, PagesPerS: 20, Attempt: 1},
		{Workers: 1, Server: Fsync, PagesPerS: 15, Attempt: 2}, {Workers: 1, Server: NoFsync, PagesPerS: 5, Attempt: 2},
		{Workers: 1, Server: Quorum, PagesPerS: 8, Attempt: 1},
		{Workers: 3, Server: Fsync, PagesPerS: 9, Attempt: 1, Recrawl: true}, {Workers: 3, Server: Fsync, PagesPerS: 7, Attempt: 2, Recrawl: true},
		{Workers: 3, Server: Fsync, PagesPerS: 6, Attempt: 1, Baseline: true},
		{Workers: 3, Server: Fsync, PagesPerS: 99, Attempt: 1, Pair: 1}, // a --recrawl-pairs plain run: not in Runs
	} {
		s.Add(r)
	}
	if runs := s.Runs; len(runs) != 3 || runs[0].Attempt != 2 || runs[0].Server != Fsync || runs[1].Attempt != 1 || runs[1].Server != NoFsync || runs[2].Server != Quorum {
		t.Errorf("Runs = %+v; want attempt 2 of forceSync=yes, then attempt 1 of no, then the ensemble's", runs)
	}
	if len(s.Attempts) != 5 || len(s.RecrawlAttempts) != 3 || len(s.Recrawl) != 1 || s.Recrawl[0].Attempt != 1 || len(s.Baseline) != 1 {
		t.Errorf("Add: %d attempts, recrawl %+v of %d, baseline %+v", len(s.Attempts), s.Recrawl, len(s.RecrawlAttempts), s.Baseline)
	}
	if off := recrawlOff(&s, Fsync); off.PagesPerS != 99 {
		t.Errorf("recrawlOff = %+v; want the pair's plain run (99 pages/s)", off)
	}
}
