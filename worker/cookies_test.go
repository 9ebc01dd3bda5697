package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// seedSecret is the seed cookie's value: it must reach the site and never
// the worker's log or status.
const seedSecret = "S33D-s3cret-v4lue"

// cookieSite is a loopback site behind a session: / sets a session cookie
// and links to /a, /b, /c, which answer 403 without it; /members and
// /members2 answer 403 without the login cookie a cookies_seed gives.
// robotsCookie counts robots.txt requests that carried a Cookie header.
type cookieSite struct {
	srv          *httptest.Server
	robotsCookie atomic.Int64
}

func newCookieSite(t *testing.T) *cookieSite {
	s := &cookieSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		html := func(body string) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<html><body>%s</body></html>", body)
		}
		has := func(name, value string) bool {
			c, err := r.Cookie(name)
			return err == nil && c.Value == value
		}
		switch r.URL.Path {
		case "/robots.txt":
			if r.Header.Get("Cookie") != "" {
				s.robotsCookie.Add(1)
			}
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		case "/":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "sess-1", Path: "/"})
			html(`<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>`)
		case "/a", "/b", "/c":
			if !has("sid", "sess-1") {
				http.Error(w, "no session", http.StatusForbidden)
				return
			}
			html("in session")
		case "/members", "/members2":
			if !has("login", seedSecret) {
				http.Error(w, "log in first", http.StatusForbidden)
				return
			}
			html(`<a href="/members2">more</a>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// A site that sets a session cookie on its first page and answers 403
// without it: with cookies on (the default) its pages are 200 and their
// WARC request records show the Cookie header sent; with cookies off they
// are 403.
func TestCrawlCookiesSession(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	site := newCookieSite(t)
	for _, on := range []bool{true, false} {
		cfg := testConfig()
		cfg.Cookies = on
		cfg.Sitemaps = false
		c := newCrawl(t, zk.Addr(), fmt.Sprintf("cookies-%v", on), cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{site.srv.URL + "/"})
		c.runWorkers(1, 60*time.Second)
		final, _ := finalStatus(c.logs())
		want := 403
		if on {
			want = 200
		}
		for _, p := range []string{"/a", "/b", "/c"} {
			if got := final[site.srv.URL+p]; got != want {
				t.Errorf("cookies %v: %s logged %d, want %d (all: %v)", on, p, got, want, final)
			}
		}
		cookieHeaders := 0
		files, _ := warcRecords(t, c.out)
		for _, rec := range allRecords(files) {
			if rec.Type() == "request" && strings.HasSuffix(rec.Get("WARC-Target-URI"), "/a") && bytes.Contains(rec.Block, []byte("\r\nCookie: sid=sess-1\r\n")) {
				cookieHeaders++
			}
		}
		if on && cookieHeaders != 1 || !on && cookieHeaders != 0 {
			t.Errorf("cookies %v: %d request records of /a with the Cookie header", on, cookieHeaders)
		}
	}
}

// A cookies_seed logs the crawl in from its first request; robots.txt
// requests carry no cookie; the seed's value appears in neither the
// worker's log (debug level) nor its status node, not even when a config
// with a bad seed is rejected.
func TestCrawlCookiesSeed(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	site := newCookieSite(t)
	cfg := testConfig()
	cfg.Sitemaps = false
	cfg.CookiesSeed = config.CookieSeeds{{URL: site.srv.URL + "/", Cookies: []string{"login=" + seedSecret + "; Path=/"}}}
	c := newCrawl(t, zk.Addr(), "cookieseed", cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{site.srv.URL + "/members"})
	var logs syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := c.startWorker(ctx, "w1", func(o *Options) {
		o.ExitWhenDone = false
		o.HeartbeatInterval = 200 * time.Millisecond
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	waitFor(t, ctx, "both member pages logged", func() bool {
		final, _ := finalStatus(c.logs())
		return final[site.srv.URL+"/members2"] != 0
	})
	final, _ := finalStatus(c.logs())
	for _, p := range []string{"/members", "/members2"} {
		if got := final[site.srv.URL+p]; got != 200 {
			t.Errorf("%s logged %d, want 200 (the seed cookie logs in)", p, got)
		}
	}
	bad := cfg
	bad.CookiesSeed = config.CookieSeeds{{URL: "ftp://nowhere/", Cookies: []string{"login=" + seedSecret}}}
	c.setConfig(bad)
	var status []byte
	waitFor(t, ctx, "the bad config in the status node", func() bool {
		_, data, err := coord.Members(ctx, c.client, c.root)
		status = data["w1"]
		return err == nil && bytes.Contains(status, []byte("cookies_seed"))
	})
	cancel()
	<-done
	if bytes.Contains(status, []byte(seedSecret)) {
		t.Errorf("status node shows the seed value: %s", status)
	}
	if strings.Contains(logs.String(), seedSecret) {
		t.Errorf("worker log shows the seed value:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"cookie_seeds":1`) {
		t.Errorf("worker log does not note the seed:\n%s", logs.String())
	}
	if n := site.robotsCookie.Load(); n != 0 {
		t.Errorf("%d robots.txt requests carried a cookie", n)
	}
}

// waitFor polls cond every 50 ms until it holds, failing the test when ctx
// ends first.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// allRecords flattens warcRecords' map.
func allRecords(files map[string]map[int64]*storage.Record) []*storage.Record {
	var out []*storage.Record
	for _, recs := range files {
		for _, r := range recs {
			out = append(out, r)
		}
	}
	return out
}
