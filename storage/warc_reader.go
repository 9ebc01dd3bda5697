package storage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"strconv"
	"strings"
)

// maxHeaderBytes bounds the named-fields section of one record.
const maxHeaderBytes = 1 << 20

// Record is one WARC record as read by Reader.
type Record struct {
	// Version is the version line, e.g. "WARC/1.1".
	Version string
	// Header maps field names, as written, to values. When a name repeats
	// the first value is kept. Use Get for case-insensitive lookup.
	Header map[string]string
	// Block is the record block (Content-Length bytes).
	Block []byte
	// Offset is the byte offset in the file of the gzip member that holds
	// the record (compressed input) or of the record itself (plain input).
	Offset int64
}

// Get returns the value of the named field, matching the name
// case-insensitively (WARC 1.1 section 4: field names are
// case-insensitive), or "" when absent.
func (r *Record) Get(name string) string {
	if v, ok := r.Header[name]; ok {
		return v
	}
	for k, v := range r.Header {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Type returns the WARC-Type field.
func (r *Record) Type() string { return r.Get("WARC-Type") }

// HTTPPayload returns the entity body of an application/http block: the
// bytes after the first CRLF CRLF, with a chunked transfer coding removed
// when the HTTP header says "Transfer-Encoding: chunked" (field name in any
// case; RFC 9112 section 7.1, via net/http/httputil's chunked reader), so
// it is what WARC-Payload-Digest covers (WARC 1.1 section 5.9). Content
// codings (gzip) are kept. It returns an error when the block holds no
// CRLF CRLF or the chunked framing is broken (a truncated record gives the
// bytes decoded so far with the error).
func (r *Record) HTTPPayload() ([]byte, error) {
	i := bytes.Index(r.Block, crlf2)
	if i < 0 {
		return nil, fmt.Errorf("storage: record %s: HTTP block has no end of headers", r.Get("WARC-Record-ID"))
	}
	body := r.Block[i+4:]
	if !isChunked(r.Block[:i]) {
		return body, nil
	}
	out, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body)))
	if err != nil {
		return out, fmt.Errorf("storage: record %s: chunked HTTP body: %w", r.Get("WARC-Record-ID"), err)
	}
	return out, nil
}

// isChunked reports whether an HTTP header block has a Transfer-Encoding
// field whose last coding is chunked.
func isChunked(header []byte) bool {
	for _, line := range strings.Split(string(header), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Transfer-Encoding") {
			continue
		}
		codings := strings.Split(value, ",")
		if strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked") {
			return true
		}
	}
	return false
}

// Reader reads WARC records from a plain or gzip-compressed stream (one or
// many gzip members, WARC 1.1 annex D). It is a minimal reader for tests and
// end-to-end checks: it does not verify digests (compare Digest(Block) with
// WARC-Block-Digest to do so).
type Reader struct {
	src        *bufio.Reader
	cnt        *countingByteReader
	gz         *gzip.Reader
	cur        *bufio.Reader // plain stream, or the current gzip member
	started    bool
	compressed bool
	memberOff  int64
	pos        int64 // bytes consumed from cur (plain input offsets)
	err        error
}

// NewReader returns a Reader over r. Compression is detected from the first
// bytes on the first call to Next.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: bufio.NewReaderSize(r, 64<<10)}
}

// countingByteReader counts bytes consumed from a bufio.Reader; being an
// io.ByteReader it keeps compress/flate from reading ahead, so the count is
// the exact end of a gzip member.
type countingByteReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingByteReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingByteReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// Next returns the next record, or io.EOF after the last one. Errors are
// sticky and name the offset where the record started.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
	}
	return rec, err
}

func (r *Reader) next() (*Record, error) {
	if !r.started {
		r.started = true
		magic, err := r.src.Peek(2)
		if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
			r.compressed = true
			r.cnt = &countingByteReader{r: r.src}
		} else {
			r.cur = r.src
		}
	}
	for {
		if r.cur == nil { // compressed: open the next member
			r.memberOff = r.cnt.n
			var err error
			if r.gz == nil {
				r.gz, err = gzip.NewReader(r.cnt)
			} else {
				err = r.gz.Reset(r.cnt)
			}
			if err == io.EOF {
				return nil, io.EOF
			}
			if err != nil {
				return nil, fmt.Errorf("storage: WARC gzip member at offset %d: %w", r.memberOff, err)
			}
			r.gz.Multistream(false)
			r.cur = bufio.NewReader(r.gz)
		}
		if _, err := r.cur.Peek(1); err != nil {
			if err != io.EOF {
				return nil, fmt.Errorf("storage: WARC read at offset %d: %w", r.offset(), err)
			}
			if !r.compressed {
				return nil, io.EOF
			}
			r.cur = nil // end of member
			continue
		}
		off := r.offset()
		rec, err := r.parse()
		if err != nil {
			return nil, fmt.Errorf("storage: WARC record at offset %d: %w", off, err)
		}
		rec.Offset = off
		return rec, nil
	}
}

func (r *Reader) offset() int64 {
	if r.compressed {
		return r.memberOff
	}
	return r.pos
}

// parse reads one record from r.cur (WARC 1.1 section 4 grammar).
func (r *Reader) parse() (*Record, error) {
	var hdrBytes int
	line := func() (string, error) {
		s, err := r.cur.ReadString('\n')
		r.pos += int64(len(s))
		hdrBytes += len(s)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err == nil && hdrBytes > maxHeaderBytes {
			err = fmt.Errorf("header longer than %d bytes", maxHeaderBytes)
		}
		return strings.TrimRight(s, "\r\n"), err
	}
	v, err := line()
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(v, "WARC/") {
		return nil, fmt.Errorf("version line %q does not start with WARC/", trunc(v))
	}
	rec := &Record{Version: v, Header: map[string]string{}}
	last := ""
	for {
		l, err := line()
		if err != nil {
			return nil, err
		}
		if l == "" {
			break
		}
		if (l[0] == ' ' || l[0] == '\t') && last != "" { // continuation line
			rec.Header[last] += " " + strings.TrimSpace(l)
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("malformed field line %q", trunc(l))
		}
		last = name
		if _, dup := rec.Header[name]; !dup {
			rec.Header[name] = strings.TrimSpace(value)
		} else {
			last = ""
		}
	}
	cl := rec.Get("Content-Length")
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bad Content-Length %q", trunc(cl))
	}
	// Grow the block as data arrives rather than trusting n up front.
	var block bytes.Buffer
	got, err := io.Copy(&block, io.LimitReader(r.cur, n))
	r.pos += got
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, fmt.Errorf("block of %d bytes, Content-Length %d: %w", got, n, io.ErrUnexpectedEOF)
	}
	rec.Block = block.Bytes()
	var tail [4]byte
	k, err := io.ReadFull(r.cur, tail[:])
	r.pos += int64(k)
	if err != nil || !bytes.Equal(tail[:], crlf2) {
		return nil, errors.New("record does not end with CRLF CRLF after its block")
	}
	return rec, nil
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
