package testenv

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunSeederAndStartCrawlers: the seeder creates a crawl from the
// config and seeds files RunSeeder writes, and a crawler started by
// StartCrawlers serves the metrics URL it logged.
func TestRunSeederAndStartCrawlers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the seeder and the crawler")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins, err := BuildCommands(ctx, t.TempDir(), "seeder", "crawler")
	if err != nil {
		t.Fatal(err)
	}
	zk := ZooKeeper(t)
	dir := t.TempDir()
	out, err := RunSeeder(ctx, bins["seeder"], zk.Addr(), "testenv-seed", dir, map[string]any{"paused": true}, []string{"http://127.0.0.1:9/"})
	if err != nil || !strings.Contains(out, "1 enqueued") {
		t.Fatalf("RunSeeder = %q, %v; want 1 enqueued", out, err)
	}
	cs, err := StartCrawlers(ctx, bins["crawler"], zk.Addr(), "testenv-seed", dir, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cs[0].Stop(10 * time.Second)
	if cs[0].ID != "w1" || cs[0].CrawlLog() != filepath.Join(dir, "w1", "crawl.log") {
		t.Fatalf("crawler %+v", cs[0])
	}
	m, err := ScrapeMetrics(ctx, cs[0].Metrics)
	if err != nil || len(m) == 0 {
		t.Fatalf("ScrapeMetrics(%s) = %d families, %v", cs[0].Metrics, len(m), err)
	}
}
