package storage

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// indexSuffix ends the name of the CDXJ index written beside each WARC
// file: prefix-timestamp-serial-worker.warc.gz is indexed in
// prefix-timestamp-serial-worker.cdxj.
const indexSuffix = ".cdxj"

// cdxjSpillBytes is how many bytes of CDXJ lines an index keeps in memory
// before it sorts them and spills them to a run file beside the WARC.
const cdxjSpillBytes = 4 << 20

// cdxjRunBuffer is the read buffer of each run file during the merge.
const cdxjRunBuffer = 16 << 10

// indexName returns the name of the CDXJ index of WARC file warcName (a
// base name, with or without OpenSuffix): warcName without ".warc.gz"
// (or ".warc") followed by indexSuffix.
func indexName(warcName string) string {
	n := strings.TrimSuffix(warcName, OpenSuffix)
	n = strings.TrimSuffix(n, ".gz")
	n = strings.TrimSuffix(n, ".warc")
	return n + indexSuffix
}

// cdxjIndex gathers the CDXJ lines of one WARC file while it is written and
// writes them, sorted by byte order (the order of pywb's and OutbackCDX's
// sorted CDXJ, and of `LC_ALL=C sort`), to indexName beside it.
//
// Memory bound: at most cdxjSpillBytes (4 MiB) of lines are held; beyond
// that they are sorted and spilled to run files named
// <index>.run-NNNNNN beside the WARC, merged when the index is written
// (one cdxjRunBuffer, 16 KiB, per run then). A line is 150-300 bytes for
// common URLs (at most about 4.3 KB for a 2,048-byte URL), so a 1 GiB WARC
// of small pages (at least 600 compressed bytes per exchange: 1.8 million
// lines, about 500 MB of index) spills about 125 runs and merges them in
// 2 MiB of buffers. A spill or write error ends the index (logged by the
// Writer; the WARC is not affected and `warcio cdx-index` can rebuild it).
// Not safe for concurrent use: the Writer's mutex guards it.
type cdxjIndex struct {
	dir   string // the WARC directory
	name  string // indexName of the WARC
	lines []string
	bytes int
	runs  []string // full paths of sorted run files, in spill order
	err   error    // first spill error: no index will be written
}

func newCDXJIndex(dir, warcName string) *cdxjIndex {
	return &cdxjIndex{dir: dir, name: indexName(warcName)}
}

// add keeps line (no newline) for the index, spilling a sorted run when
// the lines held reach cdxjSpillBytes. It returns the spill error, once;
// after it add does nothing.
func (x *cdxjIndex) add(line string) error {
	if x.err != nil {
		return nil
	}
	x.lines = append(x.lines, line)
	x.bytes += len(line) + 1
	if x.bytes < cdxjSpillBytes {
		return nil
	}
	if err := x.spill(); err != nil {
		x.err = err
		x.discard()
		return err
	}
	return nil
}

// spill sorts the lines held and writes them to a new run file.
func (x *cdxjIndex) spill() error {
	slices.Sort(x.lines)
	path := filepath.Join(x.dir, fmt.Sprintf("%s.run-%06d", x.name, len(x.runs)))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("storage: spill CDXJ run: %w", err)
	}
	x.runs = append(x.runs, path)
	bw := bufio.NewWriterSize(f, 64<<10)
	for _, l := range x.lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	err = bw.Flush()
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("storage: spill CDXJ run %s: %w", path, err)
	}
	x.lines, x.bytes = x.lines[:0], 0
	return nil
}

// write merges the runs and the lines held into <name>.tmp, fsyncs it,
// renames it to the index name and fsyncs the directory, then removes the
// runs. On error nothing is left but possibly the temp file,
// which is removed too; the error names the file.
func (x *cdxjIndex) write() (err error) {
	if x.err != nil {
		return x.err
	}
	defer x.discard()
	slices.Sort(x.lines)
	final := filepath.Join(x.dir, x.name)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("storage: write CDXJ index: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("storage: write CDXJ index %s: %w", tmp, err)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := x.merge(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return syncDir(x.dir)
}

// merge writes the lines held and those of every run to w in byte order.
func (x *cdxjIndex) merge(w *bufio.Writer) error {
	h := &runHeap{}
	for _, path := range x.runs {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		src := &runSource{r: bufio.NewReaderSize(f, cdxjRunBuffer)}
		if err := src.next(); err != nil {
			return err
		}
		if src.ok {
			h.s = append(h.s, src)
		}
	}
	if len(x.lines) > 0 {
		mem := &runSource{mem: x.lines}
		mem.next()
		h.s = append(h.s, mem)
	}
	heap.Init(h)
	for h.Len() > 0 {
		src := h.s[0]
		w.WriteString(src.line)
		w.WriteByte('\n')
		if err := src.next(); err != nil {
			return err
		}
		if src.ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// discard removes the run files and forgets the lines.
func (x *cdxjIndex) discard() {
	for _, p := range x.runs {
		os.Remove(p)
	}
	x.runs, x.lines, x.bytes = nil, nil, 0
}

// runSource is one sorted input of the merge: a run file or the lines in
// memory.
type runSource struct {
	r    *bufio.Reader
	mem  []string
	line string
	ok   bool // line is valid
}

func (s *runSource) next() error {
	if s.r == nil {
		s.ok = len(s.mem) > 0
		if s.ok {
			s.line, s.mem = s.mem[0], s.mem[1:]
		}
		return nil
	}
	l, err := s.r.ReadString('\n')
	if errors.Is(err, io.EOF) && l == "" {
		s.ok = false
		return nil
	}
	if err != nil {
		return err
	}
	s.line, s.ok = l[:len(l)-1], true
	return nil
}

// runHeap orders the merge's sources by their current line.
type runHeap struct{ s []*runSource }

func (h *runHeap) Len() int           { return len(h.s) }
func (h *runHeap) Less(i, j int) bool { return h.s[i].line < h.s[j].line }
func (h *runHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *runHeap) Push(v any)         { h.s = append(h.s, v.(*runSource)) }
func (h *runHeap) Pop() any {
	v := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return v
}

// syncDir fsyncs directory dir, making the renames in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if e := d.Close(); err == nil {
		err = e
	}
	return err
}
