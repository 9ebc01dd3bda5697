package codestyle

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueRef is a reference to an issue number ("issue 10", "Issue 9").
var issueRef = regexp.MustCompile(`[Ii]ssue [0-9]+`)

// No production Go file outside third_party cites an issue number: code
// states its contract, and history goes to git and docs/design.md.
func TestNoIssueNumbersInCode(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "third_party", "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if m := issueRef.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d cites %q: state the contract instead (history goes to git and docs/design.md)", path, n, m)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
