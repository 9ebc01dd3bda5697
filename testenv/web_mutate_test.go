package testenv

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The version function: deterministic per (Seed, host, path), monotone,
// equal to Changes at every change time, means within the range, and the
// number of changes over a long span as the Poisson rate says.
func TestWebVersionFunction(t *testing.T) {
	start := time.Now().Add(-time.Hour)
	cfg := WebConfig{Seed: 7, Hosts: 2, PagesPerHost: 3,
		Mutate: WebMutate{ChangeMin: time.Second, ChangeMax: 10 * time.Second, Start: start}}
	a, b := NewWeb(t, cfg), NewWeb(t, cfg)
	until := start.Add(10 * time.Minute)
	ca, cb := a.Changes(until), b.Changes(until)
	if len(ca) != len(cb) || len(ca) == 0 {
		t.Fatalf("Changes: %d and %d versions from two webs of one config", len(ca), len(cb))
	}
	type key struct {
		url string
		v   int
	}
	other := map[key]WebChange{}
	for _, d := range cb {
		other[key{portless(b, d.URL), d.Version}] = d
	}
	perURL := map[string]int{}
	for _, c := range ca {
		// The digests differ: bodies hold absolute links with the ports.
		if d, ok := other[key{portless(a, c.URL), c.Version}]; !ok || !c.Time.Equal(d.Time) || c.Mean != d.Mean {
			t.Fatalf("%s version %d differs between two webs of one config: %+v vs %+v", c.URL, c.Version, c, d)
		}
		tg, err := a.lookup(c.URL)
		if err != nil {
			t.Fatal(err)
		}
		if v, since, ok := a.Version(tg.host, tg.path, c.Time); !ok || v != c.Version || !since.Equal(c.Time) {
			t.Errorf("Version(%s, %v) = %d since %v, %v; Changes says %d", c.URL, c.Time, v, since, ok, c.Version)
		}
		if c.Version > 0 {
			if v, _, _ := a.Version(tg.host, tg.path, c.Time.Add(-time.Nanosecond)); v != c.Version-1 {
				t.Errorf("Version(%s) just before change %d = %d", c.URL, c.Version, v)
			}
		}
		if c.Mean < time.Second || c.Mean > 10*time.Second {
			t.Errorf("%s: mean change interval %v outside [1s, 10s]", c.URL, c.Mean)
		}
		perURL[c.URL]++
	}
	if len(perURL) != 2*4 { // "/" and 3 pages per host
		t.Errorf("Changes covers %d pages, want 8", len(perURL))
	}
	if v, _, _ := a.Version(0, "/", start.Add(-time.Minute)); v != 0 {
		t.Errorf("version before Start = %d, want 0", v)
	}
	for _, target := range []string{"/robots.txt", "/p/3", "/p/x", "/missing.html"} {
		if _, _, ok := a.Version(0, target, until); ok {
			t.Errorf("Version(%q) ok, want a page that does not change", target)
		}
	}

	// A page with a fixed mean: 1 s over 2,000 s gives 2,000 ± 3 sigma
	// (sigma = sqrt(2000), about 45) changes.
	fixed := NewWeb(t, WebConfig{Hosts: 1, PagesPerHost: 1,
		Mutate: WebMutate{ChangeMin: time.Second, ChangeMax: time.Second, Start: start}})
	v, _, _ := fixed.Version(0, "/p/0", start.Add(2000*time.Second))
	if math.Abs(float64(v)-2000) > 3*math.Sqrt(2000) {
		t.Errorf("2,000 s at a mean interval of 1 s gave %d changes", v)
	}
}

func TestWebMutateConfigErrors(t *testing.T) {
	for _, m := range []WebMutate{
		{ChangeMin: time.Millisecond, ChangeMax: time.Second},
		{ChangeMin: 2 * time.Second, ChangeMax: time.Second},
		{ChangeMin: time.Second},
	} {
		if _, err := StartWeb(t.Context(), WebConfig{Mutate: m}); !errors.Is(err, ErrWebConfig) {
			t.Errorf("Mutate %+v: err %v, want ErrWebConfig", m, err)
		}
	}
}

