package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkFetchWireCopy measures what the byte-exact capture costs per
// page: a 30 KB HTML page over keep-alive loopback, sent chunked (no
// Content-Length, as most dynamic sites do) and with Content-Length,
// fetched with the tee on the connection ("wire") and without it
// ("rebuilt", the former capture: headers rebuilt from the parsed map).
// Reported: ns/op and allocations (CPU per page) and block-bytes/op, the
// size of the WARC response block the fetch yields.
func BenchmarkFetchWireCopy(b *testing.B) {
	page := strings.Repeat("<p>zkcrawl benchmark page with some filler text to look like HTML.</p>\n", 420) // ~30 KB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/chunked" {
			for i := 0; i < 4; i++ { // four flushed chunks
				q := len(page) / 4
				w.Write([]byte(page[i*q : (i+1)*q]))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Write([]byte(page))
	}))
	defer srv.Close()
	for _, path := range []string{"/chunked", "/length"} {
		for _, mode := range []string{"wire", "rebuilt"} {
			b.Run(strings.TrimPrefix(path, "/")+"/"+mode, func(b *testing.B) {
				f := New(loopbackOpts())
				defer f.Close()
				f.noTee = mode == "rebuilt"
				var block int
				b.ReportAllocs()
				for b.Loop() {
					res, err := f.Fetch(context.Background(), srv.URL+path)
					if err != nil {
						b.Fatal(err)
					}
					if res.RawResponse != nil {
						block = len(res.RawResponse)
					} else {
						block = len(res.RawResponseHeader) + len(res.Body)
					}
				}
				b.ReportMetric(float64(block), "block-bytes/op")
			})
		}
	}
}
