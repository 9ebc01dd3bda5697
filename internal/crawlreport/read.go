package crawlreport

import (
	"container/heap"
	"context"
	"log/slog"
)

// Read aggregates the crawl logs files (Find's result) into the reports of
// the crawl named crawl. The files are read as streams merged by line time
// stamp (each worker appends in time order), so a URL retried by another
// worker still counts with its last attempt. A bad line (not a crawl-log
// entry, no url or ts, over MaxLineBytes) is skipped: it is logged at warn
// level with its file and 1-based line number (log nil: slog.Default())
// and listed in Report.Skipped. Errors: a file that cannot be opened or
// read (naming it), or ctx's error.
func Read(ctx context.Context, crawl string, files []string, log *slog.Logger) (*Report, error) {
	if log == nil {
		log = slog.Default()
	}
	agg := newAggregator()
	var skipped []BadLine
	bad := func(b BadLine) {
		agg.sum.SkippedLines++
		if len(skipped) < MaxSkipped {
			skipped = append(skipped, b)
		}
		log.Warn("crawl log: bad line skipped", "file", b.File, "line", b.Line, "reason", b.Reason)
	}
	var h cursorHeap
	defer func() {
		for _, c := range h {
			c.close()
		}
	}()
	for i, path := range files {
		c, err := openCursor(path, i, bad)
		if err != nil {
			return nil, err
		}
		ok, err := c.next()
		if err != nil || !ok {
			c.close()
			if err != nil {
				return nil, err
			}
			continue
		}
		h = append(h, c)
	}
	heap.Init(&h)
	for n := 0; len(h) > 0; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		c := h[0]
		agg.line(&c.cur)
		ok, err := c.next()
		if err != nil {
			return nil, err
		}
		if ok {
			heap.Fix(&h, 0)
			continue
		}
		heap.Pop(&h)
		c.close()
	}
	r := agg.report()
	r.Crawl, r.Files, r.Skipped = crawl, append([]string{}, files...), skipped
	return r, nil
}
