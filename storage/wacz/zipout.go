package wacz

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"time"

	"github.com/klauspost/compress/flate"
)

// copyBuffer is the buffer of each file copied into the package.
const copyBuffer = 1 << 20

// zipOut writes a package's ZIP entries one after another (archive/zip:
// data descriptors, ZIP64 as sizes need) and keeps, for datapackage.json,
// the sha256 and size of each entry's bytes, computed while they are
// written.
type zipOut struct {
	zw       *zip.Writer
	modified time.Time // every entry's modification time: the package's creation
	res      []Resource
}

func newZipOut(w io.Writer, created time.Time) *zipOut {
	zw := zip.NewWriter(w)
	// klauspost/compress's deflate (the WARC writer's gzip too) at level 5:
	// about three times compress/flate's speed on CDXJ and JSON lines,
	// for a few percent more bytes.
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, deflateLevel)
	})
	return &zipOut{zw: zw, modified: created}
}

// deflateLevel is the level of the package's deflated entries.
const deflateLevel = 5

// entry is an open ZIP entry: bytes written to it are compressed (or
// stored) into the ZIP, hashed and counted.
type entry struct {
	z    *zipOut
	path string
	w    io.Writer
	h    hash.Hash
	n    int64
}

// create starts the entry path with method zip.Store or zip.Deflate. The
// previous entry must be closed.
func (z *zipOut) create(p string, method uint16) (*entry, error) {
	w, err := z.zw.CreateHeader(&zip.FileHeader{Name: p, Method: method, Modified: z.modified})
	if err != nil {
		return nil, fmt.Errorf("zip entry %s: %w", p, err)
	}
	e := &entry{z: z, path: p, h: sha256.New()}
	e.w = io.MultiWriter(w, e.h)
	return e, nil
}

func (e *entry) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	e.n += int64(n)
	if err != nil {
		return n, fmt.Errorf("zip entry %s: %w", e.path, err)
	}
	return n, nil
}

// close records the entry as a resource of the package.
func (e *entry) close() {
	e.z.res = append(e.z.res, Resource{
		Name: path.Base(e.path), Path: e.path,
		Hash: "sha256:" + hex.EncodeToString(e.h.Sum(nil)), Bytes: e.n,
	})
}

// writeBytes writes the entry p holding b, stored (as js-wacz stores
// datapackage.json and its digest: a reader takes them as they are).
func (z *zipOut) writeBytes(p string, b []byte) error {
	e, err := z.create(p, zip.Store)
	if err != nil {
		return err
	}
	if _, err := e.Write(b); err != nil {
		return err
	}
	e.close()
	return nil
}

// copyFile writes the entry p holding the file at src, streamed through a
// copyBuffer; errors name src or the entry.
func (z *zipOut) copyFile(ctx context.Context, p, src string, method uint16) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	e, err := z.create(p, method)
	if err != nil {
		return err
	}
	buf := make([]byte, copyBuffer)
	if _, err := io.CopyBuffer(struct{ io.Writer }{e}, ctxReader{ctx, f}, buf); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("copy %s: %w", src, err)
	}
	e.close()
	return nil
}
