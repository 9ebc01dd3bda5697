package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// TestDoneCrawlShowsTotals: once a crawl is DONE and its workers have
// exited, status shows the crawl-wide totals the workers left in R/totals.
func TestDoneCrawlShowsTotals(t *testing.T) {
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 9, Hosts: 2, PagesPerHost: 20, LinksPerPage: 3, Logger: testenv.Logger()})
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, "totals", cfg, 4, web.Seeds())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d1, d2 := c.startWorker(ctx, "w1", true), c.startWorker(ctx, "w2", true)
	for _, d := range []<-chan error{d1, d2} {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	doc := c.status("--rate-window", "0")
	if !doc.Done || doc.Totals.Workers != 2 || doc.Totals.Pages < 40 || doc.Totals.Bytes == 0 || doc.Totals.Runs != 2 {
		t.Fatalf("totals = %+v (done %v); want the 40+ pages of the web from 2 workers in 2 runs", doc.Totals, doc.Done)
	}
	r := c.ctl("status", "--rate-window", "0")
	if r.err != nil || !strings.Contains(r.stdout, fmt.Sprintf("totals:   %d pages", doc.Totals.Pages)) {
		t.Fatalf("status text lacks the totals line: %v", r)
	}
}
