package testenv

import (
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var trapHref = regexp.MustCompile(`href="([^"]+)"`)

// getTrap fetches path from the trap at base with Accept-Encoding: gzip and
// returns the transferred size and the absolute link URLs.
func getTrap(t *testing.T, base, path string) (gzBytes int, links []string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET %s: %d, encoding %q", path, resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	html, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := url.Parse(base)
	for _, m := range trapHref.FindAllStringSubmatch(string(html), -1) {
		u, err := b.Parse(m[1])
		if err != nil {
			t.Fatalf("link %q: %v", m[1], err)
		}
		links = append(links, u.String())
	}
	return len(raw), links
}

// testTrapLinks keeps the pages small: the race detector makes gzip and
// regexp over a full 19 MB page take minutes.
const testTrapLinks = 500

func TestTrapFlavoursLinkNewLongURLs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	for _, f := range TrapFlavours {
		h, err := NewTrapHandler(TrapConfig{Flavour: f, Port: port, Links: testTrapLinks})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/"+string(f)+"/", http.StripPrefix("/"+string(f), h))
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()

	for _, f := range TrapFlavours {
		t.Run(string(f), func(t *testing.T) {
			size, links := getTrap(t, base+"/"+string(f), "/")
			if len(links) != testTrapLinks || size <= 0 {
				t.Fatalf("%d links in %d bytes, want %d links", len(links), size, testTrapLinks)
			}
			seen := map[string]bool{}
			hosts := map[string]bool{}
			for _, l := range links {
				// The prefix stripped by the mux is not part of the links.
				if n := len(l); n < TrapDefaultURLLength-40 || n > TrapDefaultURLLength+40 {
					t.Fatalf("link of %d characters, want about %d: %.80s...", n, TrapDefaultURLLength, l)
				}
				seen[l] = true
				u, _ := url.Parse(l)
				hosts[u.Host] = true
			}
			if len(seen) != len(links) {
				t.Errorf("%d distinct links of %d", len(seen), len(links))
			}
			switch f {
			case TrapSubdomain:
				if len(hosts) < len(links)*99/100 {
					t.Errorf("%d distinct hosts for %d links", len(hosts), len(links))
				}
				for h := range hosts {
					if !strings.HasPrefix(h, "127.") || strings.HasPrefix(h, "127.0.0.1:") {
						t.Fatalf("host %q is not a new loopback literal", h)
					}
				}
			default:
				if len(hosts) != 1 || !hosts[ln.Addr().String()] {
					t.Errorf("hosts %v, want only the trap's", hosts)
				}
			}
			// A linked page links to other new URLs; the same page again to the same ones.
			u, _ := url.Parse(links[0])
			_, next := getTrap(t, base+"/"+string(f), u.Path)
			if next[0] == links[0] || seen[next[0]] {
				t.Errorf("page %s links to an URL of its parent", u.Path)
			}
			_, again := getTrap(t, base+"/"+string(f), "/")
			if again[7] != links[7] {
				t.Errorf("the same page gave other links")
			}
		})
	}
	resp, err := http.Get(base + "/random/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("robots.txt: %d, want 404", resp.StatusCode)
	}
}

func TestTrapConfigErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  TrapConfig
		want string
	}{
		{TrapConfig{Port: 80, Flavour: "wild"}, "Flavour"},
		{TrapConfig{Port: 80, Links: -1}, "Links"},
		{TrapConfig{Port: 80, URLLength: 10}, "URLLength"},
		{TrapConfig{}, "Port"},
	} {
		_, err := NewTrapHandler(c.cfg)
		if !errors.Is(err, ErrWebConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.cfg, err, c.want)
		}
	}
}

// TestTrapRandomPageFitsTheBodyCap checks that a full-size page of the
// least compressible flavour stays under the crawler's default 10 MiB body
// cap once gzipped (fetch.DefaultMaxBodyBytes), or its links would never be
// read.
func TestTrapRandomPageFitsTheBodyCap(t *testing.T) {
	h, err := NewTrapHandler(TrapConfig{Flavour: TrapRandom, Port: 65535})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:65535/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := &sizeRecorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.n < 9<<20 || rec.n >= 10<<20 {
		t.Errorf("gzipped page is %d bytes, want 9..10 MiB (under the crawler's default 10 MiB body cap)", rec.n)
	}
}

// sizeRecorder is an http.ResponseWriter that only counts body bytes.
type sizeRecorder struct {
	header http.Header
	n      int
}

func (r *sizeRecorder) Header() http.Header         { return r.header }
func (r *sizeRecorder) WriteHeader(int)             {}
func (r *sizeRecorder) Write(p []byte) (int, error) { r.n += len(p); return len(p), nil }
