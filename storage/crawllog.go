package storage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// crawlLogTimeLayout is RFC 3339 with milliseconds, UTC ("Z").
const crawlLogTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// LogEntry is one line of the crawl log: one fetch attempt of one URL. It
// carries the fields of a Heritrix crawl.log line, as JSON.
type LogEntry struct {
	// TS is when the attempt ended; zero means "now" at Write. Encoded as
	// RFC 3339 with milliseconds in UTC, key "ts".
	TS time.Time `json:"-"`
	// URL is the normalized URL fetched.
	URL string `json:"url"`
	// Status is the HTTP status code, or a negative failure code (fetch.Code*, after Heritrix crawl.log codes).
	Status int `json:"status"`
	// Bytes is the payload size in bytes (entity body, headers excluded).
	Bytes int64 `json:"bytes"`
	// MIME is the media type from Content-Type, without parameters.
	MIME string `json:"mime"`
	// Depth is the hop count from the seed.
	Depth int `json:"depth"`
	// Via is the URL of the page the link was found on; "" for seeds.
	Via string `json:"via"`
	// Hops is the hop path from the seed, Heritrix's discovery path: one
	// letter per hop, L link, E embed (page requisite), R redirect, M
	// sitemap; "" for seeds.
	Hops string `json:"hops"`
	// Worker is the worker id.
	Worker string `json:"worker"`
	// DurationMS is the fetch duration in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Digest is the payload digest ("sha1:..."), "" when nothing was stored.
	Digest string `json:"digest"`
	// Attempt is the 1-based attempt number.
	Attempt int `json:"attempt"`
	// ConfigVersion is the R/config znode version the worker applied.
	ConfigVersion int64 `json:"config_version"`
	// WARCFile and WARCOffset locate the response record (ResponseInfo).
	WARCFile   string `json:"warc_file,omitempty"`
	WARCOffset int64  `json:"warc_offset,omitempty"`
	// Error describes the failure, if any.
	Error string `json:"error,omitempty"`
	// Title is an HTML page's <title> text (fetch.Links.Title: trimmed,
	// at most 256 bytes), for page lists such as a WACZ package's
	// pages.jsonl; absent for other responses and for untitled pages.
	Title string `json:"title,omitempty"`
	// Revisit names the profile of the revisit record stored in the
	// response's place (WARC 1.1 section 6.7): RevisitNotModified (a 304
	// answer to a conditional request) or RevisitIdenticalPayload (the
	// payload equals an earlier capture's); absent for a response record.
	Revisit string `json:"revisit,omitempty"`
	// Protocol is "h2" for a response that came over HTTP/2 (as
	// Heritrix's crawl.log annotates it); absent for HTTP/1.x and for
	// failures.
	Protocol string `json:"protocol,omitempty"`
	// Render is true for a page rendered in the browser (config render);
	// absent otherwise.
	Render bool `json:"render,omitempty"`
}

// The values of LogEntry.Revisit, the last path segment of the revisit
// record's WARC-Profile.
const (
	RevisitNotModified      = "server-not-modified"      // ProfileNotModified
	RevisitIdenticalPayload = "identical-payload-digest" // RevisitProfile
)

// RevisitName returns LogEntry.Revisit's name of a revisit record's
// WARC-Profile (ResponseInfo.Profile): RevisitNotModified,
// RevisitIdenticalPayload, or "" for "" (a response record) and any other
// profile.
func RevisitName(profile string) string {
	switch profile {
	case ProfileNotModified:
		return RevisitNotModified
	case RevisitProfile:
		return RevisitIdenticalPayload
	}
	return ""
}

// logEntryJSON fixes the JSON field order with ts first.
type logEntryJSON struct {
	TS string `json:"ts"`
	logEntryNoMethods
}

type logEntryNoMethods LogEntry

// MarshalJSON encodes e with "ts" first, in RFC 3339 with milliseconds,
// UTC.
func (e LogEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(logEntryJSON{TS: e.TS.UTC().Format(crawlLogTimeLayout), logEntryNoMethods: logEntryNoMethods(e)})
}

