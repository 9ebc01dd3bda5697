package storage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// BenchmarkMembers is the gzip member of a request record (about 700
// bytes) and of a response record (a 4 KB page), one pair per op, from
// GOMAXPROCS goroutines as WriteExchange calls compress.
func BenchmarkMembers(b *testing.B) {
	m := newMembers(gzip.DefaultCompression)
	req := &record{block: [][]byte{[]byte("GET /p/17 HTTP/1.1\r\nHost: h3.test:40123\r\nUser-Agent: zkcrawl/dev (+https://example.com/bot)\r\nAccept: text/html,application/xhtml+xml,*/*;q=0.8\r\nAccept-Encoding: gzip\r\n\r\n")}}
	var page bytes.Buffer
	for i := 0; page.Len() < 4096; i++ {
		page.WriteString("<p>Lorem ipsum dolor sit amet " + strings.Repeat("consectetur ", i%7) + "<a href=\"/p/" + string(rune('0'+i%10)) + "\">next</a></p>\n")
	}
	resp := &record{block: [][]byte{[]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"), page.Bytes()}}
	for _, r := range []*record{req, resp} {
		r.add("WARC-Type", TypeResponse)
		r.add("WARC-Record-ID", newRecordID())
		r.add("WARC-Date", "2026-11-27T05:00:00Z")
		r.add("WARC-Target-URI", "http://h3.test:40123/p/17")
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.compress(req); err != nil {
				b.Error(err)
			}
			if _, err := m.compress(resp); err != nil {
				b.Error(err)
			}
		}
	})
}
