package fetch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
)

// wireServer is a loopback HTTP/1.1 server that keeps the exact bytes of
// every request header block it reads and answers each with answer(path,
// header block).
type wireServer struct {
	ln     net.Listener
	mu     sync.Mutex
	blocks [][]byte
}

func newWireServer(t *testing.T, answer func(path string, block []byte) string) *wireServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &wireServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					var block []byte
					for {
						line, err := br.ReadBytes('\n')
						if err != nil {
							return
						}
						block = append(block, line...)
						if bytes.Equal(line, []byte("\r\n")) {
							break
						}
					}
					s.mu.Lock()
					s.blocks = append(s.blocks, block)
					s.mu.Unlock()
					path := strings.Fields(string(block))[1]
					if _, err := c.Write([]byte(answer(path, block))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *wireServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *wireServer) last() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocks[len(s.blocks)-1]
}

// sessionSite answers /login with a session cookie and /page with 200 only
// when the request carries it (403 otherwise).
func sessionSite(path string, block []byte) string {
	switch {
	case path == "/login":
		return "HTTP/1.1 200 OK\r\nSet-Cookie: sid=s3ss10n; Path=/\r\nContent-Length: 2\r\n\r\nok"
	case bytes.Contains(block, []byte("\r\nCookie: sid=s3ss10n\r\n")),
		bytes.Contains(block, []byte("\r\nCookie: login=t0ken; sid=s3ss10n\r\n")):
		return "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage"
	case bytes.Contains(block, []byte("\r\nCookie: login=t0ken\r\n")):
		return "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nlogged"
	}
	return "HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno"
}

// A jar in the context sends back the cookie a response set, and the raw
// request (the WARC request record) is byte for byte the header block the
// server read, Cookie header included; without a jar the page is 403.
func TestCookieJarSessionOnTheWire(t *testing.T) {
	srv := newWireServer(t, sessionSite)
	f := New(Options{AllowPrivateNetworks: true})
	defer f.Close()
	jars := NewCookieJars(CookieLimits{})
	ctx := WithCookieJar(context.Background(), jars.Jar("k"))

	if res, err := f.Fetch(ctx, srv.url()+"/login"); err != nil || res.Status != 200 {
		t.Fatalf("login: %v %v", res, err)
	}
	if bytes.Contains(srv.last(), []byte("Cookie:")) {
		t.Fatalf("first request carried a cookie:\n%s", srv.last())
	}
	res, err := f.Fetch(ctx, srv.url()+"/page")
	if err != nil || res.Status != 200 {
		t.Fatalf("page with the jar: %v %v, want 200", res, err)
	}
	if !bytes.Equal(res.RawRequest, srv.last()) {
		t.Fatalf("raw request differs from the bytes the server read:\n%q\n%q", res.RawRequest, srv.last())
	}
	if !bytes.Contains(res.RawRequest, []byte("\r\nCookie: sid=s3ss10n\r\n")) {
		t.Fatalf("raw request lacks the Cookie header:\n%s", res.RawRequest)
	}

	res, err = f.Fetch(context.Background(), srv.url()+"/page")
	if err != nil || res.Status != 403 || bytes.Contains(res.RawRequest, []byte("Cookie:")) {
		t.Fatalf("page without a jar: %v %v, want 403 and no Cookie header", res, err)
	}
	if other := jars.Jar("other"); len(other.Cookies(mustURL(t, srv.url()+"/page"))) != 0 {
		t.Fatal("another key's jar holds the cookie")
	}
}

// A seed cookie is sent from the first request to its host, and to no
// other host.
func TestCookieSeedSentFromTheStart(t *testing.T) {
	srv := newWireServer(t, sessionSite)
	f := New(Options{AllowPrivateNetworks: true})
	defer f.Close()
	jars := NewCookieJars(CookieLimits{})
	if err := jars.SetSeeds([]config.CookieSeed{{URL: srv.url() + "/", Cookies: []string{"login=t0ken; Path=/"}}}); err != nil {
		t.Fatal(err)
	}
	ctx := WithCookieJar(context.Background(), jars.Jar("k"))
	res, err := f.Fetch(ctx, srv.url()+"/members")
	if err != nil || res.Status != 200 || string(res.Body) != "logged" {
		t.Fatalf("first fetch with the seed: %v %v, want 200 logged", res, err)
	}
	// The session cookie joins the seed's.
	if _, err := f.Fetch(ctx, srv.url()+"/login"); err != nil {
		t.Fatal(err)
	}
	res, err = f.Fetch(ctx, srv.url()+"/page")
	if err != nil || res.Status != 200 || !bytes.Contains(res.RawRequest, []byte("Cookie: login=t0ken; sid=s3ss10n\r\n")) {
		t.Fatalf("page: %v %v\n%s", res, err, res.RawRequest)
	}
	other := jars.Jar("localhost")
	if c := other.Cookies(mustURL(t, "http://localhost/")); len(c) != 0 {
		t.Fatalf("seed of 127.0.0.1 sent to localhost: %v", c)
	}
}

