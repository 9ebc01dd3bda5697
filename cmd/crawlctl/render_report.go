package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
)

// renderReport writes the five reports as aligned text tables: summary,
// seeds, hosts, MIME types, status codes, then the skipped lines.
func renderReport(w io.Writer, r *crawlreport.Report) {
	s := r.Summary
	fmt.Fprintf(w, "crawl %s: %d crawl log(s)\n", r.Crawl, len(r.Files))
	if s.Lines > 0 {
		fmt.Fprintf(w, "time:     %s .. %s (%s)\n", s.Start.Local().Format(time.DateTime), s.End.Local().Format(time.DateTime),
			time.Duration(s.DurationS*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintf(w, "urls:     %d (%d crawled, %d failed, %d robots-precluded, %d dead letters) from %d attempts (%d retries)\n",
		s.URLs, s.Crawled, s.Failed, s.RobotsPrecluded, s.DeadLetters, s.Lines, s.Retries)
	fmt.Fprintf(w, "bytes:    %s (%d)\n", humanBytes(s.Bytes), s.Bytes)
	fmt.Fprintf(w, "rate:     %.1f URLs/s, %s/s\n", s.URLsPerS, humanBytes(int64(s.BytesPerS)))
	fmt.Fprintf(w, "seeds:    %d (%d crawled)\n", s.Seeds, s.SeedsCrawled)
	fmt.Fprintf(w, "hosts:    %d\n", s.Hosts)
	if s.SkippedLines > 0 {
		fmt.Fprintf(w, "skipped:  %d bad crawl-log lines (listed at the end)\n", s.SkippedLines)
	}
	if s.Approximate > 0 {
		fmt.Fprintf(w, "note:     %d URLs counted before their last attempt (more than %d retryable failures pending at once)\n", s.Approximate, crawlreport.MaxPending)
	}
	renderSeeds(w, r)
	renderHosts(w, r)
	fmt.Fprintf(w, "\nmime types:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  URLS\tBYTES\tMIME")
	for _, m := range r.MIMETypes {
		fmt.Fprintf(tw, "  %d\t%d\t%s\n", m.URLs, m.Bytes, orNone(m.MIME))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nstatus codes:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  URLS\tCODE\tNAME")
	for _, c := range r.StatusCodes {
		code := fmt.Sprint(c.Status)
		if c.Other {
			code = "-"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", c.URLs, code, c.Name)
	}
	tw.Flush()
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "\nskipped lines:\n")
		for _, b := range r.Skipped {
			fmt.Fprintf(w, "  %s:%d: %s\n", b.File, b.Line, b.Reason)
		}
		if n := r.Summary.SkippedLines - int64(len(r.Skipped)); n > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", n)
		}
	}
}

// renderSeeds writes the seeds table: code, CRAWLED or NOTCRAWLED, the
// seed and its redirect chain as far as the logs show.
func renderSeeds(w io.Writer, r *crawlreport.Report) {
	fmt.Fprintf(w, "\nseeds:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CODE\tSTATUS\tSEED\tREDIRECT\tFINAL")
	for _, sd := range r.Seeds {
		st := "NOTCRAWLED"
		if sd.Crawled {
			st = "CRAWLED"
		}
		final := "-"
		if sd.Final != "" {
			final = fmt.Sprintf("%s (%d)", sd.Final, sd.FinalStatus)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", sd.Status, st, sd.Seed, dash(sd.Redirect), final)
	}
	tw.Flush()
	if r.SeedsOmitted > 0 {
		fmt.Fprintf(w, "  ... and %d more seeds (at most %d listed)\n", r.SeedsOmitted, crawlreport.MaxSeeds)
	}
}

// renderHosts writes the hosts table, with the "(other)" row last.
func renderHosts(w io.Writer, r *crawlreport.Report) {
	fmt.Fprintf(w, "\nhosts:\n")
	zk := len(r.Hosts) > 0 && r.Hosts[0].ZKDeadLetters != nil
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "  URLS\tBYTES\t2XX\t3XX\t4XX\t5XX\tFAILED\tROBOTS\tDEAD\t"
	if zk {
		head += "ZK-DEAD\t"
	}
	fmt.Fprintln(tw, head+"HOST")
	rows := r.Hosts
	if r.OtherHosts != nil {
		rows = append(rows[:len(rows):len(rows)], *r.OtherHosts)
	}
	for _, h := range rows {
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t", h.URLs, h.Bytes, h.S2xx, h.S3xx, h.S4xx, h.S5xx, h.Failed, h.Robots, h.DeadLetters)
		if zk {
			n := int64(0)
			if h.ZKDeadLetters != nil {
				n = *h.ZKDeadLetters
			}
			fmt.Fprintf(tw, "%d\t", n)
		}
		fmt.Fprintf(tw, "%s\n", h.Host)
	}
	tw.Flush()
}

// orNone shows an empty MIME type as "(none)".
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
