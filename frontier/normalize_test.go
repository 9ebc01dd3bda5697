package frontier

import (
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://example.com", "http://example.com/"},
		{"HTTP://Example.COM/A", "http://example.com/A"},
		{"http://example.com:80/", "http://example.com/"},
		{"https://example.com:443/x", "https://example.com/x"},
		{"http://example.com:443/", "http://example.com:443/"},
		{"https://example.com:80/", "https://example.com:80/"},
		{"http://example.com:8080", "http://example.com:8080/"},
		{"http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"http://example.com/a/%2e%2E/b", "http://example.com/b"},
		{"http://example.com/%7e%41%2f%2F%3a", "http://example.com/~A%2F%2F%3A"},
		{"http://example.com/p?q=%7e%2f&a=%c3%a4", "http://example.com/p?q=~%2F&a=%C3%A4"},
		{"http://example.com/x#frag", "http://example.com/x"},
		{"http://example.com/x?b=2&a=1", "http://example.com/x?b=2&a=1"},
		{"http://user:pw@example.com/", "http://example.com/"},
		{"http://bücher.de/ä", "http://xn--bcher-kva.de/%C3%A4"},
		{"http://BÜCHER.de", "http://xn--bcher-kva.de/"},
		{"http://example.com./", "http://example.com/"},
		{"http://[::1]:80/x", "http://[::1]/x"},
		{"http://[::1]:8080", "http://[::1]:8080/"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"  http://example.com/\n ", "http://example.com/"},
		{"http://example.com\\a\\b", "http://example.com/a/b"},
		{"http://example.com/a b", "http://example.com/a%20b"},
	}
	for _, c := range cases {
		got, err := Normalize(c.in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
		again, err := Normalize(got)
		if err != nil || again != got {
			t.Errorf("Normalize not idempotent on %q: %q, %v", got, again, err)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"ftp://example.com/", ErrUnsupportedScheme},
		{"mailto:a@example.com", ErrUnsupportedScheme},
		{"javascript:void(0)", ErrUnsupportedScheme},
		{"data:text/plain,hi", ErrUnsupportedScheme},
		{"/relative/path", ErrInvalidURL},
		{"", ErrInvalidURL},
		{"http://", ErrInvalidURL},
		{"http://exa mple.com/", ErrInvalidURL},
		{"http://example.com:99999/", ErrInvalidURL},
		{"http://.../", ErrEmptyHost},
		{"http://example.com/" + strings.Repeat("a", MaxURLLength), ErrTooLong},
		{"http://example.com/" + strings.Repeat("a", MaxRawURLLength), ErrTooLong},
	}
	for _, c := range cases {
		got, err := Normalize(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("Normalize(%q) = %q, %v; want error %v", c.in, got, err, c.want)
			continue
		}
		short := c.in
		if len(short) > 50 {
			short = short[:50]
		}
		if !strings.Contains(err.Error(), strings.TrimSpace(short)) {
			t.Errorf("error %q does not name the input %q", err, short)
		}
	}
}

func TestResolve(t *testing.T) {
	base, _ := url.Parse("http://Example.com/dir/page.html?x=1#top")
	cases := []struct{ ref, want string }{
		{"other.html", "http://example.com/dir/other.html"},
		{"../up.html", "http://example.com/up.html"},
		{"/abs?q=1#f", "http://example.com/abs?q=1"},
		{"?y=2", "http://example.com/dir/page.html?y=2"},
		{"#frag", "http://example.com/dir/page.html?x=1"},
		{"//other.org/x", "http://other.org/x"},
		{"https://secure.example.com:443/", "https://secure.example.com/"},
		{"  sp ace.html ", "http://example.com/dir/sp%20ace.html"},
	}
	for _, c := range cases {
		got, err := Resolve(base, c.ref)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.ref, got, err, c.want)
		}
	}
	if _, err := Resolve(base, "mailto:x@example.com"); !errors.Is(err, ErrUnsupportedScheme) {
		t.Errorf("Resolve(mailto) error = %v, want ErrUnsupportedScheme", err)
	}
	if _, err := Resolve(nil, "x"); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("Resolve(nil base) error = %v, want ErrInvalidURL", err)
	}
}

