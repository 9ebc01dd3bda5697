package render

import (
	"context"
	"sync"
	"testing"
	"time"
)

// BenchmarkRender renders the test's script-built page (a fetch() of JSON,
// links built by script, a lazy image on scroll, a pushState route) with
// two pages at once, each request answered from a loopback server, and
// reports pages/s and the browser's memory (proportional set size of its
// process tree) after the run, in MiB.
func BenchmarkRender(b *testing.B) {
	needChromium(b)
	s := newSPAServer(b)
	p, err := New(Options{Concurrency: 2, Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	doc, err := s.get(context.Background(), s.URL+"/")
	if err != nil {
		b.Fatal(err)
	}
	pg := Page{URL: s.URL + "/", Document: doc, Fetch: func(ctx context.Context, r Request) (Response, error) { return s.get(ctx, r.URL) }}
	if _, err := p.Render(context.Background(), pg); err != nil { // the browser's start is not measured
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	var mu sync.Mutex
	var failed error
	for range b.N {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := p.Render(context.Background(), pg); err != nil {
				b.Log(err)
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pages/s")
	b.ReportMetric(float64(p.RSS())/(1<<20), "browser-MiB")
}
