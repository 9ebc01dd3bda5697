package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zkcrawl/zkcrawl/storage"
)

// ReadCrawlLogs reads every worker's crawl log under dir (dir/*/crawl.log,
// the layout tests and the demo use: one output directory per worker) and
// returns all entries sorted by time. Errors name the file.
func ReadCrawlLogs(dir string) ([]storage.LogEntry, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "crawl.log"))
	if err != nil {
		return nil, err
	}
	var all []storage.LogEntry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		es, err := storage.ReadCrawlLog(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, es...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].TS.Before(all[j].TS) })
	return all, nil
}

// FinalStatus maps each logged URL to its last logged status (entries in
// time order, as ReadCrawlLogs returns them) and counts the lines per URL.
func FinalStatus(entries []storage.LogEntry) (final, lines map[string]int) {
	final, lines = map[string]int{}, map[string]int{}
	for _, e := range entries {
		final[e.URL] = e.Status
		lines[e.URL]++
	}
	return final, lines
}

// WARCResponses counts WARC response records per WARC-Target-URI over every
// WARC file under dir/*/, including the ".open" files a killed worker left:
// their complete gzip members must be readable; a torn last member ends that
// file's reading without an error. open counts those files. Errors: an
// unreadable closed file, naming it.
func WARCResponses(dir string) (records map[string]int, open int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.warc.gz*"))
	if err != nil {
		return nil, 0, err
	}
	records = map[string]int{}
	for _, f := range files {
		isOpen := strings.HasSuffix(f, storage.OpenSuffix)
		if isOpen {
			open++
		} else if !strings.HasSuffix(f, ".warc.gz") {
			continue
		}
		err := EachWARCRecord(f, isOpen, func(rec *storage.Record) {
			if rec.Type() == "response" {
				records[rec.Get("WARC-Target-URI")]++
			}
		})
		if err != nil {
			return nil, open, err
		}
	}
	return records, open, nil
}

// EachWARCRecord calls fn with every record of the WARC file path, in
// order. With torn (a ".open" file a killed worker left) a broken last gzip
// member ends the reading without an error; otherwise any read error is
// returned, naming the file.
func EachWARCRecord(path string, torn bool, fn func(*storage.Record)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	r := storage.NewReader(fh)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if torn {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		fn(rec)
	}
}

// DiffTruth compares a crawl's final statuses (FinalStatus) with the ground
// truth: every URL with a non-zero expected status must be logged with it,
// no URL the truth forbids may have an HTTP status, and nothing outside the
// truth may be logged. It returns one sorted line per difference.
func DiffTruth(truth map[string]WebExpect, final map[string]int) []string {
	var bad []string
	for u, exp := range truth {
		got, ok := final[u]
		switch {
		case exp.Status != 0 && !ok:
			bad = append(bad, fmt.Sprintf("missing %s (want %d, depth %d)", u, exp.Status, exp.Depth))
		case exp.Status != 0 && got != exp.Status:
			bad = append(bad, fmt.Sprintf("status %s = %d, want %d", u, got, exp.Status))
		case exp.Status == 0 && ok && got > 0:
			bad = append(bad, fmt.Sprintf("fetched %s (status %d) but it must not be", u, got))
		}
	}
	for u, s := range final {
		if _, ok := truth[u]; !ok {
			bad = append(bad, fmt.Sprintf("unexpected %s (status %d)", u, s))
		}
	}
	sort.Strings(bad)
	return bad
}

// FirstLines joins up to n lines for a failure message, saying how many more
// there are.
func FirstLines(lines []string, n int) string {
	if len(lines) > n {
		return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... and %d more", len(lines)-n)
	}
	return strings.Join(lines, "\n")
}
