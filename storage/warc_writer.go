package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/klauspost/compress/gzip"
)

// DefaultMaxFileBytes is the default WARC file size at which the writer
// rotates: 1 GiB, the customary WARC file size (WARC 1.1 annex C suggests
// files of about 1 GB).
const DefaultMaxFileBytes = 1 << 30

// OpenSuffix is appended to the name of the WARC file being written; it is
// removed (by rename) when the file is complete, so a file still carrying
// it after the writer stopped was left by a crash (Heritrix does the same).
const OpenSuffix = ".open"

// WriterOptions configures a Writer. The zero value is usable.
type WriterOptions struct {
	// MaxFileBytes is the compressed size in bytes at which the current file
	// is closed and the next write opens a new one; 0 means
	// DefaultMaxFileBytes. A file may exceed it by one request/response
	// pair, which is never split across files.
	MaxFileBytes int64
	// WorkerID is the last part of file names (letters, digits, '.', '_'
	// and '-' are kept, other characters become '_'); "" means 8 random hex
	// digits.
	WorkerID string
	// Version is the zkcrawl version in the warcinfo "software" field
	// ("zkcrawl/<Version>"); "" means "dev".
	Version string
	// Hostname is the warcinfo "hostname" field; "" means os.Hostname().
	Hostname string
	// Operator, IsPartOf (the crawl name), Description, Robots (robots.txt
	// policy, e.g. "obey") and UserAgent are written to warcinfo when set
	// (WARC 1.1 annex B; "http-header-user-agent" for UserAgent).
	Operator    string
	IsPartOf    string
	Description string
	Robots      string
	UserAgent   string
	// CompressionLevel is the gzip level of every record (1 = BestSpeed ..
	// 9 = BestCompression, -1 = DefaultCompression); 0 means
	// DefaultCompression. Records are compressed by
	// github.com/klauspost/compress/gzip, the same gzip format as
	// compress/gzip, faster: the 2,349 records of one crawl of the
	// PostgreSQL manual (18.0 MB) took 140 ms at its default level (5.47 MB)
	// against compress/gzip's 359 ms at its default (5.34 MB), member by
	// member on this project's 2-core benchmark machine (2026-11-23).
	CompressionLevel int
	// Logger receives file open/close events; nil means slog.Default().
	Logger *slog.Logger
	// RevisitURLs is how many URLs the writer remembers (least recently
	// written dropped first) to turn an identical payload of the same URL
	// written again (a retried fetch, a redirect loop) into a revisit
	// record; 0 means DefaultRevisitURLs, -1 turns revisits off.
	RevisitURLs int
}

// DefaultRevisitURLs is the default of WriterOptions.RevisitURLs: about
// 200 bytes of memory each, 20 MB in all.
const DefaultRevisitURLs = 100_000

// revisitRef is the last full response record written for a URL.
type revisitRef struct {
	payloadDigest string
	recordID      string
	date          string // its WARC-Date
}

// ResponseInfo locates the response record of an exchange, for the crawl
// log and for CDX-style lookups.
type ResponseInfo struct {
	// File is the final base name of the WARC file (without OpenSuffix).
	File string
	// Offset is the byte offset in File of the gzip member holding the
	// response record.
	Offset int64
	// Length is the compressed length in bytes of that gzip member.
	Length int64
	// RecordID is the response's WARC-Record-ID ("<urn:uuid:...>").
	RecordID string
	// PayloadDigest is the response's WARC-Payload-Digest ("sha1:...").
	PayloadDigest string
	// Revisit is set when the record is a revisit record (the same URL was
	// written before with the same payload digest, or Exchange.RevisitOf)
	// instead of a response.
	Revisit bool
	// Profile is the revisit record's WARC-Profile (RevisitProfile or
	// ProfileNotModified); "" for a response record.
	Profile string
}

