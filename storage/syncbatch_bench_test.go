package storage

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkCrawlLogDurable measures making one crawl-log line durable, 64
// writers at once: "group" waits on a SyncBatch (the worker's way), "each"
// fsyncs after every line. fsyncs/op is the fsyncs per line. Run with
//
//	go test -run '^$' -bench CrawlLogDurable -cpu 64 ./storage/
func BenchmarkCrawlLogDurable(b *testing.B) {
	for _, mode := range []string{"group", "each"} {
		b.Run(mode, func(b *testing.B) {
			l, err := OpenCrawlLog(filepath.Join(b.TempDir(), "crawl.log"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			g := NewSyncBatch(0, l.Sync)
			var syncs int64
			e := LogEntry{URL: "http://example.org/some/page.html", Status: 200, Bytes: 12345, MIME: "text/html", Worker: "w1"}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mark := g.Mark()
					if err := l.Write(e); err != nil {
						b.Error(err)
						return
					}
					if mode == "group" {
						err = g.Sync(context.Background(), mark)
					} else {
						err = l.Sync()
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			if mode == "group" {
				syncs = g.Rounds()
			} else {
				syncs = int64(b.N)
			}
			b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
		})
	}
}
