package crawlreport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// LogName is the name of a worker's crawl log in its --out folder.
const LogName = "crawl.log"

// Find returns the crawl logs under dirs: each dir's LogName files at any
// depth (a worker's --out folder, or a folder holding many workers'
// folders), sorted by path within each dir, each file once. It fails
// naming the dir when a dir does not exist or is not a directory, and when
// a dir holds no crawl log at all.
func Find(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, errors.New("crawlreport: no directory given")
	}
	seen := map[string]bool{}
	var out []string
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("crawlreport: %s: no such directory", dir)
		case err != nil:
			return nil, fmt.Errorf("crawlreport: %w", err)
		case !st.IsDir():
			return nil, fmt.Errorf("crawlreport: %s: not a directory (give a worker's --out folder or a folder of them)", dir)
		}
		var found []string
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == LogName && d.Type().IsRegular() {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("crawlreport: walk %s: %w", dir, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("crawlreport: %s: no %s in it or below it", dir, LogName)
		}
		slices.Sort(found)
		for _, f := range found {
			if abs, err := filepath.Abs(f); err == nil && !seen[abs] {
				seen[abs] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}