// Writer writes HTTP exchanges to rotating gzip-compressed WARC 1.1 files,
// one gzip member per record (WARC 1.1 annex D), each file opening with a
// warcinfo record. File names follow the Heritrix/IIPC convention
// <prefix>-<yyyyMMddHHmmssSSS UTC>-<serial %05d>-<worker id>.warc.gz.
// Every record is flushed to the operating system as soon as it is written
// (no fsync per record: Sync, usually through a SyncBatch, and Close fsync). A Writer is safe for
// concurrent use; the two records of an exchange are always adjacent.
// Beside each file it writes a CDXJ index, <name>.cdxj, when the file is
// closed (cdxjIndex, writeIndex): the sorted lines `warcio cdx-index`
// prints for the file, built from the offsets and lengths the writer has,
// holding at most 4 MiB of lines per file in memory (more are spilled to
// sorted run files).
//
// A failed fsync (or flush) of a file, at Sync, at rotation, after a write
// error or at Close, ends that file: it is closed and, unless a rotation
// renamed it meanwhile, keeps OpenSuffix (its records may be lost whatever a
// later fsync says: the page cache cannot be trusted after a failed fsync),
// it is logged, the next write opens a new
// file, SyncErr names the failure for the file's records, and Sync returns
// it (once) if no other call did.
type Writer struct {
	dir, prefix, suffix string
	opts                WriterOptions
	log                 *slog.Logger
	openFile            openFunc // osOpen, or a test's (storage's file system seam)

	revisits *lru.Cache[string, revisitRef] // nil: revisits off

	mu         sync.Mutex
	serial     int
	files      int // files opened
	cur        *warcFile
	closed     bool
	failed     map[string]error // final base name -> why its records may be lost; one entry per failed file
	unreported []error          // failures of files closed since the last Sync, for the next Sync

	gz members // compresses records; used with and without mu
}

