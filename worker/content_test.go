package worker

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// contentSite is a site for the content rules: a page linking a big video
// (hop L) and embedding a small one and a script (hop E); the script names
// two more URLs in string literals.
type contentSite struct {
	srv  *httptest.Server
	sent chan int64 // bytes of /big.mp4 written before its connection failed
	mu   sync.Mutex
	hits map[string]int
}

const bigVideoBytes = 512 << 20

const contentPage = `<html><body><a href="/big.mp4">film</a><video src="/clip.mp4"></video><script src="/js/app.js"></script></body></html>`

const contentScript = `var next = "/from-js.html"; var logo = 'img/logo.png'; var txt = "not a url";`

func newContentSite(t *testing.T) *contentSite {
	t.Helper()
	s := &contentSite{sent: make(chan int64, 4), hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/", "/from-js.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, contentPage)
		case "/clip.mp4":
			w.Header().Set("Content-Type", "video/mp4")
			fmt.Fprint(w, "a small clip")
		case "/js/app.js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			fmt.Fprint(w, contentScript)
		case "/img/logo.png":
			w.Header().Set("Content-Type", "image/png")
			fmt.Fprint(w, "png")
		case "/big.mp4":
			w.Header().Set("Content-Type", "video/mp4")
			w.Header().Set("Content-Length", strconv.Itoa(bigVideoBytes))
			chunk := make([]byte, 64<<10)
			n := 0
			for n < bigVideoBytes {
				m, err := w.Write(chunk)
				n += m
				if err != nil {
					break
				}
			}
			s.sent <- int64(n)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *contentSite) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// reject_mime video/*: the linked big video is not downloaded (the server
// sees its connection closed after a few MiB of 512), its crawl-log line
// says why and no WARC response record is written; the embedded clip (a
// requisite) is fetched whatever its type. extract_js_links takes the
// script's URLs as hop X, resolved against the page that embeds it.
func TestCrawlContentRules(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	for _, js := range []bool{true, false} {
		t.Run("extract_js_links="+strconv.FormatBool(js), func(t *testing.T) {
			site := newContentSite(t)
			cfg := testConfig()
			cfg.MaxDepth = 1
			cfg.Sitemaps = false
			// The body cap is not what stops the video (the automatic
			// request budget follows it down to worker_concurrency).
			cfg.MaxBodyBytes = 1 << 30
			cfg.RejectMIME = []string{"video/*"}
			cfg.ExtractJSLinks = js
			c := newCrawl(t, zk.Addr(), "content-"+strconv.FormatBool(js), cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{site.srv.URL + "/"})
			c.runWorkers(1, 60*time.Second)

			logged := map[string]storage.LogEntry{}
			for _, e := range c.logs() {
				logged[strings.TrimPrefix(e.URL, site.srv.URL)] = e
			}
			responses := c.warcResponses()
			big := logged["/big.mp4"]
			if big.Status != fetch.CodeMIMERejected || big.MIME != "video/mp4" ||
				big.Error != "mime-rejected (-5002): HTTP 200 video/mp4 matches reject_mime video/*: body not read" {
				t.Errorf("/big.mp4 logged %+v; want status -5002, video/mp4 and the reason", big)
			}
			if n := responses[site.srv.URL+"/big.mp4"]; n != 0 {
				t.Errorf("/big.mp4 has %d WARC response records, want none", n)
			}
			select {
			case n := <-site.sent:
				t.Logf("server sent %d of %d bytes of /big.mp4", n, bigVideoBytes)
				if n >= bigVideoBytes/16 {
					t.Errorf("server sent %d of %d bytes: the connection was not closed early", n, bigVideoBytes)
				}
			case <-time.After(10 * time.Second):
				t.Error("the server never saw /big.mp4's connection close")
			}
			if e := logged["/clip.mp4"]; e.Status != 200 || responses[site.srv.URL+"/clip.mp4"] != 1 {
				t.Errorf("/clip.mp4 (a requisite) logged %+v, %d records; want 200 and stored", e, responses[site.srv.URL+"/clip.mp4"])
			}
			for path, hops := range map[string]string{"/from-js.html": "EX", "/img/logo.png": "EX"} {
				e, ok := logged[path]
				switch {
				case js && (!ok || e.Status != 200 || e.Hops != hops || e.Depth != 1):
					t.Errorf("%s logged %+v; want 200, hops %q, depth 1", path, e, hops)
				case !js && (ok || site.hit(path) != 0):
					t.Errorf("%s fetched with extract_js_links off", path)
				}
			}
		})
	}
}
