package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxProblems is how many problems Verify's error lists; the rest are
// counted.
const maxProblems = 20

// Report is what Verify checked.
type Report struct {
	Resources  int   // datapackage.json resources whose hash and size match
	IndexLines int64 // CDXJ lines checked against archive/
	Pages      int64 // pages.jsonl lines after the header
}

// problems gathers what is wrong with a package.
type problems struct {
	list []string
	n    int
}

func (p *problems) add(format string, args ...any) {
	p.n++
	if len(p.list) < maxProblems {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

// Verify checks the package at path: it is a ZIP; datapackage.json lists
// every other entry (datapackage-digest.json aside) and each listed entry's
// sha256 and size match; datapackage-digest.json holds datapackage.json's
// sha256; archive/ files and the index are stored (not compressed, so they
// can be read at offsets); with index.cdx.gz, every index.idx line points
// at a gzip member of it whose sha256 and first key match; every CDXJ line
// (of index.cdx or index.cdx.gz) is sorted, names a file under archive/, and its offset starts
// a gzip member (magic 1f 8b 08) whose length stays inside the file; and
// pages.jsonl starts with its header and holds JSON objects with url and
// ts. All lines are checked. The error lists the first maxProblems
// problems, each naming the entry (and line) at fault.
func Verify(ctx context.Context, path string) (Report, error) {
	var rep Report
	f, err := os.Open(path)
	if err != nil {
		return rep, fmt.Errorf("wacz: verify: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return rep, fmt.Errorf("wacz: verify %s: %w", path, err)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return rep, fmt.Errorf("wacz: verify %s: not a readable ZIP file (truncated or corrupted?): %w", path, err)
	}
	v := &verifier{ctx: ctx, f: f, files: map[string]*zip.File{}}
	for _, zf := range zr.File {
		v.files[zf.Name] = zf
	}
	v.check(&rep)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if v.p.n > 0 {
		more := ""
		if v.p.n > len(v.p.list) {
			more = fmt.Sprintf("; and %d more", v.p.n-len(v.p.list))
		}
		return rep, fmt.Errorf("wacz: verify %s: %d problem(s): %s%s", path, v.p.n, strings.Join(v.p.list, "; "), more)
	}
	return rep, nil
}

// verifier is one Verify run.
type verifier struct {
	ctx   context.Context
	f     *os.File
	files map[string]*zip.File
	p     problems
}

func (v *verifier) check(rep *Report) {
	dpBytes, ok := v.read(packagePath, 16<<20)
	if !ok {
		return
	}
	var dp DataPackage
	if err := json.Unmarshal(dpBytes, &dp); err != nil {
		v.p.add("%s: not JSON: %v", packagePath, err)
		return
	}
	if dp.Profile != packageProfile || dp.WACZVersion == "" {
		v.p.add("%s: profile %q, wacz_version %q: want %q and a version", packagePath, dp.Profile, dp.WACZVersion, packageProfile)
	}
	if db, ok := v.read(digestPath, 1<<20); ok {
		var d Digest
		sum := sha256.Sum256(dpBytes)
		if err := json.Unmarshal(db, &d); err != nil {
			v.p.add("%s: not JSON: %v", digestPath, err)
		} else if want := "sha256:" + hex.EncodeToString(sum[:]); d.Hash != want || d.Path != packagePath {
			v.p.add("%s: path %q hash %s, but %s hashes to %s", digestPath, d.Path, d.Hash, packagePath, want)
		}
	}
	listed := map[string]bool{packagePath: true, digestPath: true}
	for _, r := range dp.Resources {
		listed[r.Path] = true
		if v.ctx.Err() != nil {
			return
		}
		if v.resource(r) {
			rep.Resources++
		}
	}
	for name, zf := range v.files {
		if !listed[name] && !zf.FileInfo().IsDir() {
			v.p.add("%s: in the ZIP but not in %s", name, packagePath)
		}
		if (strings.HasPrefix(name, archiveDir) || name == indexPath || name == plainIndexPath) && zf.Method != zip.Store {
			v.p.add("%s: compressed (method %d); it must be stored so it can be read at offsets", name, zf.Method)
		}
	}
	rep.IndexLines = v.index()
	rep.Pages = v.pages()
}

// read returns entry name's bytes (at most limit).
func (v *verifier) read(name string, limit int64) ([]byte, bool) {
	zf := v.files[name]
	if zf == nil {
		v.p.add("%s: missing", name)
		return nil, false
	}
	rc, err := zf.Open()
	if err != nil {
		v.p.add("%s: %v", name, err)
		return nil, false
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		v.p.add("%s: %v", name, err)
		return nil, false
	}
	return b, true
}

// resource checks one listed entry's sha256 and size.
func (v *verifier) resource(r Resource) bool {
	zf := v.files[r.Path]
	if zf == nil {
		v.p.add("%s: listed in %s but missing", r.Path, packagePath)
		return false
	}
	rc, err := zf.Open()
	if err != nil {
		v.p.add("%s: %v", r.Path, err)
		return false
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, ctxReader{v.ctx, rc}, make([]byte, copyBuffer))
	if err != nil {
		v.p.add("%s: unreadable after %d bytes: %v", r.Path, n, err)
		return false
	}
	ok := true
	if n != r.Bytes {
		v.p.add("%s: %d bytes, %s says %d", r.Path, n, packagePath, r.Bytes)
		ok = false
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != r.Hash {
		v.p.add("%s: hash %s, %s says %s", r.Path, got, packagePath, r.Hash)
		ok = false
	}
	return ok
}

// at returns a reader of stored entry zf's bytes at their place in the
// package file, or nil when it is missing or not stored.
func (v *verifier) at(zf *zip.File) *io.SectionReader {
	if zf == nil || zf.Method != zip.Store {
		return nil
	}
	off, err := zf.DataOffset()
	if err != nil {
		return nil
	}
	return io.NewSectionReader(v.f, off, int64(zf.UncompressedSize64))
}

// index checks index.idx against index.cdx.gz and every CDXJ line against
// archive/; it returns the number of CDXJ lines.
func (v *verifier) index() int64 {
	if zf := v.files[plainIndexPath]; zf != nil && v.files[idxPath] == nil {
		rc, err := zf.Open()
		if err != nil {
			v.p.add("%s: %v", plainIndexPath, err)
			return 0
		}
		defer rc.Close()
		n, _, _ := v.lines(rc, plainIndexPath, "")
		return n
	}
	izf := v.files[idxPath]
	if izf == nil {
		v.p.add("%s: missing (and no %s)", idxPath, plainIndexPath)
		return 0
	}
	cdx := v.at(v.files[indexPath])
	if cdx == nil {
		v.p.add("%s: missing or not stored", indexPath)
		return 0
	}
	rc, err := izf.Open()
	if err != nil {
		v.p.add("%s: %v", idxPath, err)
		return 0
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "!meta") {
		v.p.add("%s line 1: want the !meta line", idxPath)
		return 0
	}
	var total int64
	var off int64
	prev := ""
	for i := 2; sc.Scan(); i++ {
		if v.ctx.Err() != nil {
			return total
		}
		l := sc.Text()
		where := fmt.Sprintf("%s line %d", idxPath, i)
		key, js, okCut := strings.Cut(l, " {")
		var b struct {
			Offset int64  `json:"offset"`
			Length int64  `json:"length"`
			Digest string `json:"digest"`
		}
		if !okCut || json.Unmarshal([]byte("{"+js), &b) != nil {
			v.p.add("%s: not an index line: %.120q", where, l)
			continue
		}
		if b.Offset != off {
			v.p.add("%s: block at offset %d, want %d (blocks follow each other)", where, b.Offset, off)
		}
		off = b.Offset + b.Length
		if b.Offset < 0 || b.Length <= 0 || b.Offset+b.Length > cdx.Size() {
			v.p.add("%s: block %d+%d outside %s (%d bytes)", where, b.Offset, b.Length, indexPath, cdx.Size())
			continue
		}
		block := make([]byte, b.Length)
		if _, err := cdx.ReadAt(block, b.Offset); err != nil {
			v.p.add("%s: block %d+%d outside %s: %v", where, b.Offset, b.Length, indexPath, err)
			continue
		}
		sum := sha256.Sum256(block)
		if b.Digest != "" && b.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
			v.p.add("%s: block digest mismatch", where)
		}
		n, first, last := v.block(block, where, prev)
		if n > 0 && first != key {
			v.p.add("%s: key %q, but the block starts with %q", where, key, first)
		}
		if n > 0 {
			prev = last
		}
		total += n
	}
	if err := sc.Err(); err != nil {
		v.p.add("%s: %v", idxPath, err)
	}
	if off != cdx.Size() {
		v.p.add("%s: blocks end at %d, %s has %d bytes", idxPath, off, indexPath, cdx.Size())
	}
	return total
}

// block checks the CDXJ lines of one gzip member of index.cdx.gz; prev is
// the last line of the block before. It returns the number of lines, the
// first line's key and timestamp, and the last line.
func (v *verifier) block(block []byte, where, prev string) (n int64, first, last string) {
	zr, err := newGzipMember(block)
	if err != nil {
		v.p.add("%s: block is not gzip: %v", where, err)
		return 0, "", prev
	}
	return v.lines(zr, where+": block", prev)
}

// lines checks the CDXJ lines read from r (where names them); prev is the
// line before them. It returns the number of lines, the first line's key
// and timestamp, and the last line.
func (v *verifier) lines(r io.Reader, where, prev string) (n int64, first, last string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	last = prev
	for sc.Scan() {
		l := sc.Text()
		n++
		if n == 1 {
			first, _, _ = strings.Cut(l, " {")
		}
		if l < last {
			v.p.add("%s line %d: sorts before the line above", where, n)
		}
		last = l
		v.record(l, where, n)
	}
	if err := sc.Err(); err != nil {
		v.p.add("%s: %v", where, err)
	}
	return n, first, last
}

// record checks that CDXJ line l points at a gzip member inside a file of
// archive/.
func (v *verifier) record(l, where string, n int64) {
	_, js, ok := strings.Cut(l, " {")
	var r struct {
		Offset   string `json:"offset"`
		Length   string `json:"length"`
		Filename string `json:"filename"`
	}
	if !ok || json.Unmarshal([]byte("{"+js), &r) != nil {
		v.p.add("%s line %d: not CDXJ: %.120q", where, n, l)
		return
	}
	off, err1 := strconv.ParseInt(r.Offset, 10, 64)
	length, err2 := strconv.ParseInt(r.Length, 10, 64)
	if err1 != nil || err2 != nil || off < 0 || length <= 0 {
		v.p.add("%s line %d: offset %q length %q", where, n, r.Offset, r.Length)
		return
	}
	zf := v.files[archiveDir+r.Filename]
	if zf == nil {
		v.p.add("%s line %d: names %s, not in %s", where, n, r.Filename, archiveDir)
		return
	}
	w := v.at(zf)
	if w == nil {
		return // reported as not stored
	}
	if off+length > w.Size() {
		v.p.add("%s line %d: record %d+%d past the end of %s (%d bytes)", where, n, off, length, r.Filename, w.Size())
		return
	}
	var magic [3]byte
	if _, err := w.ReadAt(magic[:], off); err != nil || !bytes.Equal(magic[:], []byte{0x1f, 0x8b, 8}) {
		v.p.add("%s line %d: offset %d of %s is not the start of a gzip member", where, n, off, r.Filename)
	}
}

// pages checks pages.jsonl; it returns the number of pages.
func (v *verifier) pages() int64 {
	zf := v.files[pagesPath]
	if zf == nil {
		v.p.add("%s: missing", pagesPath)
		return 0
	}
	rc, err := zf.Open()
	if err != nil {
		v.p.add("%s: %v", pagesPath, err)
		return 0
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	var n int64
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			var h struct{ Format string }
			if json.Unmarshal(sc.Bytes(), &h) != nil || h.Format != "json-pages-1.0" {
				v.p.add("%s line 1: want the header with format json-pages-1.0", pagesPath)
			}
			continue
		}
		var p Page
		if json.Unmarshal(sc.Bytes(), &p) != nil || p.URL == "" || p.TS == "" {
			v.p.add("%s line %d: want a JSON object with url and ts", pagesPath, line)
			continue
		}
		n++
	}
	if err := sc.Err(); err != nil {
		v.p.add("%s: %v", pagesPath, err)
	}
	return n
}
