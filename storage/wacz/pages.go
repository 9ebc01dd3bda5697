package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// pagesHeader is pages.jsonl's first line (WACZ 1.1.1, "pages.jsonl").
const pagesHeader = `{"format":"json-pages-1.0","id":"pages","title":"All Pages"}`

// maxLogLine is the longest crawl-log line read; a longer one is skipped
// (a line is a few hundred bytes; URLs are capped at max_url_length).
const maxLogLine = 1 << 20

// Page is one line of pages.jsonl after the header: a capture a replay
// tool lists as a page. ID is the first 16 bytes of sha256(url + " " + ts)
// in hex; TS is when the crawl log says the fetch ended (RFC 3339, UTC,
// milliseconds); Title is the page's <title> when the crawl log has it.
type Page struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	TS    string `json:"ts"`
	Title string `json:"title,omitempty"`
}

// logLine holds the crawl-log fields (storage.LogEntry's keys) pages.jsonl
// needs; decoding only these, with ts kept as text, is what keeps a
// million lines in seconds.
type logLine struct {
	TS       string `json:"ts"`
	URL      string `json:"url"`
	Status   int    `json:"status"`
	MIME     string `json:"mime"`
	Depth    int    `json:"depth"`
	Via      string `json:"via"`
	WARCFile string `json:"warc_file"`
	Title    string `json:"title"`
}

// pageTS returns crawl-log time ts as pages.jsonl writes it (RFC 3339,
// UTC, milliseconds: the crawl log's own form, kept as it is).
func pageTS(ts string) (string, error) {
	if len(ts) == len(pageTimeLayout) && strings.HasSuffix(ts, "Z") {
		return ts, nil
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "", err
	}
	return t.UTC().Format(pageTimeLayout), nil
}

// pageTimeLayout is pages.jsonl's ts layout.
const pageTimeLayout = "2006-01-02T15:04:05.000Z"

// isPage reports whether crawl-log line e is listed in pages.jsonl: its
// response is in a packaged WARC file (warcs), and it is a seed (depth 0,
// no via: listed whatever its status, so a seed that redirected replays
// through the redirect) or an HTML page fetched with status 200.
func isPage(e *logLine, warcs map[string]string) bool {
	if e.WARCFile == "" || e.Status <= 0 {
		return false
	}
	if _, ok := warcs[e.WARCFile]; !ok {
		return false
	}
	if e.Depth == 0 && e.Via == "" {
		return true
	}
	return e.Status == 200 && (e.MIME == "text/html" || e.MIME == "application/xhtml+xml")
}

// writePages writes pages/pages.jsonl from the crawl logs, streamed line
// by line. A URL fetched in several attempts is listed once per attempt
// whose response was packaged (each is a capture of its own). Unreadable
// crawl-log lines are skipped and counted in a warning naming the file. It
// returns the number of pages.
func writePages(ctx context.Context, z *zipOut, in *inputs, log *slog.Logger) (int64, error) {
	e, err := z.create(pagesPath, zip.Deflate)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(struct{ io.Writer }{e}, 64<<10)
	bw.WriteString(pagesHeader + "\n")
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var pages int64
	for _, path := range in.logs {
		n, bad, err := logPages(ctx, path, in.names, enc)
		pages += n
		if err != nil {
			return pages, err
		}
		if bad > 0 {
			log.Warn("crawl-log lines skipped: not a crawl-log entry", "file", path, "lines", bad)
		}
	}
	if err := bw.Flush(); err != nil {
		return pages, err
	}
	e.close()
	return pages, nil
}

// logPages encodes the pages of the crawl log at path; it returns how
// many, and how many lines could not be read as a crawl-log entry.
func logPages(ctx context.Context, path string, warcs map[string]string, enc *json.Encoder) (pages, bad int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, maxLogLine)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return pages, bad, ctx.Err()
		}
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			bad++
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of an overlong line
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var e logLine
			jerr := jsonv2.Unmarshal(line, &e)
			ts := ""
			if jerr == nil {
				ts, jerr = pageTS(e.TS)
			}
			if jerr != nil {
				bad++
			} else if isPage(&e, warcs) {
				id := sha256.Sum256([]byte(e.URL + " " + ts))
				if err := enc.Encode(Page{ID: hex.EncodeToString(id[:16]), URL: e.URL, TS: ts, Title: e.Title}); err != nil {
					return pages, bad, err
				}
				pages++
			}
		}
		if errors.Is(err, io.EOF) {
			return pages, bad, nil
		}
		if err != nil {
			return pages, bad, fmt.Errorf("crawl log %s: %w", path, err)
		}
	}
}
