package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// blockLines is how many CDXJ lines one gzip member of index.cdx.gz holds
// (one index.idx line each), and the size from which the index takes that
// compressed form: js-wacz's ZIP_NUM_SHARED_INDEX_LIMIT. A smaller index
// is the plain indexes/index.cdx, as js-wacz writes it.
const blockLines = 3000

// idxMeta is index.idx's first line (py-wacz and js-wacz write it so).
const idxMeta = `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`

// blockWriter writes the compressed (ZipNum) CDXJ index: lines are gathered
// by blockLines into one gzip member each, written to out (the stored
// index.cdx.gz entry); for each block one index.idx line
//
//	<urlkey> <timestamp> {"offset":N,"length":N,"digest":"sha256:<hex>","filename":"index.cdx.gz"}
//
// (the block's first line's key and timestamp, its offset and length in
// index.cdx.gz, the sha256 of its compressed bytes) goes to idx.
type blockWriter struct {
	open  func() (io.Writer, error) // opens out at the first block
	out   io.Writer
	idx   *bufio.Writer
	off   int64
	block bytes.Buffer // the block's lines, uncompressed
	first string       // urlkey and timestamp of the block's first line
	n     int          // lines in block
	total int64
	comp  bytes.Buffer // the block, compressed
	gz    *gzip.Writer
}

func newBlockWriter(open func() (io.Writer, error), idx *bufio.Writer) *blockWriter {
	return &blockWriter{open: open, idx: idx, gz: gzip.NewWriter(io.Discard)}
}

// add appends CDXJ line l (no newline).
func (b *blockWriter) add(l string) error {
	if b.n == 0 {
		k, _, ok := strings.Cut(l, " {")
		if !ok {
			return fmt.Errorf("not a CDXJ line (urlkey timestamp {json}): %.120q", l)
		}
		b.first = k
	}
	b.block.WriteString(l)
	b.block.WriteByte('\n')
	b.n++
	b.total++
	if b.n == blockLines {
		return b.flush()
	}
	return nil
}

// flush writes the block held, if any.
func (b *blockWriter) flush() error {
	if b.n == 0 {
		return nil
	}
	if b.out == nil {
		out, err := b.open()
		if err != nil {
			return err
		}
		b.out = out
	}
	b.comp.Reset()
	b.gz.Reset(&b.comp)
	if _, err := b.gz.Write(b.block.Bytes()); err != nil {
		return err
	}
	if err := b.gz.Close(); err != nil {
		return err
	}
	if _, err := b.out.Write(b.comp.Bytes()); err != nil {
		return err
	}
	sum := sha256.Sum256(b.comp.Bytes())
	b.idx.WriteString(b.first)
	b.idx.WriteString(` {"offset":` + strconv.FormatInt(b.off, 10))
	b.idx.WriteString(`,"length":` + strconv.Itoa(b.comp.Len()))
	b.idx.WriteString(`,"digest":"sha256:` + hex.EncodeToString(sum[:]) + `","filename":"index.cdx.gz"}` + "\n")
	b.off += int64(b.comp.Len())
	b.block.Reset()
	b.n = 0
	return nil
}

// writeIndex writes the merge of every WARC file's CDXJ index: fewer than
// blockLines lines as indexes/index.cdx (stored), more as
// indexes/index.cdx.gz and indexes/index.idx, spooled meanwhile to a file
// in work. It returns the number of CDXJ lines.
func writeIndex(ctx context.Context, z *zipOut, in *inputs, work string) (int64, error) {
	spool, err := os.Create(filepath.Join(work, "index.idx"))
	if err != nil {
		return 0, err
	}
	defer spool.Close()
	idx := bufio.NewWriterSize(spool, 64<<10)
	var e *entry
	bw := newBlockWriter(func() (io.Writer, error) {
		var err error
		e, err = z.create(indexPath, zip.Store)
		return e, err
	}, idx)
	if err := mergeIndexes(ctx, in.warcs, work, bw.add); err != nil {
		return 0, err
	}
	if bw.out == nil { // less than one block: the plain form
		pe, err := z.create(plainIndexPath, zip.Store)
		if err != nil {
			return 0, err
		}
		if _, err := pe.Write(bw.block.Bytes()); err != nil {
			return 0, err
		}
		pe.close()
		return bw.total, nil
	}
	if err := bw.flush(); err != nil {
		return 0, err
	}
	e.close()
	if err := idx.Flush(); err != nil {
		return 0, fmt.Errorf("spool %s: %w", spool.Name(), err)
	}
	ie, err := z.create(idxPath, zip.Deflate)
	if err != nil {
		return 0, err
	}
	if _, err := io.WriteString(ie, idxMeta+"\n"); err != nil {
		return 0, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	if _, err := io.Copy(struct{ io.Writer }{ie}, spool); err != nil {
		return 0, err
	}
	ie.close()
	return bw.total, nil
}

// newGzipMember returns a reader of the one gzip member in b.
func newGzipMember(b []byte) (io.Reader, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	zr.Multistream(false)
	return zr, nil
}
