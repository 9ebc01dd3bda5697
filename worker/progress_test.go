package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// TestProgressAndSummary: a worker logs progress lines every
// ProgressInterval and, when the crawl is done, one summary whose pages,
// bytes and WARC file count match what it did.
func TestProgressAndSummary(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 3, Hosts: 2, PagesPerHost: 30, LinksPerPage: 3})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 40 // about 1.5 s of crawling: several progress lines
	c := newCrawl(t, zk.Addr(), "progress", cfg, frontier.Layout{Shards: 4, Spread: 1}, web.Seeds())
	var logs syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := c.startWorker(ctx, "w1", func(o *Options) {
		o.ProgressInterval = 200 * time.Millisecond
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var progress, summaries []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["msg"] {
		case "progress":
			progress = append(progress, m)
		case "summary":
			summaries = append(summaries, m)
		}
	}
	if len(progress) < 2 {
		t.Fatalf("%d progress lines, want several:\n%s", len(progress), logs.String())
	}
	for _, k := range []string{"pages", "pages_per_s", "bytes", "errors", "claims", "shards_owned"} {
		if _, ok := progress[0][k]; !ok {
			t.Errorf("progress line lacks %s: %v", k, progress[0])
		}
	}
	if len(summaries) != 1 {
		t.Fatalf("%d summary lines, want 1", len(summaries))
	}
	s := summaries[0]
	pages := int(s["pages"].(float64))
	if logged := len(c.logs()); pages != logged {
		t.Errorf("summary pages = %d, crawl log has %d lines", pages, logged)
	}
	if s["stopped"] != "crawl done" || s["warc_files"].(float64) != 1 || s["bytes"].(float64) <= 0 {
		t.Errorf("summary = %v; want stopped=crawl done, 1 WARC file, bytes > 0", s)
	}
	if _, ok := s["elapsed"]; !ok {
		t.Errorf("summary lacks elapsed: %v", s)
	}
}