// warcFile is the file being written.
type warcFile struct {
	f          file
	bw         *bufio.Writer
	cw         *countingWriter
	name       string // final base name
	openPath   string // full path with OpenSuffix
	warcinfoID string
	index      *cdxjIndex // the CDXJ lines of its response and revisit records
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// NewWriter returns a Writer creating files in dir (created if missing)
// whose names start with prefix (letters, digits, '.', '_', '-'). No file is
// created before the first WriteExchange. It returns an error naming dir or
// prefix when they are unusable.
func NewWriter(dir, prefix string, opts WriterOptions) (*Writer, error) {
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("storage: WARC file prefix %q: want letters, digits, '.', '_' or '-'", prefix)
	}
	if opts.MaxFileBytes < 0 {
		return nil, fmt.Errorf("storage: MaxFileBytes %d is negative", opts.MaxFileBytes)
	}
	if opts.CompressionLevel < gzip.HuffmanOnly || opts.CompressionLevel > gzip.BestCompression {
		return nil, fmt.Errorf("storage: CompressionLevel %d is outside %d..%d", opts.CompressionLevel, gzip.HuffmanOnly, gzip.BestCompression)
	}
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: WARC directory %q: %w", dir, err)
	}
	suffix := sanitize(opts.WorkerID)
	if suffix == "" {
		suffix = strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	level := opts.CompressionLevel
	if level == 0 {
		level = gzip.DefaultCompression
	}
	w := &Writer{dir: dir, prefix: prefix, suffix: suffix, opts: opts, log: log, openFile: osOpen, gz: newMembers(level)}
	if opts.RevisitURLs < -1 {
		return nil, fmt.Errorf("storage: RevisitURLs %d: want -1 (off), 0 (default) or a positive count", opts.RevisitURLs)
	}
	if opts.RevisitURLs != -1 {
		n := opts.RevisitURLs
		if n == 0 {
			n = DefaultRevisitURLs
		}
		w.revisits, _ = lru.New[string, revisitRef](n) // fails only for n <= 0
	}
	return w, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// WriteExchange writes ex as a request record followed by a response record
// (WARC 1.1 sections 6.4 and 6.5) to the current file, opening a new file
// first when none is open, and returns where the response record went. The
// response's block is ex.RawResponse as it crossed the wire, or else the
// normalized status line and headers followed by Body; its
// WARC-Payload-Digest covers Body. When the same TargetURI was written
// before (within the last RevisitURLs URLs) with the same payload digest
// and ex is not truncated, a revisit record (profile RevisitProfile, block
// = the HTTP header only) takes the response's place and
// ResponseInfo.Revisit is set; ex.RevisitOf asks for one explicitly
// (Exchange). Errors wrap ErrBadExchange for
// invalid input (nothing is written), ErrClosed after Close, or the I/O
// error; after an I/O error the current file is cut back to its last
// complete record and closed, and the next call opens a new file.
func (w *Writer) WriteExchange(ex Exchange) (ResponseInfo, error) {
	p, err := prepare(ex) // validation and digests: no lock needed
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ResponseInfo{}, fmt.Errorf("write WARC record for %q: %w", ex.TargetURI, ErrClosed)
	}
	if err != nil {
		return ResponseInfo{}, err
	}
	if w.cur == nil {
		if err := w.open(); err != nil {
			return ResponseInfo{}, err
		}
	}
	revisit, profile := false, ""
	if ref := ex.RevisitOf; ref != nil && !ex.Truncated {
		p.toRevisitOf(*ref, formatDate(ref.Date))
		revisit, profile = true, ref.Profile
	} else if w.revisits != nil && !ex.Truncated {
		if ref, ok := w.revisits.Get(ex.TargetURI); ok && ref.payloadDigest == p.payloadDigest {
			p.toRevisit(ref)
			revisit, profile = true, RevisitProfile
		}
	}
	// Compress outside the lock (members), then write under it. If another
	// call rotated the file meanwhile, the records must name the new file's
	// warcinfo record: compress them again.
	var req, resp []byte
	for {
		wf := w.cur
		p.setWarcinfo(wf.warcinfoID)
		w.mu.Unlock()
		req, err = w.gz.compress(p.req)
		if err == nil {
			resp, err = w.gz.compress(p.resp)
		}
		w.mu.Lock()
		if err != nil {
			return ResponseInfo{}, fmt.Errorf("compress WARC records for %q: %w", ex.TargetURI, err)
		}
		if w.closed {
			return ResponseInfo{}, fmt.Errorf("write WARC record for %q: %w", ex.TargetURI, ErrClosed)
		}
		if w.cur == wf {
			break
		}
		if w.cur == nil {
			if err := w.open(); err != nil {
				return ResponseInfo{}, err
			}
		}
	}
	start := w.cur.cw.n
	if err := w.writeMember(req); err != nil {
		return ResponseInfo{}, w.abandon(start, fmt.Errorf("write WARC request record for %q to %s: %w", ex.TargetURI, w.cur.name, err))
	}
	respOff := w.cur.cw.n
	if err := w.writeMember(resp); err != nil {
		return ResponseInfo{}, w.abandon(start, fmt.Errorf("write WARC response record for %q to %s: %w", ex.TargetURI, w.cur.name, err))
	}
	info := ResponseInfo{
		File:          w.cur.name,
		Offset:        respOff,
		Length:        w.cur.cw.n - respOff,
		RecordID:      p.respID,
		PayloadDigest: p.payloadDigest,
		Revisit:       revisit,
		Profile:       profile,
	}
	recType := TypeResponse
	if revisit {
		recType = TypeRevisit
	}
	if err := w.cur.index.add(p.cdx.line(recType, info.Offset, info.Length, info.File)); err != nil {
		w.log.Error("CDXJ index of WARC file abandoned: rebuild it with `warcio cdx-index`", "file", w.cur.name, "err", err)
	}
	if w.revisits != nil && !revisit && !ex.Truncated {
		w.revisits.Add(ex.TargetURI, revisitRef{payloadDigest: p.payloadDigest, recordID: p.respID, date: p.date})
	}
	if w.cur.cw.n >= w.opts.MaxFileBytes {
		if err := w.closeFile(); err != nil {
			// The records are in the file; report the failure but keep the info.
			return info, err
		}
	}
	return info, nil
}

// Files returns how many WARC files this Writer has opened so far (the one
// being written included).
func (w *Writer) Files() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.files
}

