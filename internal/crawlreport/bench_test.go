package crawlreport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/storage"
)

// BenchmarkRead reads 4 workers' logs of 100,000 lines each: 40,000 hosts
// (4 times MaxHosts, so the host table evicts), every tenth URL failing
// once with 503 before a 200 from another worker. It reports lines/s and
// the live heap after the read (bytes; the bound, not the log size).
func BenchmarkRead(b *testing.B) {
	const workers, perWorker, hosts = 4, 100_000, 40_000
	dir := b.TempDir()
	var files []string
	for w := 0; w < workers; w++ {
		path := filepath.Join(dir, fmt.Sprintf("w%d", w), LogName)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriter(f)
		enc := json.NewEncoder(bw)
		for i := 0; i < perWorker; i++ {
			n := i*workers + w
			e := storage.LogEntry{TS: t0.Add(timeStep(n)), URL: fmt.Sprintf("http://h%d.test/p/%d", n%hosts, n), Status: 200,
				MIME: "text/html", Bytes: 1000, Depth: 1, Via: "http://h0.test/", Hops: "L", Attempt: 1}
			if n%10 == 0 {
				e.Status = 503
				if err := enc.Encode(e); err != nil {
					b.Fatal(err)
				}
				e.Status, e.Attempt, e.TS = 200, 2, e.TS.Add(timeStep(1))
			}
			if err := enc.Encode(e); err != nil {
				b.Fatal(err)
			}
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		files = append(files, path)
	}
	b.ResetTimer()
	var r *Report
	for i := 0; i < b.N; i++ {
		var err error
		if r, err = Read(context.Background(), "bench", files, quiet); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(r.Summary.Lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(ms.HeapInuse), "heap-bytes")
	if r.Summary.URLs != workers*perWorker || r.OtherHosts == nil || len(r.Hosts) != MaxHosts {
		b.Fatalf("summary %+v, %d host rows", r.Summary, len(r.Hosts))
	}
}

// timeStep is n milliseconds.
func timeStep(n int) time.Duration { return time.Duration(n) * time.Millisecond }
