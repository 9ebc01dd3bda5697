package worker

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// hostileServer serves pages built to hurt a crawler. robots.txt is 1 MiB
// (over the 500 KiB cap of RFC 9309 section 2.5).
func hostileServer(t *testing.T) *httptest.Server {
	t.Helper()
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 256 { // 256 MiB of zeros in ~256 KiB of gzip
		zw.Write(zero)
	}
	zw.Close()
	var links strings.Builder
	links.WriteString("<html><body>")
	for i := range 100_000 {
		fmt.Fprintf(&links, `<a href="/l/%d">%d</a>`, i, i)
	}
	links.WriteString("</body></html>")
	robots := "User-agent: *\nDisallow: /private/\n" + strings.Repeat("Disallow: /padding-line-to-make-robots-huge\n", 1<<20/44)

	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(robots)) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><body>
			<a href="/bomb">bomb</a> <a href="/links">links</a> <a href="/slow">slow</a> <a href="/utf8">utf8</a>
			<a href="/reset">reset</a> <a href="/private/x">private</a> <a href="/big">big</a>
			<a href="javascript:alert(1)">js</a> <a href="mailto:x@y">mail</a> <a href="http://[::1">broken</a>
		</body></html>`))
	})
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	})
	mux.HandleFunc("/links", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(links.String()))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { // endless, one byte per 50 ms
		w.Header().Set("Content-Type", "text/html")
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	mux.HandleFunc("/utf8", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body>\xff\xfe\xc3\x28 <a title=\"" + strings.Repeat("A", 1<<20) + "\" href=\"/ok\u00e9\">x</a></body></html>"))
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<html>half")
		buf.Flush()
		conn.Close()
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(bytes.Repeat([]byte("<p>big</p>"), 300_000)) // 3 MB, over the 1 MiB limit
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Hostile pages and dead hosts: each URL ends with a defined final status
// (stored, retried, or dead-lettered), no worker crashes, nothing is left
// queued or claimed, and the link-heavy page cannot flood the frontier
// beyond the per-page cap.
func TestHostileInputHasDefinedOutcomes(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	srv := hostileServer(t)
	cfg := testConfig()
	cfg.MaxDepth = 1
	// /slow must time out; the other pages must not, also under -race on
	// two cores shared with the rest of make test (a fetch of /reset, which
	// answers at once, once took over 1 s there and logged -4).
	cfg.FetchTimeoutMS = 2000
	cfg.MaxAttempts = 2
	cfg.RetryBackoffMS = 50
	cfg.Exclude = []string{`/l/[0-9]+$`} // the 100,000-link page's links: extracted (capped), then out of scope
	seeds := []string{srv.URL + "/", "http://127.0.0.1:1/refused", "http://no-such-host.invalid/"}
	c := newCrawl(t, zk.Addr(), "hostile", cfg, frontier.Layout{Shards: 4, Spread: 2}, seeds)
	c.runWorkers(2, 60*time.Second)

	final, _ := finalStatus(c.logs())
	want := map[string]int{
		srv.URL + "/":                  200,
		srv.URL + "/bomb":              200, // stored as transferred; the decoded body is capped, no links
		srv.URL + "/links":             200,
		srv.URL + "/utf8":              200,
		srv.URL + "/big":               200, // truncated at max_body_bytes, stored with WARC-Truncated
		srv.URL + "/slow":              fetch.CodeTimeout,
		srv.URL + "/reset":             fetch.CodeConnectLost,
		srv.URL + "/private/x":         fetch.CodeRobotsPrecluded,
		"http://127.0.0.1:1/refused":   fetch.CodeRobotsPrerequisiteFailed, // dead host: robots.txt prerequisite (Heritrix -61)
		"http://no-such-host.invalid/": fetch.CodeRobotsPrerequisiteFailed,
	}
	for u, status := range want {
		if got, ok := final[u]; !ok || got != status {
			t.Errorf("%s: final status %d (logged: %v), want %d", u, got, ok, status)
		}
	}
	if got := len(final); got > len(want)+1 { // + /ok%C3%A9 from the utf8 page
		t.Errorf("%d URLs logged, want at most %d: the frontier was flooded", got, len(want)+1)
	}
	st, err := c.queue.Pending(context.Background())
	if err != nil || st.Queued != 0 || st.Claimed != 0 {
		t.Fatalf("after the crawl: queued %d claimed %d (%v), want 0", st.Queued, st.Claimed, err)
	}
	if st.Failed != 4 { // slow, reset, refused, DNS: retried, then dead letters
		t.Errorf("%d dead letters, want 4", st.Failed)
	}
}
