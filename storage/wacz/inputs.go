package wacz

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Names in a worker's output folder (storage.Writer and worker.openDiskStore).
const (
	openSuffix   = ".open"     // a WARC file still being written (or left by a crash)
	cdxjSuffix   = ".cdxj"     // the sorted CDXJ index beside each finished WARC file
	crawlLogName = "crawl.log" // the worker's crawl log
)

// warcInput is one finished WARC file to package.
type warcInput struct {
	name  string // base name: its name under archive/ and in the index
	path  string
	index string // path of its .cdxj index
}

// inputs is what the output folders hold for a package.
type inputs struct {
	warcs []warcInput       // sorted by name
	logs  []string          // crawl.log paths
	names map[string]string // WARC name -> path
}

// findInputs lists the finished WARC files (*.warc.gz, one gzip member per
// record as the writer makes them; never *.open) of dirs with their CDXJ indexes, and their crawl logs. Errors: a
// dir that cannot be read or holds neither a finished WARC file nor a
// crawl.log (a worker that fetched nothing has only its crawl.log), no
// finished WARC file in any dir, a WARC file
// without its index (the first named, the others counted), the same WARC
// name in two folders.
func findInputs(dirs []string, log *slog.Logger) (*inputs, error) {
	if len(dirs) == 0 {
		return nil, errors.New("wacz: no output folder given")
	}
	in := &inputs{names: map[string]string{}}
	var missing []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("wacz: folder %s does not exist", dir)
			}
			return nil, fmt.Errorf("wacz: folder %s: %w", dir, err)
		}
		found, open, hasLog := 0, 0, false
		for _, e := range entries {
			name := e.Name()
			switch {
			case !e.Type().IsRegular():
				continue
			case strings.HasSuffix(name, ".warc.gz"+openSuffix):
				open++
				continue
			case name == crawlLogName:
				in.logs = append(in.logs, filepath.Join(dir, name))
				hasLog = true
				continue
			case !strings.HasSuffix(name, ".warc.gz"):
				continue
			}
			found++
			p := filepath.Join(dir, name)
			if prev, dup := in.names[name]; dup {
				return nil, fmt.Errorf("wacz: WARC file name %s is in two folders (%s and %s): a package holds each name once; give each worker its own --out and package each folder once", name, prev, p)
			}
			in.names[name] = p
			idx := filepath.Join(dir, indexName(name))
			if _, err := os.Stat(idx); err != nil {
				missing = append(missing, p)
			}
			in.warcs = append(in.warcs, warcInput{name: name, path: p, index: idx})
		}
		if open > 0 {
			log.Warn("unfinished WARC files left out of the package (a worker is still writing them, or crashed while it did)", "folder", dir, "files", open, "suffix", openSuffix)
		}
		switch {
		case found == 0 && !hasLog:
			return nil, fmt.Errorf("wacz: folder %s holds no finished WARC file (*.warc.gz) and no crawl.log: is it a worker's --out folder, and has the worker closed its WARC files?", dir)
		case found == 0:
			log.Warn("worker folder without a finished WARC file (the worker fetched nothing, or its files are unfinished)", "folder", dir)
		}
	}
	if len(in.warcs) == 0 {
		return nil, fmt.Errorf("wacz: no finished WARC file (*.warc.gz) in %s: nothing to package", strings.Join(dirs, ", "))
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 1 {
			more = fmt.Sprintf(" (and %d more WARC files without one)", len(missing)-1)
		}
		w := missing[0]
		return nil, fmt.Errorf("wacz: WARC file %s has no CDXJ index %s beside it%s: workers write one when they close a WARC file; for an older crawl make it with `warcio cdx-index %s | LC_ALL=C sort > %s` and package again",
			w, indexName(filepath.Base(w)), more, w, filepath.Join(filepath.Dir(w), indexName(filepath.Base(w))))
	}
	slices.SortFunc(in.warcs, func(a, b warcInput) int { return strings.Compare(a.name, b.name) })
	return in, nil
}

// indexName is the name of WARC file warcName's CDXJ index
// (storage's indexName): warcName without ".warc.gz", then ".cdxj".
func indexName(warcName string) string {
	return strings.TrimSuffix(warcName, ".warc.gz") + cdxjSuffix
}
