package main

// seeder --revisit-cdxj FILE: another crawler's CDXJ index (pywb /
// warcio.js form) imported as confirmed entries of the crawl's digest
// index (config dedup_index), so the crawl writes revisits of those
// captures instead of storing their payloads again.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/dedup"
)

// cdxjImportBatch is how many entries one dedup.Index.Add call enters.
const cdxjImportBatch = 1000

// cdxjCallTimeout bounds one call to the digest index during an import.
const cdxjCallTimeout = 30 * time.Second

// cdxjSummary counts what an import did.
type cdxjSummary struct {
	Lines, Added, Present, Skipped, Bad int
}

// cdxjFields are the JSON fields of a CDXJ line the import reads (pywb's
// CDXJ: url, mime, status, digest).
type cdxjFields struct {
	URL    string `json:"url"`
	MIME   string `json:"mime"`
	Status string `json:"status"`
	Digest string `json:"digest"`
}

// dedupIndexOf returns the dedup_index the crawl will have: the --config
// document's when given (doc, already validated), else the crawl's R/config
// (the defaults when it has none yet). Errors: R/config unreadable or
// invalid.
func dedupIndexOf(ctx context.Context, client *coord.Client, root string, doc []byte) (string, error) {
	if doc == nil {
		data, _, err := coord.Store(client, root, coord.ConfigNode).Read(ctx)
		switch {
		case errors.Is(err, coord.ErrNotFound):
		case err != nil:
			return "", fmt.Errorf("read config: %w", err)
		default:
			doc = data
		}
	}
	cfg, err := config.Parse(doc)
	if err != nil {
		return "", err
	}
	return cfg.DedupIndex, nil
}

// importCDXJ enters the status-200 response lines of files into the digest
// index ix, SET NX (an entry present wins). A line is SURT,
// a 14-digit timestamp (the capture's WARC-Date, UTC, to the second) and a
// JSON object with url and digest (SHA-1, base32, with or without
// "sha1:"); lines whose mime is warc/revisit or whose status is not 200 are
// skipped (only responses are entered). A line that does not parse, or
// whose digest is not SHA-1, is named on stderr by file and line, and the
// rest imported. Errors: the index fails, a file cannot be read (the
// files before it are imported).
func importCDXJ(ctx context.Context, ix *dedup.Index, files []string, stderr io.Writer) (cdxjSummary, error) {
	var sum cdxjSummary
	batch := make([]dedup.Import, 0, cdxjImportBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		actx, cancel := context.WithTimeout(ctx, cdxjCallTimeout)
		defer cancel()
		n, err := ix.Add(actx, batch)
		if err != nil {
			return err
		}
		sum.Added += n
		sum.Present += len(batch) - n
		batch = batch[:0]
		return nil
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return sum, fmt.Errorf("--revisit-cdxj: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "!") || strings.HasPrefix(line, "#") {
				continue // blank, or a CDX header / comment line
			}
			sum.Lines++
			it, ok, err := parseCDXJLine(line)
			switch {
			case err != nil:
				sum.Bad++
				fmt.Fprintf(stderr, "%s:%d: %v; line skipped\n", name, n, err)
				continue
			case !ok:
				sum.Skipped++
				continue
			}
			if batch = append(batch, it); len(batch) == cdxjImportBatch {
				if err := flush(); err != nil {
					f.Close()
					return sum, fmt.Errorf("--revisit-cdxj: %w", err)
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return sum, fmt.Errorf("--revisit-cdxj %s: %w", name, err)
		}
	}
	if err := flush(); err != nil {
		return sum, fmt.Errorf("--revisit-cdxj: %w", err)
	}
	return sum, nil
}

// parseCDXJLine parses one CDXJ line: the entry and true for a status-200
// response, false for a line to skip (a revisit, another status), or an
// error saying why the line does not parse.
func parseCDXJLine(line string) (dedup.Import, bool, error) {
	surt, rest, ok1 := strings.Cut(line, " ")
	ts, js, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || surt == "" || !strings.HasPrefix(js, "{") {
		return dedup.Import{}, false, errors.New(`not "SURT TIMESTAMP {JSON}"`)
	}
	date, err := time.Parse("20060102150405", ts)
	if err != nil || len(ts) != 14 {
		return dedup.Import{}, false, fmt.Errorf("timestamp %q: want 14 digits YYYYMMDDhhmmss", ts)
	}
	var f cdxjFields
	if err := json.Unmarshal([]byte(js), &f); err != nil {
		return dedup.Import{}, false, fmt.Errorf("JSON: %v", err)
	}
	if f.MIME == "warc/revisit" || f.Status != "200" {
		return dedup.Import{}, false, nil
	}
	it := dedup.Import{Digest: f.Digest, Entry: dedup.Entry{TargetURI: f.URL, Date: date}}
	if f.URL == "" {
		return it, false, errors.New(`no "url"`)
	}
	if err := it.Check(); err != nil {
		return it, false, err
	}
	return it, true, nil
}

// cdxjIndex opens, when --revisit-cdxj was given, the crawl's dedup_index
// (dedupIndexOf) and checks that it answers, before anything is written:
// a crawl without one is an error naming the key. nil without
// --revisit-cdxj.
func (job *seedJob) cdxjIndex(ctx context.Context, client *coord.Client) (*dedup.Index, error) {
	if len(job.cdxj) == 0 {
		return nil, nil
	}
	url, err := dedupIndexOf(ctx, client, job.root, job.cfgDoc)
	if err != nil {
		return nil, fmt.Errorf("--revisit-cdxj: crawl %s: %w", job.crawl, err)
	}
	if url == "" {
		return nil, fmt.Errorf("--revisit-cdxj: crawl %s has no digest index: set the config key dedup_index to a redis URL (in --config FILE, or crawlctl config set) first; nothing written", job.crawl)
	}
	ix, err := dedup.Open(url, dedup.Options{})
	if err != nil {
		return nil, fmt.Errorf("--revisit-cdxj: %w", err)
	}
	if err := ix.Ping(ctx); err != nil {
		ix.Close()
		return nil, fmt.Errorf("--revisit-cdxj: dedup_index of crawl %s does not answer: %w; nothing written", job.crawl, err)
	}
	return ix, nil
}

// importRevisitCDXJ imports the --revisit-cdxj files (importCDXJ) into
// ix (nil: no --revisit-cdxj), closes it, and prints the summary line on stdout; nothing without the flag.
func (job *seedJob) importRevisitCDXJ(ctx context.Context, ix *dedup.Index, stdout, stderr io.Writer) error {
	if ix == nil {
		return nil
	}
	defer ix.Close()
	sum, err := importCDXJ(ctx, ix, job.cdxj, stderr)
	fmt.Fprintf(stdout, "crawl %s: revisit-cdxj: %d lines, %d entries added, %d present already, %d skipped (not a status-200 response), %d bad\n",
		job.crawl, sum.Lines, sum.Added, sum.Present, sum.Skipped, sum.Bad)
	return err
}