// open creates the next file as <name>.open and writes its warcinfo record.
func (w *Writer) open() error {
	for attempt := 0; ; attempt++ {
		now := time.Now().UTC()
		ts := strings.Replace(now.Format("20060102150405.000"), ".", "", 1)
		name := fmt.Sprintf("%s-%s-%05d-%s.warc.gz", w.prefix, ts, w.serial, w.suffix)
		w.serial++
		final := filepath.Join(w.dir, name)
		openPath := final + OpenSuffix
		if _, err := os.Lstat(final); err == nil {
			if attempt < 100 {
				continue // name taken (same millisecond and worker id); next serial
			}
			return fmt.Errorf("storage: open WARC file %s: %w", final, fs.ErrExist)
		}
		f, err := w.openFile(openPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && attempt < 100 {
			continue
		}
		if err != nil {
			return fmt.Errorf("storage: open WARC file: %w", err)
		}
		bw := bufio.NewWriterSize(f, 64<<10)
		wf := &warcFile{f: f, bw: bw, cw: &countingWriter{w: bw}, name: name, openPath: openPath, warcinfoID: newRecordID(),
			index: newCDXJIndex(w.dir, name)}
		w.cur = wf
		if err := w.writeRecord(warcinfoRecord(wf.warcinfoID, name, now, &w.opts)); err != nil {
			f.Close()
			os.Remove(openPath)
			w.cur = nil
			return fmt.Errorf("storage: write warcinfo record to %s: %w", openPath, err)
		}
		w.files++
		w.log.Info("WARC file opened", "file", openPath)
		return nil
	}
}

// closeFile fsyncs and closes the current file, writes its CDXJ index
// (writeIndex) and renames it to its final name. If the flush, fsync or
// close fails the file keeps OpenSuffix and is marked failed, the error
// kept for the next Sync (closedFailed), and no index is written.
func (w *Writer) closeFile() error {
	wf := w.cur
	w.cur = nil
	err := wf.bw.Flush()
	if e := wf.f.Sync(); err == nil {
		err = e
	}
	if e := wf.f.Close(); err == nil {
		err = e
	}
	if err != nil {
		wf.index.discard()
		err = fmt.Errorf("storage: close WARC file %s: %w", wf.openPath, err)
		w.closedFailed(wf, err)
		return err
	}
	w.writeIndex(wf)
	final := filepath.Join(w.dir, wf.name)
	if err := os.Rename(wf.openPath, final); err != nil {
		return fmt.Errorf("storage: close WARC file: %w", err)
	}
	syncDir(w.dir) // make the rename durable; best effort
	w.log.Info("WARC file closed", "file", final, "bytes", wf.cw.n)
	return nil
}

// abandon handles an I/O error in the middle of an exchange: it cuts the
// file back to start (the end of the last complete record) and closes it.
// If the cut fails the file keeps its OpenSuffix so it reads as crashed.
// It returns cause, joined with any cleanup error.
func (w *Writer) abandon(start int64, cause error) error {
	wf := w.cur
	w.cur = nil
	terr := wf.f.Truncate(start)
	// The complete records before start are other exchanges' and stay:
	// they must be durable, or their writers told (fileFailed).
	if err := wf.f.Sync(); err != nil {
		wf.index.discard()
		err = fmt.Errorf("storage: sync WARC file %s: %w", wf.openPath, err)
		wf.f.Close()
		w.closedFailed(wf, err)
		return errors.Join(cause, err)
	}
	wf.f.Close()
	if terr != nil {
		wf.index.discard()
		w.log.Error("WARC file left incomplete", "file", wf.openPath, "err", terr)
		return errors.Join(cause, fmt.Errorf("storage: truncate %s: %w", wf.openPath, terr))
	}
	w.writeIndex(wf) // the records before start, all complete
	if err := os.Rename(wf.openPath, filepath.Join(w.dir, wf.name)); err != nil {
		return errors.Join(cause, err)
	}
	w.log.Warn("WARC file closed after write error", "file", wf.name, "err", cause)
	return cause
}

// Sync fsyncs the current file (fsync(2)): every record written so far is
// then on stable storage (closed files were fsynced when closed). It
// returns the error naming the file, joined with the failures of files
// closed since the previous Sync (rotation, a write error, Close) that no
// Sync returned yet; nil when there are none. A failed flush or fsync ends
// the current file (see Writer). Records written during a failed fsync may
// be lost too: a caller waiting for its records takes a SyncBatch mark
// before writing them, or asks SyncErr about their file.
func (w *Writer) Sync() error {
	w.mu.Lock()
	pending := w.takeUnreported()
	wf := w.cur
	if w.closed || wf == nil {
		w.mu.Unlock()
		return pending
	}
	if err := wf.bw.Flush(); err != nil {
		err = fmt.Errorf("storage: flush WARC file %s: %w", wf.openPath, err)
		w.endFailed(wf, err)
		w.mu.Unlock()
		return errors.Join(pending, err)
	}
	w.mu.Unlock()
	// The fsync runs outside the lock, so WriteExchange goes on meanwhile.
	err := wf.f.Sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
	case errors.Is(err, os.ErrClosed) && w.cur != wf:
		// Closed meanwhile (rotation, a write error, Close), after an
		// fsync of its own; a failure of it is in unreported.
		err = nil
	default:
		// Even when a rotation closed the file meanwhile and its fsync
		// succeeded: fsync reports a write-back error once.
		err = fmt.Errorf("storage: sync WARC file %s: %w", wf.openPath, err)
		w.endFailed(wf, err)
	}
	return errors.Join(pending, err, w.takeUnreported())
}