func TestHost(t *testing.T) {
	cases := map[string]string{
		"http://Example.com/x":       "example.com",
		"http://example.com:80/":     "example.com",
		"https://example.com:8443/":  "example.com:8443",
		"http://127.0.0.1:8080/a":    "127.0.0.1:8080",
		"http://[::1]:8080/":         "[::1]:8080",
		"http://bücher.de/":          "xn--bcher-kva.de",
		"http://example.com./":       "example.com",
		"mailto:a@example.com":       "",
		"not a url":                  "",
		"http://user@example.com:81": "example.com:81",
	}
	for in, want := range cases {
		if got := Host(in); got != want {
			t.Errorf("Host(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNormalizeConcurrent checks that the shared parser profile is safe for
// concurrent use (run with -race).
func TestNormalizeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if got, err := Normalize("HTTP://Example.com:80/a/../b%7e?x#y"); err != nil || got != "http://example.com/b~?x" {
					t.Errorf("got %q, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTP://User:pw@Example.COM:80/a/./b/../c%7e%2f?q=%7e&b=a b#frag",
		"https://bücher.de:443", "http://[::1]:80/x", "http://a/%2e%2E/b/.%2e/c", "http://0x7f.1/",
		"http://example.com./", "http://exa mple.com/", "http:example.com", "mailto:a@b",
		"http://example.com/%", "http://example.com/%%32%65", "http://example.com/%2e%2e%2f",
		"https://example.com/a?%7E=%7e#%7e", "http://xn--bcher-kva.de/", "http://1.2.3.4.5/",
		"http://example.com/a/%2E%2E%2E/b", "http://ex%41mple.com/", "http://[fe80::1%25eth0]/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := Normalize(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrUnsupportedScheme) &&
				!errors.Is(err, ErrEmptyHost) && !errors.Is(err, ErrTooLong) {
				t.Fatalf("Normalize(%q): error %v wraps no sentinel", raw, err)
			}
			return
		}
		if len(n) > MaxURLLength {
			t.Fatalf("Normalize(%q) = %d bytes, over the limit", raw, len(n))
		}
		n2, err := Normalize(n)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) fails: %v", raw, n, n, err)
		}
		if n2 != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, n, n2)
		}
		if Host(n) == "" {
			t.Fatalf("Host(%q) is empty", n)
		}
	})
}

// FuzzHostFast: wherever the fast path answers, it gives Host's full-parse
// answer.
func FuzzHostFast(f *testing.F) {
	for _, s := range []string{"http://example.com/", "https://a.b.c:8443/x?y", "http://127.0.0.1:80/", "http://1.2.3/",
		"http://0x7f.0.0.1/", "http://exa_mple.com/", "http://a..b/", "http://xn--nxasmq6b/", "http://a-.b/", "http://256.1.1.1/", "http://01.2.3.4/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, u := range []string{raw, mustNormalize(raw)} {
			if u == "" {
				continue
			}
			if fast, ok := hostFast(u); ok {
				if slow := hostSlow(u); fast != slow {
					t.Fatalf("Host(%q): fast %q, full parse %q", u, fast, slow)
				}
			}
		}
	})
}

// FuzzNormalizeFast: the full parse returns every URL that Normalize's fast
// path returns unchanged (plain, no '%') unchanged too.
func FuzzNormalizeFast(f *testing.F) {
	for _, s := range []string{"http://example.com/", "https://a.b.c:8443/x?y", "http://127.0.0.1:8080/p/1", "http://h1.test/p/0?a=1&b",
		"http://example.com/a/b/", "http://example.com/a;b=c/d:e@f", "http://example.com/?q", "http://example.com/a?b?c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fast, err := Normalize(raw)
		if err != nil || fast != raw {
			return
		}
		if slow, err := normalizeSlow(raw); err != nil || slow != raw {
			t.Fatalf("Normalize(%q): fast path %q, full parse %q (%v)", raw, fast, slow, err)
		}
	})
}

func mustNormalize(raw string) string {
	u, err := Normalize(raw)
	if err != nil {
		return ""
	}
	return u
}
