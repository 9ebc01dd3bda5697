package codestyle

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxCoordExports bounds coord's API, counted as `go doc -all ./coord`
// lists it: each top-level func, type and method, and each const or var
// declaration (a parenthesised group counts once). etcd's
// client/v3/concurrency, the model for a recipe package, has about 40.
const maxCoordExports = 70

// coord stays a small recipe package: sessions, fencing, claims,
// membership and config; growing its API needs a reason, and this test
// makes it a visible one.
func TestCoordAPISize(t *testing.T) {
	dir := filepath.Join("..", "..", "coord")
	fset := token.NewFileSet()
	var files []*ast.File
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/zkcrawl/zkcrawl/coord")
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.Consts) + len(p.Vars) + len(p.Funcs)
	for _, ty := range p.Types {
		n += 1 + len(ty.Consts) + len(ty.Vars) + len(ty.Funcs) + len(ty.Methods)
	}
	t.Logf("coord exports %d (at most %d)", n, maxCoordExports)
	if n > maxCoordExports {
		t.Errorf("coord exports %d identifiers (go doc -all ./coord), more than %d: keep the recipe package small "+
			"(unexport what only coord or its tests use; options belong in coord.Config)", n, maxCoordExports)
	}
}

// maxBenchLines bounds cmd/crawlbench's non-test Go lines: a benchmark
// driver should not outgrow the code it measures (the worker package is
// about 4,000). New measurements belong in a package's Benchmark or a
// script under scripts/.
const maxBenchLines = 2550

func TestCrawlbenchSize(t *testing.T) {
	lines := 0
	err := filepath.WalkDir(filepath.Join("..", "..", "cmd", "crawlbench"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		lines += strings.Count(string(b), "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cmd/crawlbench: %d non-test lines (at most %d)", lines, maxBenchLines)
	if lines > maxBenchLines {
		t.Errorf("cmd/crawlbench has %d non-test lines, more than %d: measure through a package's Benchmark or a script instead", lines, maxBenchLines)
	}
}
