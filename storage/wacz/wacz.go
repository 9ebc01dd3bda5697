// Package wacz packages a finished crawl's output folders as one WACZ file
// (Web Archive Collection Zipped 1.1.1, https://specs.webrecorder.net/wacz/1.1.1/),
// which ReplayWeb.page opens as it is, and checks such a package.
//
// Layout of a package (the ZIP entries, in this order):
//
//	indexes/index.cdx      stored; the CDXJ lines, when fewer than blockLines (3,000)
//	indexes/index.cdx.gz   stored; else CDXJ blocks of blockLines lines, one gzip member each
//	indexes/index.idx      deflated; with index.cdx.gz: "!meta" line, then one line per block
//	pages/pages.jsonl      deflated; header line, then seeds and HTML pages
//	<Options.Extra>        stored; e.g. reports/ (crawlctl package writes the crawl reports there)
//	archive/<warc name>    stored; each finished WARC file, byte for byte
//	datapackage.json       stored; every entry above with sha256 and size
//	datapackage-digest.json stored; the sha256 of datapackage.json
//
// From 3,000 records on the index takes the compressed (ZipNum) form, as
// js-wacz decides: a replay tool reads index.idx (one line per 3,000
// records) and fetches only the blocks it needs. Memory is bounded
// whatever the crawl size: the per-WARC CDXJ indexes are merged as sorted
// streams (at most mergeFanIn open at once, 64 KiB of buffer each), one
// block of lines is held for compression, and index.idx is spooled to a
// temporary file.
package wacz

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Version is the WACZ specification version the packages follow.
const Version = "1.1.1"

// Entry paths inside a package.
const (
	indexPath      = "indexes/index.cdx.gz"
	plainIndexPath = "indexes/index.cdx"
	idxPath        = "indexes/index.idx"
	pagesPath      = "pages/pages.jsonl"
	archiveDir     = "archive/"
	packagePath    = "datapackage.json"
	digestPath     = "datapackage-digest.json"
	packageProfile = "data-package"
)

// Options says what Write packages and how.
type Options struct {
	// Out is the package's path; it must end in ".wacz". It is written as
	// Out+".tmp" and renamed at the end, so Out never holds a partial
	// package.
	Out string
	// Dirs are the workers' output folders (WARC files, their .cdxj
	// indexes and crawl.log); each must hold at least one finished WARC
	// file.
	Dirs []string
	// Title is the package's title (datapackage.json "title").
	Title string
	// Software names the writer, e.g. "zkcrawl v1.2.3".
	Software string
	// Now gives the creation time; nil means time.Now.
	Now func() time.Time
	// Log receives warnings (unfinished WARC files, unreadable crawl-log
	// lines); nil means slog.Default().
	Log *slog.Logger
	// Extra are more files to package (e.g. the crawl reports under
	// "reports/"), stored after pages/pages.jsonl and listed in
	// datapackage.json like the others. Each Name is a relative
	// slash-separated path outside archive/, indexes/ and pages/.
	Extra []File
}

// File is a small file packaged as it is (Options.Extra).
type File struct {
	Name string
	Data []byte
}

// Summary is what Write put in the package.
type Summary struct {
	WARCs      int   // WARC files under archive/
	WARCBytes  int64 // their total size in bytes
	IndexLines int64 // CDXJ records in indexes/index.cdx.gz
	Pages      int64 // lines of pages/pages.jsonl after its header
	Bytes      int64 // size of the package file in bytes
}