// A Set-Cookie flood (thousands of cookies, values past 4 KiB, near the
// 1 MiB header cap) leaves the jar within its cookie and byte caps.
func TestCookieFloodStaysWithinCaps(t *testing.T) {
	page := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		page++
		p := page
		mu.Unlock()
		for i := range 2000 {
			w.Header().Add("Set-Cookie", fmt.Sprintf("c%d_%d=%s; Path=/", p, i, strings.Repeat("v", 100+i%5000)))
			if i%400 == 0 {
				w.Header().Add("Set-Cookie", fmt.Sprintf("big%d=%s", i, strings.Repeat("x", 8000)))
			}
			if len(w.Header()["Set-Cookie"])*2600 > 900<<10 {
				break
			}
		}
		w.Write([]byte("flood"))
	}))
	defer srv.Close()
	f := New(Options{AllowPrivateNetworks: true})
	defer f.Close()
	jars := NewCookieJars(CookieLimits{})
	jar := jars.Jar("k")
	ctx := WithCookieJar(context.Background(), jar)
	for i := range 5 {
		res, err := f.Fetch(ctx, fmt.Sprintf("%s/p%d", srv.URL, i))
		if err != nil || res.Status != 200 {
			t.Fatalf("flood page %d: %v %v", i, res, err)
		}
	}
	if jar.count() > DefaultMaxCookiesPerKey || jar.costBytes() > DefaultMaxCookieBytesPerKey || jar.refusedCount() == 0 {
		t.Fatalf("after the flood: %d cookies, %d bytes, %d refused; want <= %d, <= %d, some refused",
			jar.count(), jar.costBytes(), jar.refusedCount(), DefaultMaxCookiesPerKey, DefaultMaxCookieBytesPerKey)
	}
	sent := jar.Cookies(mustURL(t, srv.URL+"/"))
	bytesSent := 0
	for _, c := range sent {
		bytesSent += len(c.Name) + len(c.Value)
	}
	if len(sent) == 0 || bytesSent > DefaultMaxCookieBytesPerKey {
		t.Fatalf("jar sends %d cookies, %d bytes", len(sent), bytesSent)
	}
	if jars.costBytes() != jar.costBytes() {
		t.Fatalf("total %d bytes, the one jar %d", jars.costBytes(), jar.costBytes())
	}
	t.Logf("flood: %d cookies kept, %d bytes counted, %d refused, %d bytes sent back", jar.count(), jar.costBytes(), jar.refusedCount(), bytesSent)
}

// Many keys' jars stay within the total byte cap and the jar count, the
// least recently used dropped; a replaced or deleted cookie frees its cost.
func TestCookieJarsBounded(t *testing.T) {
	lim := CookieLimits{MaxCookiesPerKey: 10, MaxBytesPerKey: 8 << 10, MaxBytes: 64 << 10, MaxJars: 20}
	jars := NewCookieJars(lim)
	for k := range 200 {
		u := mustURL(t, fmt.Sprintf("http://h%d.example/", k))
		jar := jars.Jar(fmt.Sprintf("h%d.example", k))
		for i := range 20 {
			jar.SetCookies(u, []*http.Cookie{{Name: fmt.Sprintf("c%d", i), Value: strings.Repeat("v", 1000)}})
		}
		if jar.count() > lim.MaxCookiesPerKey || jar.costBytes() > lim.MaxBytesPerKey {
			t.Fatalf("jar %d: %d cookies, %d bytes", k, jar.count(), jar.costBytes())
		}
		if jars.costBytes() > lim.MaxBytes || jars.count() > lim.MaxJars {
			t.Fatalf("after %d keys: %d jars, %d bytes; caps %d, %d", k+1, jars.count(), jars.costBytes(), lim.MaxJars, lim.MaxBytes)
		}
	}
	u := mustURL(t, "http://one.example/")
	jar := jars.Jar("one")
	before := jars.costBytes()
	jar.SetCookies(u, []*http.Cookie{{Name: "a", Value: "1"}})
	jar.SetCookies(u, []*http.Cookie{{Name: "a", Value: "2"}})
	if jar.count() != 1 {
		t.Fatalf("replacing a cookie: %d in the ledger, want 1", jar.count())
	}
	jar.SetCookies(u, []*http.Cookie{{Name: "a", MaxAge: -1}})
	if jar.count() != 0 || jars.costBytes() != before || len(jar.Cookies(u)) != 0 {
		t.Fatalf("after deleting: %d cookies, total %d (was %d)", jar.count(), jars.costBytes(), before)
	}
}