// mutGet fetches url with the given request headers.
func mutGet(t *testing.T, url string, hd map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hd {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// Validators and 304s (RFC 9110 section 13.2.2): If-None-Match wins over
// If-Modified-Since; a changed page answers 200 with its new version.
func TestWebMutateConditional(t *testing.T) {
	w := NewWeb(t, WebConfig{Hosts: 1, PagesPerHost: 2,
		Mutate: WebMutate{ChangeMin: 300 * time.Millisecond, ChangeMax: 300 * time.Millisecond}})
	url := w.Seeds()[0] + "p/0"
	resp, body := mutGet(t, url, nil)
	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp.StatusCode != 200 || etag == "" || lm == "" {
		t.Fatalf("GET %s: %d ETag %q Last-Modified %q", url, resp.StatusCode, etag, lm)
	}
	v, err := strconv.Atoi(strings.Trim(etag, "\"v"))
	if err != nil || !strings.Contains(body, "Version "+strconv.Itoa(v)+"<") {
		t.Fatalf("ETag %s and body do not name one version: %v", etag, err)
	}
	if !strings.Contains(body, "href=") {
		t.Error("a changing page lost its links")
	}
	found := false
	for _, c := range w.Changes(time.Now()) {
		if c.URL == url && c.Version == v {
			found = true
			if c.Digest != webDigest([]byte(body)) {
				t.Errorf("Changes digest %s, body's %s", c.Digest, webDigest([]byte(body)))
			}
			if got := c.Time.UTC().Format(http.TimeFormat); got != lm {
				t.Errorf("Last-Modified %q, version time %q", lm, got)
			}
		}
	}
	if !found {
		t.Fatalf("Changes has no version %d of %s", v, url)
	}

	// Before the next change (which is at least 1 ms away; retry a few
	// times should it fall between two requests).
	for try := 0; ; try++ {
		r1, b1 := mutGet(t, url, nil)
		e1, lm1 := r1.Header.Get("ETag"), r1.Header.Get("Last-Modified")
		cases := []struct {
			hd   map[string]string
			want int
		}{
			{map[string]string{"If-None-Match": e1}, 304},
			{map[string]string{"If-None-Match": "\"other\", " + e1}, 304},
			{map[string]string{"If-None-Match": "\"other\""}, 200},
			{map[string]string{"If-Modified-Since": lm1}, 304},
			{map[string]string{"If-Modified-Since": "Mon, 02 Jan 2006 15:04:05 GMT"}, 200},
			{map[string]string{"If-None-Match": "\"other\"", "If-Modified-Since": lm1}, 200},
		}
		same := true
		for _, c := range cases {
			r, b := mutGet(t, url, c.hd)
			if r.Header.Get("ETag") != e1 {
				same = false // a change between the requests; try again
				break
			}
			if r.StatusCode != c.want {
				t.Errorf("headers %v: status %d, want %d", c.hd, r.StatusCode, c.want)
			}
			if c.want == 304 && b != "" {
				t.Errorf("headers %v: 304 with a body of %d bytes", c.hd, len(b))
			}
			if c.want == 200 && b != b1 {
				t.Errorf("headers %v: body differs within one version", c.hd)
			}
		}
		if same {
			break
		}
		if try == 5 {
			t.Fatal("the page changed between requests 5 times in a row")
		}
	}

	// After a change, the old ETag gets the new version.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if nv, _, _ := w.Version(0, "/p/0", time.Now()); nv != v {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no change within 10 s at a mean interval of 300 ms")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, b := mutGet(t, url, map[string]string{"If-None-Match": etag})
	if r.StatusCode != 200 || r.Header.Get("ETag") == etag || strings.Contains(b, "Version "+strconv.Itoa(v)+"<") {
		t.Errorf("after a change, If-None-Match %s: status %d ETag %s", etag, r.StatusCode, r.Header.Get("ETag"))
	}
	// Pages that do not change have no validators.
	if r, _ := mutGet(t, w.Seeds()[0]+"robots.txt", nil); r.Header.Get("ETag") != "" {
		t.Error("robots.txt has an ETag")
	}
}