// UnmarshalJSON decodes a crawl log line; "ts" must be RFC 3339.
func (e *LogEntry) UnmarshalJSON(b []byte) error {
	var j struct {
		TS string `json:"ts"`
		*logEntryNoMethods
	}
	j.logEntryNoMethods = (*logEntryNoMethods)(e)
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, j.TS)
	if err != nil {
		return fmt.Errorf("ts %q: %w", j.TS, err)
	}
	e.TS = t
	return nil
}

// ErrInUse is wrapped by OpenCrawlLog's error when another CrawlLog, in this
// process or another, has the file open.
var ErrInUse = errors.New("storage: in use by another writer")

// CrawlLog appends LogEntry lines (JSON Lines) to a file it alone writes:
// OpenCrawlLog takes an exclusive flock(2) lock on the file for the
// CrawlLog's life and refuses a file another CrawlLog holds (ErrInUse), so
// cutting a partial line back after a failed write can never erase another
// writer's line. Each Write hands its line to the OS in one write call;
// Sync and Close fsync. It is safe for concurrent use; each line is written
// whole or, after a write error, not at all (the file is cut back to its
// last whole line), and a write error is not sticky: the next Write tries
// again, so a disk that filled up and was freed is used again. A failed
// fsync is returned by Sync and the file is reopened; the lines written
// before it may be lost (the page cache cannot be trusted after a failed
// fsync), which SyncBatch's marks tell their writers.
type CrawlLog struct {
	path string
	log  *slog.Logger
	open openFunc // osOpen, or a test's (storage's file system seam)
	lock *os.File // holds the flock(2) lock until Close

	mu       sync.Mutex
	f        file
	size     int64 // bytes of whole lines in f
	closed   bool
	closeErr error // Close's fsync or close error, for Sync after Close
}

// OpenCrawlLog opens path for appending (creating it, mode 0644) and locks
// it (flock(2), exclusive, not waiting) against other writers; log receives
// the reopening after a failed fsync (nil: slog.Default()). It returns an
// error naming path when the file cannot be opened, and one wrapping
// ErrInUse when another CrawlLog, in this process or another, has it open.
// The lock is advisory: it keeps out other CrawlLogs, not other programs.
func OpenCrawlLog(path string, log *slog.Logger) (*CrawlLog, error) {
	return openCrawlLog(path, log, osOpen)
}

// openCrawlLog is OpenCrawlLog with the file system seam open.
func openCrawlLog(path string, log *slog.Logger, open openFunc) (*CrawlLog, error) {
	if log == nil {
		log = slog.Default()
	}
	f, err := open(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: open crawl log: %w", err)
	}
	lock, err := lockFile(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		lock.Close()
		return nil, fmt.Errorf("storage: open crawl log: %w", err)
	}
	return &CrawlLog{path: path, log: log, open: open, lock: lock, f: f, size: st.Size()}, nil
}

// lockFile opens path read-only on a descriptor of its own and takes an
// exclusive flock(2) lock on it without waiting: the lock lives as long as
// that descriptor (the kernel drops it when the process dies, so a killed
// worker leaves no stale lock), and the writing descriptor can be reopened
// meanwhile. flock locks conflict between open file descriptions, so a
// second CrawlLog in the same process is refused too.
func lockFile(path string) (*os.File, error) {
	lf, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("storage: lock crawl log: %w", err)
	}
	for {
		err = syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err == nil {
		return lf, nil
	}
	lf.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("storage: crawl log %s: %w (another worker, or another CrawlLog in this process, holds its lock; give each worker its own output directory)", path, ErrInUse)
	}
	return nil, fmt.Errorf("storage: lock crawl log %s: %w", path, err)
}

