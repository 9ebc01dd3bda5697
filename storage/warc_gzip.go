package storage

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// members compresses WARC records into gzip members (WARC 1.1 annex D.2:
// one member per record, so a record can be read from its offset alone).
// Members are independent, so concurrent WriteExchange calls compress in
// parallel, outside the Writer's lock, and only the write of the finished
// bytes is serialized. Safe for concurrent use.
type members struct {
	level int
	pool  sync.Pool // *gzip.Writer of level
}

// compress returns r as one gzip member.
func (m *members) compress(r *record) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := m.pool.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, m.level); err != nil {
			return nil, fmt.Errorf("storage: WARC gzip level %d: %w", m.level, err)
		}
	} else {
		zw.Reset(&buf)
	}
	if err := r.writeTo(zw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	m.pool.Put(zw)
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
