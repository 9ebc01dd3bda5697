package crawlreport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/zkcrawl/zkcrawl/storage"
)

// logLine is the part of a storage.LogEntry line the reports use, decoded
// in one pass with go-json-experiment/json (encoding/json/v2's prototype):
// LogEntry's own UnmarshalJSON parses each line twice with encoding/json,
// which made decoding most of the report's time.
type logLine struct {
	TS      string `json:"ts"`
	URL     string `json:"url"`
	Status  int    `json:"status"`
	Bytes   int64  `json:"bytes"`
	MIME    string `json:"mime"`
	Depth   int    `json:"depth"`
	Via     string `json:"via"`
	Hops    string `json:"hops"`
	Attempt int    `json:"attempt"`
}

// cursor reads one crawl log line by line; cur is the last valid entry.
type cursor struct {
	path string
	idx  int // order among the files, for a stable merge
	f    *os.File
	r    *bufio.Reader
	line int64
	cur  storage.LogEntry
	// bad receives each bad line, with its 1-based number and reason.
	bad func(BadLine)
}

func openCursor(path string, idx int, bad func(BadLine)) (*cursor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crawlreport: %w", err)
	}
	return &cursor{path: path, idx: idx, f: f, r: bufio.NewReaderSize(f, 64<<10), bad: bad}, nil
}

// next reads up to the next valid entry into c.cur; false at the end of
// the file. Bad lines (not JSON, no url or ts, over MaxLineBytes) go to
// c.bad and are skipped. A read error ends the file with an error naming
// it and the line.
func (c *cursor) next() (bool, error) {
	for {
		b, tooLong, err := c.readLine()
		if len(b) > 0 || tooLong || err == nil {
			c.line++
			ok, reason := c.parse(b, tooLong)
			if ok {
				return true, nil
			}
			if reason != "" {
				c.bad(BadLine{File: c.path, Line: c.line, Reason: reason})
			}
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("crawlreport: read %s line %d: %w", c.path, c.line+1, err)
		}
	}
}

// parse decodes b into c.cur: ok, or why the line is bad ("" for a
// blank line, which is skipped silently).
func (c *cursor) parse(b []byte, tooLong bool) (ok bool, reason string) {
	if tooLong {
		return false, fmt.Sprintf("longer than %d bytes", MaxLineBytes)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false, ""
	}
	var l logLine
	if err := jsonv2.Unmarshal(b, &l); err != nil {
		return false, "not a crawl-log entry: " + err.Error()
	}
	if l.URL == "" {
		return false, "no url"
	}
	ts, err := time.Parse(time.RFC3339Nano, l.TS)
	if err != nil {
		return false, fmt.Sprintf("ts %q: not RFC 3339", l.TS)
	}
	c.cur = storage.LogEntry{TS: ts, URL: l.URL, Status: l.Status, Bytes: l.Bytes, MIME: l.MIME,
		Depth: l.Depth, Via: l.Via, Hops: l.Hops, Attempt: l.Attempt}
	return true, ""
}

// readLine returns the next line without its newline; a line over
// MaxLineBytes is read to its end and dropped (tooLong). err is io.EOF at
// the end of the file (b may hold a last line without newline).
func (c *cursor) readLine() (b []byte, tooLong bool, err error) {
	var long []byte
	for {
		part, err := c.r.ReadSlice('\n')
		if !tooLong {
			if len(long)+len(part) > MaxLineBytes+1 {
				tooLong, long = true, nil
			} else if errors.Is(err, bufio.ErrBufferFull) || long != nil {
				long = append(long, part...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, true, err
		}
		if long != nil {
			part = long
		}
		return bytes.TrimSuffix(part, []byte("\n")), false, err
	}
}

func (c *cursor) close() { c.f.Close() }

// cursorHeap orders cursors by their current entry's time stamp, then by
// file order: a k-way merge of the files into one time-ordered stream.
type cursorHeap []*cursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.cur.TS.Equal(b.cur.TS) {
		return a.cur.TS.Before(b.cur.TS)
	}
	return a.idx < b.idx
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
