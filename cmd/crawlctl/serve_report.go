package main

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
)

// report serves the crawl reports of serve --report-dir, read from the
// crawl logs at each request (bounded by the request's context): /report
// as the text tables of 'crawlctl report', /api/report as its --json
// document. 404 without --report-dir; 500 with the error when the logs
// cannot be read.
func (d *dashboard) report(w http.ResponseWriter, r *http.Request) {
	if len(d.reportDirs) == 0 {
		http.Error(w, "no crawl logs: start crawlctl serve with --report-dir DIR", http.StatusNotFound)
		return
	}
	files, err := crawlreport.Find(d.reportDirs)
	var rep *crawlreport.Report
	if err == nil {
		rep, err = crawlreport.Read(r.Context(), d.c.g.crawl, files, d.c.log)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, http.StatusOK, rep)
		return
	}
	var buf bytes.Buffer
	renderReport(&buf, rep)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
