package readme

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkcrawl/zkcrawl/worker"
)

var update = flag.Bool("update", false, "rewrite README.md's help blocks from the binaries")

const readmePath = "../../README.md"

// helpBlocks maps each command to the README heading whose first fenced
// block holds its --help output.
var helpBlocks = []struct{ cmd, heading string }{
	{"seeder", "### seeder"},
	{"crawler", "### crawler"},
	{"crawlctl", "### crawlctl"},
	{"zkserver", "### zkserver"},
	{"testweb", "### testweb"},
}

// buildCommands builds every command into a temp dir once.
func buildCommands(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var pkgs []string
	for _, b := range helpBlocks {
		pkgs = append(pkgs, "github.com/zkcrawl/zkcrawl/cmd/"+b.cmd)
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// help runs "bin --help" with no ZKCRAWL_ variable set (they would show as
// defaults) and returns what it printed.
func help(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "--help")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZKCRAWL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // --help exits 0 for ours, 2 for the stdlib-style testweb
	return strings.TrimRight(out.String(), "\n")
}

// block finds the first ``` fenced block after heading and returns its
// text and byte range in readme.
func block(t *testing.T, readme, heading string) (string, int, int) {
	t.Helper()
	h := strings.Index(readme, "\n"+heading+"\n")
	if h < 0 {
		t.Fatalf("README has no heading %q", heading)
	}
	open := strings.Index(readme[h:], "\n```\n")
	if open < 0 {
		t.Fatalf("README: no fenced block after %q", heading)
	}
	start := h + open + len("\n```\n")
	end := strings.Index(readme[start:], "\n```\n")
	if end < 0 {
		t.Fatalf("README: unterminated block after %q", heading)
	}
	return readme[start : start+end], start, start + end
}

// TestREADMEHelpBlocks fails when a command's --help differs from its block
// in README.md (with -update, rewrites the blocks).
func TestREADMEHelpBlocks(t *testing.T) {
	dir := buildCommands(t)
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, b := range helpBlocks {
		got := help(t, filepath.Join(dir, b.cmd))
		want, start, end := block(t, readme, b.heading)
		if got == want {
			continue
		}
		if *update {
			readme = readme[:start] + got + readme[end:]
			continue
		}
		t.Errorf("README block under %q differs from '%s --help' (run 'go test ./internal/readme -update'):\n%s",
			b.heading, b.cmd, diffLines(want, got))
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// diffLines lists the lines only in want (-) and only in got (+).
func diffLines(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- README: " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ binary: " + l + "\n")
		}
	}
	return b.String()
}

// captureReg is a prometheus.Registerer that keeps what is registered, so
// the test sees every metric (a vector with no children yet is absent from
// Gather).
type captureReg struct{ cs []prometheus.Collector }

func (r *captureReg) Register(c prometheus.Collector) error   { r.cs = append(r.cs, c); return nil }
func (r *captureReg) MustRegister(cs ...prometheus.Collector) { r.cs = append(r.cs, cs...) }
func (r *captureReg) Unregister(prometheus.Collector) bool    { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// exportedMetrics returns the names of every metric worker.NewMetrics
// registers.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	reg := &captureReg{}
	if _, err := worker.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range reg.cs {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// TestREADMEMetricsTable: the README's metrics table lists exactly the
// metrics worker.NewMetrics registers.
func TestREADMEMetricsTable(t *testing.T) {
	code := exportedMetrics(t)
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	sec := string(raw)
	sec = sec[strings.Index(sec, "\n## Metrics\n"):]
	sec = sec[:strings.Index(sec[1:], "\n## ")+1]
	var doc []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(zkcrawl_[a-z_]+)").FindAllStringSubmatch(sec, -1) {
		doc = append(doc, m[1])
	}
	sort.Strings(code)
	sort.Strings(doc)
	if strings.Join(code, "\n") != strings.Join(doc, "\n") {
		t.Errorf("README metrics table differs from worker.NewMetrics:\n%s", diffLines(strings.Join(doc, "\n"), strings.Join(code, "\n")))
	}
}

// TestREADMEStatusStates: the states 'crawlctl status --help' lists are the
// ones the README's status row names.
func TestREADMEStatusStates(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/zkcrawl/zkcrawl/cmd/crawlctl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, _ := exec.Command(filepath.Join(dir, "crawlctl"), "status", "--help").CombinedOutput()
	states := regexp.MustCompile(`\b(DONE|DRAINING|PAUSED|STOPPED|RUNNING)\b`).FindAllStringSubmatch(string(out), -1)
	if len(states) < 5 {
		t.Fatalf("status --help names %d states, want 5:\n%s", len(states), out)
	}
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "| `status ") {
			row = l
		}
	}
	for _, s := range states {
		if !strings.Contains(row, s[1]) {
			t.Errorf("README's status row lacks state %s:\n%s", s[1], row)
		}
	}
}

// TestDeployFiles: the Grafana dashboard is valid JSON whose queries use
// only metrics the workers export, and the crawler unit does not restart a
// worker that refused to start during a drain (exit status 3).
func TestDeployFiles(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/zkcrawl-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana dashboard: %v", err)
	}
	known := map[string]bool{}
	for _, name := range exportedMetrics(t) {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[name+suffix] = true
		}
	}
	used := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`zkcrawl_[a-z_]+`).FindAllString(tg.Expr, -1) {
				used++
				if !known[name] {
					t.Errorf("panel %q queries %s, which no worker exports", p.Title, name)
				}
			}
		}
	}
	if used == 0 {
		t.Error("the dashboard queries no zkcrawl metric")
	}
	unit, err := os.ReadFile("../../deploy/systemd/zkcrawl-crawler@.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RestartPreventExitStatus=3", "ExecStart=/usr/local/bin/crawler ", "EnvironmentFile=/etc/zkcrawl/zkcrawl.env"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("crawler unit lacks %q", want)
		}
	}
}