// SyncErr returns why the records of WARC file name (a ResponseInfo.File
// of this Writer) may not be on stable storage: the failed flush or fsync
// of that file, at Sync, at rotation, after a write error or at Close; nil
// when none failed. A caller that waited for a successful Sync after
// writing its records asks it too: the file may have been rotated away,
// and its failure returned to another caller, before that Sync ran.
func (w *Writer) SyncErr(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed[name]
}

// endFailed ends file wf after its flush or fsync failed with err: it is
// marked failed and, if still current, closed keeping OpenSuffix, so the
// next write opens a new file. w.mu must be held.
func (w *Writer) endFailed(wf *warcFile, err error) {
	w.fileFailed(wf, err)
	if w.cur == wf {
		w.cur = nil
		wf.f.Close()
		wf.index.discard()
	}
}

// writeIndex writes the CDXJ index of wf, a file whose records are all
// fsynced and which still carries OpenSuffix, beside it (cdxjIndex.write:
// temp file, fsync, rename, directory fsync). It runs before the WARC
// file's rename, so a WARC file with its final name always has its index
// on stable storage too: replay tools and operators never find a finished
// WARC without one; a crash in between leaves a .open file beside a
// complete index of its records. A failed index is logged, not returned:
// the records are safe and `warcio cdx-index` rebuilds the index from them.
// w.mu must be held.
func (w *Writer) writeIndex(wf *warcFile) {
	if err := wf.index.write(); err != nil {
		w.log.Error("CDXJ index of WARC file not written: rebuild it with `warcio cdx-index`", "file", wf.name, "err", err)
	}
}

// fileFailed records that wf's records may be lost (err) and logs it; the
// first failure of a file counts. w.mu must be held.
func (w *Writer) fileFailed(wf *warcFile, err error) {
	if _, ok := w.failed[wf.name]; ok {
		return
	}
	if w.failed == nil {
		w.failed = make(map[string]error)
	}
	w.failed[wf.name] = err
	w.log.Error("WARC file fsync failed: its records may be lost and their items are not finished; the file is closed and keeps its .open suffix, the next records go to a new file",
		"file", wf.openPath, "error", err)
}

// closedFailed records that wf, closed by closeFile or abandon rather than
// by a Sync, failed with err (fileFailed) and keeps err for the next Sync
// to return. w.mu must be held.
func (w *Writer) closedFailed(wf *warcFile, err error) {
	w.fileFailed(wf, err)
	w.unreported = append(w.unreported, err)
}

// takeUnreported returns the failures of closed files no Sync returned yet,
// joined, and forgets them. w.mu must be held.
func (w *Writer) takeUnreported() error {
	err := errors.Join(w.unreported...)
	w.unreported = nil
	return err
}

// Close flushes and closes the current file, renaming it to drop
// OpenSuffix. Later writes fail with ErrClosed; Close is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.cur == nil {
		return nil
	}
	return w.closeFile()
}
