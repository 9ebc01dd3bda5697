package wacz

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// mergeFanIn is how many sorted indexes one merge pass reads at once: more
// WARC files than this are merged in passes through temporary run files,
// so open files and buffers stay bounded (64 x 64 KiB) whatever the number
// of WARC files.
const mergeFanIn = 64

// mergeBuffer is the read buffer of each index during a merge.
const mergeBuffer = 64 << 10

// sortedFile is one sorted CDXJ input of a merge: a WARC file's index
// (warc set: each line's "filename" is made warc) or a run file of an
// earlier pass (warc "": lines are taken as they are).
type sortedFile struct {
	path string
	warc string
}

// mergeIndexes merges the sorted CDXJ indexes of in's WARC files into one
// sorted stream handed line by line (no newline) to emit, each line's
// "filename" set to its WARC file's name in the package. Run files of the
// passes go to dir. Errors name the index and line at fault: a line that
// is not CDXJ, lines out of order.
func mergeIndexes(ctx context.Context, warcs []warcInput, dir string, emit func(string) error) error {
	files := make([]sortedFile, len(warcs))
	for i, w := range warcs {
		files[i] = sortedFile{path: w.index, warc: w.name}
	}
	for pass := 0; len(files) > mergeFanIn; pass++ {
		var next []sortedFile
		for i := 0; i < len(files); i += mergeFanIn {
			group := files[i:min(i+mergeFanIn, len(files))]
			run := filepath.Join(dir, fmt.Sprintf("run-%d-%06d.cdxj", pass, len(next)))
			if err := mergeToFile(ctx, group, run); err != nil {
				return err
			}
			next = append(next, sortedFile{path: run})
		}
		for _, f := range files {
			if f.warc == "" {
				os.Remove(f.path)
			}
		}
		files = next
	}
	return mergeGroup(ctx, files, emit)
}

// mergeToFile merges files into the run file path.
func mergeToFile(ctx context.Context, files []sortedFile, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, mergeBuffer)
	err = mergeGroup(ctx, files, func(l string) error {
		bw.WriteString(l)
		return bw.WriteByte('\n')
	})
	if err == nil {
		err = bw.Flush()
	}
	if e := f.Close(); err == nil && e != nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("merge run %s: %w", path, err)
	}
	return nil
}

// mergeGroup merges at most mergeFanIn sorted files (a k-way merge on a
// heap of their current lines) into emit.
func mergeGroup(ctx context.Context, files []sortedFile, emit func(string) error) error {
	h := &lineHeap{}
	for _, sf := range files {
		f, err := os.Open(sf.path)
		if err != nil {
			return fmt.Errorf("index %s: %w", sf.path, err)
		}
		defer f.Close()
		src := &lineSource{sortedFile: sf, r: bufio.NewReaderSize(f, mergeBuffer)}
		if sf.warc != "" {
			src.suffix = filenameSuffix(sf.warc)
		}
		if err := src.next(); err != nil {
			return err
		}
		if src.ok {
			h.s = append(h.s, src)
		}
	}
	heap.Init(h)
	for n := 0; h.Len() > 0; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		src := h.s[0]
		if err := emit(src.line); err != nil {
			return err
		}
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

// lineSource is one input of a merge with its current line.
type lineSource struct {
	sortedFile
	r      *bufio.Reader
	suffix string // `"filename":"<warc>"}` for a WARC file's index
	line   string
	lineNo int
	ok     bool // line is valid
}

// next reads the next non-empty line, checks it sorts after the previous
// one and, for a WARC file's index, sets its filename.
func (s *lineSource) next() error {
	prev := s.line
	for {
		l, err := s.r.ReadString('\n')
		if errors.Is(err, io.EOF) && l == "" {
			s.ok = false
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("index %s: %w", s.path, err)
		}
		s.lineNo++
		l = strings.TrimSuffix(l, "\n")
		if l == "" {
			continue
		}
		if s.suffix != "" {
			if l, err = setFilename(l, s.suffix); err != nil {
				return fmt.Errorf("index %s line %d: %w", s.path, s.lineNo, err)
			}
		}
		if s.ok && l < prev {
			return fmt.Errorf("index %s line %d: not sorted (it sorts before the line above); sort it with `LC_ALL=C sort -o %s %s` and package again", s.path, s.lineNo, s.path, s.path)
		}
		s.line, s.ok = l, true
		return nil
	}
}

// filenameSuffix is how a CDXJ line of the WARC file named warc ends:
// `"filename":"<warc>"}` (the last key of warcio.js's lines).
func filenameSuffix(warc string) string {
	b, _ := json.Marshal(warc)
	return `"filename":` + string(b) + "}"
}

// setFilename returns CDXJ line l with its "filename" value made the one
// in suffix (filenameSuffix): unchanged when it ends so already, else the
// line's last "filename" key and what follows are replaced. A line that is
// not "key timestamp {json}" or has no "filename" is an error.
func setFilename(l, suffix string) (string, error) {
	if strings.HasSuffix(l, suffix) {
		return l, nil
	}
	i := strings.Index(l, " {")
	if i < 0 || !strings.HasSuffix(l, "}") {
		return "", fmt.Errorf("not a CDXJ line (urlkey timestamp {json}): %.120q", l)
	}
	j := strings.LastIndex(l, `"filename"`)
	if j < i {
		return "", fmt.Errorf("CDXJ line without \"filename\": %.120q", l)
	}
	return l[:j] + suffix, nil
}

// lineHeap orders a merge's sources by their current line (byte order, as
// `LC_ALL=C sort` and pywb sort CDXJ).
type lineHeap struct{ s []*lineSource }

func (h *lineHeap) Len() int           { return len(h.s) }
func (h *lineHeap) Less(i, j int) bool { return h.s[i].line < h.s[j].line }
func (h *lineHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *lineHeap) Push(v any)         { h.s = append(h.s, v.(*lineSource)) }
func (h *lineHeap) Pop() any {
	v := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return v
}
