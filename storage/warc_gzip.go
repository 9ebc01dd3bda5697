package storage

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/klauspost/compress/gzip"
)

// members compresses WARC records into gzip members (WARC 1.1 annex D.2:
// one member per record, so a record can be read from its offset alone).
// Members are independent, so concurrent WriteExchange calls compress in
// parallel, outside the Writer's lock, and only the write of the finished
// bytes is serialized. Safe for concurrent use.
type members struct {
	level int
	// free holds idle writers of level, at most GOMAXPROCS (about 1 MB
	// each at the default level, its match tables and window): unlike a
	// sync.Pool, which every garbage collection empties, it keeps them,
	// so a busy worker does not allocate and clear a writer per record.
	free chan *gzip.Writer
}

// newMembers returns members compressing at level (checked by the caller).
func newMembers(level int) members {
	return members{level: level, free: make(chan *gzip.Writer, runtime.GOMAXPROCS(0))}
}

// compress returns r as one gzip member.
func (m *members) compress(r *record) ([]byte, error) {
	var buf bytes.Buffer
	var zw *gzip.Writer
	select {
	case zw = <-m.free:
		zw.Reset(&buf)
	default:
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, m.level); err != nil {
			return nil, fmt.Errorf("storage: WARC gzip level %d: %w", m.level, err)
		}
	}
	if err := r.writeTo(zw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zw.Reset(nil) // hold no reference to buf while idle
	select {
	case m.free <- zw:
	default:
	}
	return buf.Bytes(), nil
}

// writeRecord writes r as one gzip member to the current file and flushes
// it to the OS. w.mu must be held.
func (w *Writer) writeRecord(r *record) error {
	b, err := w.gz.compress(r)
	if err != nil {
		return err
	}
	return w.writeMember(b)
}

// writeMember writes a compressed member to the current file and flushes
// it to the OS. w.mu must be held.
func (w *Writer) writeMember(b []byte) error {
	if _, err := w.cur.cw.Write(b); err != nil {
		return err
	}
	return w.cur.bw.Flush()
}