// Write packages opts.Dirs into opts.Out. Errors name the input or output
// at fault and the reason (a folder that does not exist or holds no
// finished WARC file, a WARC file without its CDXJ index, two WARC files
// of the same name, an unsorted index, a full disk); after an error
// nothing is left at opts.Out nor at its temporary path.
func Write(ctx context.Context, opts Options) (sum Summary, err error) {
	if !strings.HasSuffix(opts.Out, ".wacz") {
		return sum, fmt.Errorf("wacz: output %q: the name must end in .wacz (replay tools go by it)", opts.Out)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	in, err := findInputs(opts.Dirs, opts.Log)
	if err != nil {
		return sum, err
	}
	tmp := opts.Out + ".tmp"
	work, err := os.MkdirTemp(filepath.Dir(opts.Out), filepath.Base(opts.Out)+".work-")
	if err != nil {
		return sum, fmt.Errorf("wacz: output %s: %w", opts.Out, err)
	}
	defer os.RemoveAll(work)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return sum, fmt.Errorf("wacz: output %s: %w", opts.Out, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("wacz: write %s: %w (nothing left at %s)", opts.Out, err, opts.Out)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	z := newZipOut(bw, opts.Now().UTC())
	if sum.IndexLines, err = writeIndex(ctx, z, in, work); err != nil {
		return sum, err
	}
	if sum.Pages, err = writePages(ctx, z, in, opts.Log); err != nil {
		return sum, err
	}
	for _, x := range opts.Extra {
		if err := checkExtraName(x.Name); err != nil {
			return sum, err
		}
		if err := z.writeBytes(x.Name, x.Data); err != nil {
			return sum, err
		}
	}
	for _, w := range in.warcs {
		if err := z.copyFile(ctx, archiveDir+w.name, w.path, zip.Store); err != nil {
			return sum, err
		}
		sum.WARCs++
		sum.WARCBytes += z.res[len(z.res)-1].Bytes
	}
	if err := writePackage(z, opts); err != nil {
		return sum, err
	}
	if err := z.zw.Close(); err != nil {
		return sum, err
	}
	if err := bw.Flush(); err != nil {
		return sum, err
	}
	if err := f.Sync(); err != nil {
		return sum, err
	}
	st, err := f.Stat()
	if err != nil {
		return sum, err
	}
	sum.Bytes = st.Size()
	if err := f.Close(); err != nil {
		return sum, err
	}
	if err := os.Rename(tmp, opts.Out); err != nil {
		return sum, err
	}
	return sum, syncDir(filepath.Dir(opts.Out))
}

// checkExtraName refuses an Options.Extra name that is absolute, climbs
// out of the package, or falls in a directory the package's own files use.
func checkExtraName(name string) error {
	clean := path.Clean(name)
	switch {
	case name == "" || clean != name || path.IsAbs(name) || strings.HasPrefix(name, "../") || name == "..":
		return fmt.Errorf("wacz: extra file %q: want a clean relative path", name)
	case strings.HasPrefix(name, archiveDir), strings.HasPrefix(name, "indexes/"), strings.HasPrefix(name, "pages/"),
		name == "datapackage.json", name == "datapackage-digest.json":
		return fmt.Errorf("wacz: extra file %q: the package's own files live there", name)
	}
	return nil
}

// DataPackage is datapackage.json (WACZ 1.1.1 section "datapackage.json",
// the Frictionless Data Package profile "data-package").
type DataPackage struct {
	Profile     string     `json:"profile"`
	WACZVersion string     `json:"wacz_version"`
	Title       string     `json:"title"`
	Created     string     `json:"created"` // RFC 3339, UTC
	Software    string     `json:"software"`
	Resources   []Resource `json:"resources"`
}

// Resource is one entry of datapackage.json's resources: a file of the
// package, its base name, its path in the ZIP, "sha256:<hex>" of its bytes
// and its size in bytes.
type Resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

// Digest is datapackage-digest.json: the path and "sha256:<hex>" hash of
// datapackage.json.
type Digest struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// writePackage writes datapackage.json, listing every entry written so
// far, and datapackage-digest.json.
func writePackage(z *zipOut, opts Options) error {
	dp := DataPackage{
		Profile: packageProfile, WACZVersion: Version, Title: opts.Title,
		Created: z.modified.Format(time.RFC3339), Software: opts.Software, Resources: z.res,
	}
	b, err := json.MarshalIndent(dp, "", "  ")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	d, err := json.MarshalIndent(Digest{Path: packagePath, Hash: "sha256:" + hex.EncodeToString(sum[:])}, "", "  ")
	if err != nil {
		return err
	}
	if err := z.writeBytes(packagePath, b); err != nil {
		return err
	}
	return z.writeBytes(digestPath, d)
}

// syncDir fsyncs directory dir, making the rename in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// ctxReader is a Reader that fails with ctx's error once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
