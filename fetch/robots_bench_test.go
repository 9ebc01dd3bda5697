package fetch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// hostileRobots returns a robots.txt of about size bytes of wildcard rules
// (a hostile site's file): every rule has many '*' and none matches the
// benchmark's paths, so a matcher has to try them all.
// anchored rules end with '$'; open ones end with a literal that the path
// lacks, so a matcher scans the whole path for it.
func hostileRobots(size int, anchored bool) string {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for i := 0; b.Len() < size; i++ {
		if anchored {
			fmt.Fprintf(&b, "Disallow: /*a*b*a*b*a*b*a*b*%d*z$\n", i)
		} else {
			fmt.Fprintf(&b, "Disallow: /*ab*ab*ab*ab*ab*ab*ab*ab*%dz\n", i)
		}
	}
	return b.String()
}

// hostilePaths are the paths Allowed is asked about: a short one and one of
// 2,000 characters that partially matches every rule.
var hostilePaths = map[string]string{
	"short": "/index.html",
	"2000":  "/" + strings.Repeat("ab", 999) + "c",
}

// BenchmarkRobotsHostile measures a 500 KiB robots.txt of wildcard rules
// served on loopback: heap retained by the cached, parsed file
// (retained-MiB) and the cost of one Allowed call per path. Run with
//
//	go test -run '^$' -bench RobotsHostile -benchtime 20x ./fetch/
func BenchmarkRobotsHostile(b *testing.B) {
	f := New(loopbackOpts())
	defer f.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, anchored := range []bool{true, false} {
		srv := httptest.NewServer(serveRobots(200, hostileRobots(MaxRobotsBytes-100, anchored)))
		defer srv.Close()
		for name, path := range hostilePaths {
			b.Run(fmt.Sprintf("anchored=%v/path=%s", anchored, name), func(b *testing.B) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				r := NewRobots(f, RobotsOptions{Logger: quiet})
				if _, err := r.Allowed(context.Background(), srv.URL+"/", ua); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
				url := srv.URL + path
				b.ResetTimer()
				for b.Loop() {
					if _, err := r.Allowed(context.Background(), url, ua); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(retained, "retained-MiB")
				runtime.KeepAlive(r)
			})
		}
	}
}