// Write appends e as one JSON line, filling a zero TS with the current
// time, and hands it to the OS before it returns (not fsynced: see Sync). It
// returns ErrClosed after Close, or the write error naming the file; after a
// write error the file is cut back to its last whole line (safe: no other
// CrawlLog appends to it), and the next Write tries again.
func (l *CrawlLog) Write(e LogEntry) error {
	if e.TS.IsZero() {
		e.TS = time.Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("storage: crawl log entry for %q: %w", e.URL, err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("storage: crawl log entry for %q: %w", e.URL, ErrClosed)
	}
	// Write-through: the line reaches the OS before Write returns, so a
	// worker killed with SIGKILL right after logging (and before completing
	// the item) loses no line. The crawler logs before it completes an item.
	n, err := l.f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		werr := fmt.Errorf("storage: write crawl log %s: %w", l.path, err)
		if n > 0 {
			// Drop the partial line so the file stays valid JSON Lines.
			if terr := l.f.Truncate(l.size); terr != nil {
				werr = errors.Join(werr, fmt.Errorf("storage: cut crawl log %s back to its last line: %w", l.path, terr))
			}
		}
		return werr
	}
	l.size += int64(n)
	return nil
}

// Flush is kept for callers of the buffered version: lines are written
// through, so there is nothing to flush. It returns nil.
func (l *CrawlLog) Flush() error { return nil }

// Sync fsyncs the lines written so far to stable storage (fsync(2)). It
// returns the error naming the file; after Close it returns Close's error
// (Close syncs). After a failed fsync the lines written before it may be
// lost whatever a later fsync says (it reports a write-back error once), so
// the file is reopened (logged) and only the error tells the lines' writers:
// wait through SyncBatch.Sync with a mark taken before the Write.
func (l *CrawlLog) Sync() error {
	l.mu.Lock()
	closed, f := l.closed, l.f
	l.mu.Unlock()
	if closed {
		return l.closeError()
	}
	// The fsync runs outside the lock: Write goes on meanwhile (a line
	// written during the fsync may or may not be covered by it; its
	// writer's own Sync comes after).
	err := f.Sync()
	if err == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed && errors.Is(err, os.ErrClosed) {
		return l.closeErr // Close closed f meanwhile, after its own fsync
	}
	err = fmt.Errorf("storage: sync crawl log %s: %w", l.path, err)
	if !l.closed && l.f == f {
		l.reopen(err)
	}
	return err
}

// closeError returns Close's error.
func (l *CrawlLog) closeError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeErr
}

// reopen replaces l.f by a new descriptor of the same file after its fsync
// failed with why, and logs it; if the file cannot be opened, l.f stays.
// l.mu must be held.
func (l *CrawlLog) reopen(why error) {
	nf, err := l.open(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		var st os.FileInfo
		if st, err = nf.Stat(); err == nil {
			l.f.Close()
			l.f, l.size = nf, st.Size()
		} else {
			nf.Close()
		}
	}
	l.log.Error("crawl log fsync failed: lines written before it may be lost, their items are not finished; the file is reopened",
		"file", l.path, "error", why, "reopen_error", err)
}

// Close fsyncs and closes the file and drops its lock. It is idempotent.
func (l *CrawlLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if e := l.f.Sync(); e != nil {
		err = fmt.Errorf("storage: sync crawl log %s: %w", l.path, e)
	}
	if e := l.f.Close(); err == nil && e != nil {
		err = fmt.Errorf("storage: close crawl log %s: %w", l.path, e)
	}
	l.lock.Close()
	l.closeErr = err
	return err
}

// ReadCrawlLog parses a crawl log (JSON Lines of LogEntry); blank lines are
// skipped. Errors name the 1-based line number.
func ReadCrawlLog(r io.Reader) ([]LogEntry, error) {
	br := bufio.NewReader(r)
	var out []LogEntry
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e LogEntry
			if jerr := json.Unmarshal(line, &e); jerr != nil {
				return out, fmt.Errorf("storage: crawl log line %d: %w", n, jerr)
			}
			out = append(out, e)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("storage: read crawl log line %d: %w", n, err)
		}
	}
}
