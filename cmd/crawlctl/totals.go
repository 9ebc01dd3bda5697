package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/worker"
)

// totalsDoc is the crawl-wide totals part of status (worker.ReadTotals).
type totalsDoc struct {
	worker.Totals
	// Workers is the number of worker ids among the totals' recent writers
	// (worker.ReadTotals).
	Workers int `json:"workers"`
}

// readTotals sums R/totals for the status document.
func (c *ctl) readTotals(ctx context.Context, client *coord.Client) (totalsDoc, error) {
	t, n, err := worker.ReadTotals(ctx, client, c.root)
	if err != nil {
		return totalsDoc{}, fmt.Errorf("read totals: %w", err)
	}
	return totalsDoc{Totals: t, Workers: n}, nil
}

// renderTotals writes the crawl-wide totals line of a DONE crawl.
func renderTotals(w io.Writer, d *statusDoc) {
	t := d.Totals
	if !d.Done || t.Workers == 0 {
		return
	}
	fmt.Fprintf(w, "totals:   %d pages, %s, %d failed attempts, %d dead letters, by %d worker id(s) in %d run(s); last update %s\n",
		t.Pages, humanBytes(t.Bytes), t.Errors, t.DeadLetters, t.Workers, t.Runs, t.Updated.Local().Format(time.DateTime))
}

// humanBytes formats a byte count with binary units: "512 B", "3.4 MiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