// Seeds that differ from those in force drop every jar; the same seeds
// keep them.
func TestCookieSeedsChangeDropsJars(t *testing.T) {
	jars := NewCookieJars(CookieLimits{})
	seeds := []config.CookieSeed{{URL: "https://example.com/", Cookies: []string{"a=1"}}}
	if err := jars.SetSeeds(seeds); err != nil {
		t.Fatal(err)
	}
	jar := jars.Jar("example.com")
	if got := jar.Cookies(mustURL(t, "https://example.com/x")); len(got) != 1 || got[0].Value != "1" {
		t.Fatalf("seeded jar sends %v", got)
	}
	_ = jars.SetSeeds([]config.CookieSeed{{URL: "https://example.com/", Cookies: []string{"a=1"}}})
	if jars.count() != 1 {
		t.Fatal("the same seeds dropped the jars")
	}
	_ = jars.SetSeeds([]config.CookieSeed{{URL: "https://example.com/", Cookies: []string{"a=2"}}})
	if jars.count() != 0 || jars.costBytes() != 0 {
		t.Fatalf("new seeds kept %d jars, %d bytes", jars.count(), jars.costBytes())
	}
	if got := jars.Jar("example.com").Cookies(mustURL(t, "https://example.com/x")); len(got) != 1 || got[0].Value != "2" {
		t.Fatalf("reseeded jar sends %v", got)
	}
	if err := jars.SetSeeds([]config.CookieSeed{{URL: "ftp://x/", Cookies: []string{"a=SECRET"}}}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("bad seed: %v", err)
	}
}

// A seed cookie with a Domain attribute reaches the hosts it covers, even
// when the seed URL's own host is never requested.
func TestCookieSeedDomainCovers(t *testing.T) {
	jars := NewCookieJars(CookieLimits{})
	if err := jars.SetSeeds([]config.CookieSeed{{URL: "https://www.example.com/", Cookies: []string{"d=1; Domain=example.com", "h=2"}}}); err != nil {
		t.Fatal(err)
	}
	jar := jars.Jar("example.com")
	got := jar.Cookies(mustURL(t, "https://shop.example.com/"))
	if len(got) != 1 || got[0].Name != "d" {
		t.Fatalf("shop.example.com gets %v, want only the Domain cookie", got)
	}
	if got := jar.Cookies(mustURL(t, "https://www.example.com/")); len(got) != 2 {
		t.Fatalf("www.example.com gets %v, want both", got)
	}
	if got := jar.Cookies(mustURL(t, "https://example.org/")); len(got) != 0 {
		t.Fatalf("example.org gets %v", got)
	}
}

// BenchmarkCookieJarPerFetch is the jar work one fetch adds: find the
// key's jar, read its cookies for the URL (5 kept), store one Set-Cookie.
func BenchmarkCookieJarPerFetch(b *testing.B) {
	jars := NewCookieJars(CookieLimits{})
	u := mustURL(b, "https://www.example.com/a/page")
	jar := jars.Jar("www.example.com")
	for i := range 5 {
		jar.SetCookies(u, []*http.Cookie{{Name: fmt.Sprintf("c%d", i), Value: "0123456789abcdef", Path: "/"}})
	}
	set := []*http.Cookie{{Name: "sid", Value: "0123456789abcdef0123456789abcdef", Path: "/"}}
	b.ReportAllocs()
	for b.Loop() {
		j := jars.Jar("www.example.com")
		_ = j.Cookies(u)
		j.SetCookies(u, set)
	}
}
