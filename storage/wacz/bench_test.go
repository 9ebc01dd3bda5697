package wacz

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestGenerateBenchCrawl writes the packaging benchmark's input when
// ZKCRAWL_WACZ_BENCH_DIR names a folder: 20 WARC files of 50,000 records
// each (1,000,000 CDXJ lines, about 240 MB of index and 100 MB of WARC) in
// 4 worker folders w0..w3 under it. Measure the packaging with the binary:
//
//	ZKCRAWL_WACZ_BENCH_DIR=/tmp/waczbench go test -run TestGenerateBenchCrawl ./storage/wacz/
//	/usr/bin/time -v bin/crawlctl --crawl bench package --out /tmp/waczbench/b.wacz /tmp/waczbench/w*
//
// ZKCRAWL_WACZ_BENCH_RECORDS changes the records per file.
func TestGenerateBenchCrawl(t *testing.T) {
	dir := os.Getenv("ZKCRAWL_WACZ_BENCH_DIR")
	if dir == "" {
		t.Skip("set ZKCRAWL_WACZ_BENCH_DIR to generate the packaging benchmark's input")
	}
	records := 50_000
	if s := os.Getenv("ZKCRAWL_WACZ_BENCH_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("ZKCRAWL_WACZ_BENCH_RECORDS=%q: want a positive count", s)
		}
		records = n
	}
	start := time.Now()
	dirs := syntheticDirs(t, dir, 4, 20, records)
	t.Logf("wrote %d records in %d files under %v in %v", 20*records, 20, dirs, time.Since(start))
}

// BenchmarkWrite packages 20 WARC files of 5,000 records (100,000 CDXJ
// lines) per iteration.
func BenchmarkWrite(b *testing.B) {
	root := b.TempDir()
	dirs := syntheticDirs(b, root, 4, 20, 5_000)
	out := filepath.Join(root, "b.wacz")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Write(context.Background(), Options{Out: out, Dirs: dirs, Title: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(20*5_000)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
