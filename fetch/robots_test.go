package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// robotsSite is a loopback site whose /robots.txt is served by handler and
// counted.
type robotsSite struct {
	srv     *httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	handler http.HandlerFunc
}

func newRobotsSite(t *testing.T, h http.HandlerFunc) *robotsSite {
	t.Helper()
	s := &robotsSite{handler: h}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			s.fetches.Add(1)
		}
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *robotsSite) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// serveRobots answers /robots.txt with status and body.
func serveRobots(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func newRobots(t *testing.T, o RobotsOptions) *Robots {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return NewRobots(newFetcher(t, loopbackOpts()), o)
}

const ua = "zkcrawl/0.1 (+https://example.org/bot)"

func TestRobotsRules(t *testing.T) {
	site := newRobotsSite(t, serveRobots(200, strings.Join([]string{
		"# comment",
		"User-agent: *",
		"Disallow: /private",
		"Disallow: /*?session=",
		"",
		"User-agent: ZKCrawl",
		"Disallow: /zk-only",
		"Allow: /zk-only/ok",
		"Crawl-delay: 2",
	}, "\n")))
	r := newRobots(t, RobotsOptions{})
	cases := []struct {
		path, agent string
		want        bool
	}{
		{"/", ua, true},
		{"/private/x", ua, true}, // our own group replaces "*"
		{"/zk-only/x", ua, false},
		{"/zk-only/ok/y", ua, true}, // longest match wins
		{"/robots.txt", ua, true},
		{"/private/x", "otherbot/2.0", false},
		{"/page?session=abc", "otherbot/2.0", false},
		{"/page?id=1", "otherbot/2.0", true},
		{"/zk-only/x", "otherbot/2.0", true},
	}
	for _, c := range cases {
		got, err := r.Allowed(context.Background(), site.srv.URL+c.path, c.agent)
		if err != nil || got != c.want {
			t.Errorf("Allowed(%s, %q) = %v, %v; want %v", c.path, c.agent, got, err, c.want)
		}
	}
	hostPort := strings.TrimPrefix(site.srv.URL, "http://")
	if d, origin := r.CrawlDelay(context.Background(), site.srv.URL, ua); d != 2*time.Second || origin != "http://"+hostPort {
		t.Errorf("CrawlDelay = %v of %q, want 2s of http://%s", d, origin, hostPort)
	}
	if d, _ := r.CrawlDelay(context.Background(), hostPort, ua); d != 2*time.Second {
		t.Errorf("CrawlDelay(host:port) = %v, want 2s", d)
	}
	if d, _ := r.CrawlDelay(context.Background(), site.srv.URL, "otherbot"); d != 0 {
		t.Errorf("CrawlDelay for other agent = %v, want 0", d)
	}
	if n := site.fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want 1 (cached)", n)
	}
}

func TestRobotsProductToken(t *testing.T) {
	r := NewRobots(New(Options{UserAgent: "MyBot-2_x/3.1 (compatible)"}), RobotsOptions{})
	for in, want := range map[string]string{
		"zkcrawl/0.1 (+https://x)":              "zkcrawl",
		"ZKCrawl":                               "zkcrawl",
		"Mozilla/5.0 (compatible; zkcrawl/1.0)": "mozilla",
		"":                                      "mybot-_x",
	} {
		if got := r.productToken(in); got != want {
			t.Errorf("productToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRobotsCrawlDelayCapped(t *testing.T) {
	site := newRobotsSite(t, serveRobots(200, "User-agent: *\nCrawl-delay: 3600\n"))
	r := newRobots(t, RobotsOptions{MaxCrawlDelay: 10 * time.Second})
	if d, _ := r.CrawlDelay(context.Background(), site.srv.URL+"/any/page", ua); d != 10*time.Second {
		t.Errorf("CrawlDelay = %v, want the 10s cap", d)
	}
}

func TestRobots4xxAllowsAll(t *testing.T) {
	for _, status := range []int{404, 401, 403, 410} {
		site := newRobotsSite(t, serveRobots(status, "User-agent: *\nDisallow: /\n"))
		ok, err := newRobots(t, RobotsOptions{}).Allowed(context.Background(), site.srv.URL+"/x", ua)
		if !ok || err != nil {
			t.Errorf("status %d: Allowed = %v, %v; want true", status, ok, err)
		}
	}
}

func TestRobotsUnreachableDisallowsAll(t *testing.T) {
	site := newRobotsSite(t, serveRobots(503, "busy"))
	r := newRobots(t, RobotsOptions{ErrorTTL: 200 * time.Millisecond})
	for _, path := range []string{"/x", "/y"} {
		ok, err := r.Allowed(context.Background(), site.srv.URL+path, ua)
		if ok || Code(err) != CodeRobotsPrerequisiteFailed || !Retryable(Code(err)) {
			t.Fatalf("503: Allowed = %v, %v (code %d); want false, code %d", ok, err, Code(err), CodeRobotsPrerequisiteFailed)
		}
	}
	if n := site.fetches.Load(); n != 1 {
		t.Errorf("fetched %d times within the error TTL, want 1", n)
	}
	// The site recovers; after the error TTL robots.txt is fetched again.
	site.set(serveRobots(200, "User-agent: *\nDisallow: /y\n"))
	time.Sleep(250 * time.Millisecond)
	if ok, err := r.Allowed(context.Background(), site.srv.URL+"/x", ua); !ok || err != nil {
		t.Errorf("after recovery: Allowed = %v, %v; want true", ok, err)
	}
	if ok, _ := r.Allowed(context.Background(), site.srv.URL+"/y", ua); ok {
		t.Error("after recovery: /y allowed")
	}
	if n := site.fetches.Load(); n != 2 {
		t.Errorf("fetched %d times, want 2", n)
	}

	site.set(serveRobots(429, ""))
	r2 := newRobots(t, RobotsOptions{})
	if ok, err := r2.Allowed(context.Background(), site.srv.URL+"/x", ua); ok || Code(err) != CodeRobotsPrerequisiteFailed {
		t.Errorf("429: Allowed = %v, %v; want false, code %d", ok, err, CodeRobotsPrerequisiteFailed)
	}

	// Nothing listening at all.
	ok, err := r2.Allowed(context.Background(), "http://"+closedPort(t)+"/x", ua)
	if ok || Code(err) != CodeRobotsPrerequisiteFailed || Code(errors.Unwrap(err)) != CodeConnectFailed {
		t.Errorf("unreachable: Allowed = %v, %v; want false, code %d wrapping %d", ok, err,
			CodeRobotsPrerequisiteFailed, CodeConnectFailed)
	}
}

func TestRobotsTTL(t *testing.T) {
	site := newRobotsSite(t, serveRobots(200, "User-agent: *\nDisallow: /a\n"))
	r := newRobots(t, RobotsOptions{TTL: 150 * time.Millisecond})
	if ok, _ := r.Allowed(context.Background(), site.srv.URL+"/a", ua); ok {
		t.Fatal("/a allowed")
	}
	site.set(serveRobots(200, "User-agent: *\nDisallow: /b\n"))
	if ok, _ := r.Allowed(context.Background(), site.srv.URL+"/a", ua); ok {
		t.Fatal("/a allowed before the TTL passed")
	}
	time.Sleep(200 * time.Millisecond)
	if ok, _ := r.Allowed(context.Background(), site.srv.URL+"/a", ua); !ok {
		t.Fatal("/a still disallowed after the TTL")
	}
	if n := site.fetches.Load(); n != 2 {
		t.Errorf("fetched %d times, want 2", n)
	}
}

func TestRobotsRedirects(t *testing.T) {
	// /robots.txt -> /r1 -> ... -> /rN -> rules disallowing /x.
	chain := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var i int
			switch {
			case r.URL.Path == "/robots.txt":
				i = 0
			case strings.HasPrefix(r.URL.Path, "/r"):
				fmt.Sscanf(r.URL.Path, "/r%d", &i)
			default:
				http.NotFound(w, r)
				return
			}
			if i < n {
				http.Redirect(w, r, fmt.Sprintf("/r%d", i+1), http.StatusMovedPermanently)
				return
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /x\n")
		}
	}
	five := newRobotsSite(t, chain(5))
	var hops []string // Fetched: every response, each redirect hop its own, with its raw bytes
	fetched := func(res *Result) {
		if len(res.RawRequest) == 0 || len(res.RawResponseHeader) == 0 {
			t.Errorf("Fetched %s without raw request or response", res.URL)
		}
		hops = append(hops, fmt.Sprintf("%s %d", strings.TrimPrefix(res.URL, five.srv.URL), res.Status))
	}
	if ok, err := newRobots(t, RobotsOptions{Fetched: fetched}).Allowed(context.Background(), five.srv.URL+"/x", ua); ok || err != nil {
		t.Errorf("5 redirects: Allowed = %v, %v; want false (rules reached)", ok, err)
	}
	if want := "/robots.txt 301,/r1 301,/r2 301,/r3 301,/r4 301,/r5 200"; strings.Join(hops, ",") != want {
		t.Errorf("Fetched saw %q, want %q", hops, want)
	}
	six := newRobotsSite(t, chain(6))
	if ok, err := newRobots(t, RobotsOptions{}).Allowed(context.Background(), six.srv.URL+"/x", ua); !ok || err != nil {
		t.Errorf("6 redirects: Allowed = %v, %v; want true (unavailable)", ok, err)
	}
}

func TestRobotsHugeFileParsesFirst500KiB(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /early\n")
	for b.Len() < 600<<10 {
		b.WriteString("# padding padding padding padding padding padding padding padding\n")
	}
	b.WriteString("Disallow: /late\n")
	site := newRobotsSite(t, serveRobots(200, b.String()))
	r := newRobots(t, RobotsOptions{})
	if ok, _ := r.Allowed(context.Background(), site.srv.URL+"/early", ua); ok {
		t.Error("/early allowed")
	}
	if ok, err := r.Allowed(context.Background(), site.srv.URL+"/late", ua); !ok || err != nil {
		t.Errorf("/late: %v, %v; want allowed (rule beyond 500 KiB)", ok, err)
	}
}

func TestRobotsLenientParse(t *testing.T) {
	site := newRobotsSite(t, serveRobots(200, "Disallow: /orphan\r\nUser-agent: *\r\nCrawl-delay: soon\r\nDisallow: /private\r\nSitemap: http://x/s.xml\r\n"))
	r := newRobots(t, RobotsOptions{})
	if ok, err := r.Allowed(context.Background(), site.srv.URL+"/private", ua); ok || err != nil {
		t.Errorf("/private: %v, %v; want disallowed despite the invalid lines", ok, err)
	}
	if ok, _ := r.Allowed(context.Background(), site.srv.URL+"/orphan", ua); !ok {
		t.Error("/orphan disallowed by a rule outside any group")
	}
}

func TestRobotsSingleflight(t *testing.T) {
	site := newRobotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		fmt.Fprint(w, "User-agent: *\nDisallow: /no\n")
	})
	r := newRobots(t, RobotsOptions{})
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Go(func() {
			ok, err := r.Allowed(context.Background(), fmt.Sprintf("%s/no/%d", site.srv.URL, i), ua)
			if ok || err != nil {
				t.Errorf("Allowed = %v, %v; want false", ok, err)
			}
		})
	}
	wg.Wait()
	if n := site.fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times by 50 concurrent callers, want 1", n)
	}
}

func TestRobotsCallerCancelDoesNotPoisonCache(t *testing.T) {
	site := newRobotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond)
		fmt.Fprint(w, "User-agent: *\nDisallow: /no\n")
	})
	r := newRobots(t, RobotsOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Allowed(ctx, site.srv.URL+"/yes", ua); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want context.DeadlineExceeded", err)
	}
	if ok, err := r.Allowed(context.Background(), site.srv.URL+"/yes", ua); !ok || err != nil {
		t.Errorf("Allowed = %v, %v; want true", ok, err)
	}
	if n := site.fetches.Load(); n != 1 {
		t.Errorf("fetched %d times, want 1 (the cancelled caller's fetch completed and was cached)", n)
	}
}

func TestRobotsBadURL(t *testing.T) {
	r := newRobots(t, RobotsOptions{})
	for _, u := range []string{"ftp://x/y", "/relative", "http://"} {
		if ok, err := r.Allowed(context.Background(), u, ua); ok || Code(err) != CodeUnfetchableURI {
			t.Errorf("%q: %v, %v; want false, code %d", u, ok, err, CodeUnfetchableURI)
		}
	}
}

func TestRobotsSSRFGuardApplies(t *testing.T) {
	site := newRobotsSite(t, serveRobots(200, "User-agent: *\nDisallow:\n"))
	r := NewRobots(newFetcher(t, Options{}), RobotsOptions{})
	ok, err := r.Allowed(context.Background(), site.srv.URL+"/x", ua)
	if ok || !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("Allowed = %v, %v; want false with ErrBlockedAddress", ok, err)
	}
	if n := site.fetches.Load(); n != 0 {
		t.Errorf("robots.txt fetched %d times through the SSRF guard", n)
	}
}

// With a Gate, every robots.txt request, each redirect hop, is admitted by
// it, and the last hop's release sees the outcome cached (so the caller can
// set the Crawl-delay before its slot frees). A wait cut off by ctx caches
// nothing; any other gate refusal counts as robots.txt unreachable.
func TestRobotsGate(t *testing.T) {
	site := newRobotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, "/moved.txt", http.StatusFound)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /x\nCrawl-delay: 3\n")
	})
	var mu sync.Mutex
	var admitted []string
	var delayAtRelease []time.Duration
	var r *Robots
	r = newRobots(t, RobotsOptions{Gate: func(ctx context.Context, robotsURL, target string) (func(time.Time), error) {
		mu.Lock()
		admitted = append(admitted, strings.TrimPrefix(target, site.srv.URL))
		mu.Unlock()
		return func(time.Time) {
			d, _, ok := r.CachedCrawlDelay(robotsURL, ua)
			if !ok {
				d = -1
			}
			mu.Lock()
			delayAtRelease = append(delayAtRelease, d)
			mu.Unlock()
		}, nil
	}})
	if ok, err := r.Allowed(context.Background(), site.srv.URL+"/x", ua); ok || err != nil {
		t.Fatalf("Allowed = %v, %v; want false", ok, err)
	}
	if strings.Join(admitted, " ") != "/robots.txt /moved.txt" || len(delayAtRelease) != 2 ||
		delayAtRelease[0] != -1 || delayAtRelease[1] != 3*time.Second {
		t.Fatalf("gate admitted %q, Crawl-delay at each release %v; want both hops, the delay cached at the last", admitted, delayAtRelease)
	}

	other := newRobotsSite(t, serveRobots(200, "User-agent: *\nDisallow: /\n"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stuck := newRobots(t, RobotsOptions{Gate: func(ctx context.Context, _, _ string) (func(time.Time), error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	if _, err := stuck.Allowed(ctx, other.srv.URL+"/", ua); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allowed with its gate wait cancelled: %v", err)
	}
	if stuck.Cached(other.srv.URL+"/") || other.fetches.Load() != 0 {
		t.Fatal("a load cut off at the gate was cached or fetched")
	}
	refused := newRobots(t, RobotsOptions{Gate: func(context.Context, string, string) (func(time.Time), error) {
		return nil, errors.New("no host key")
	}})
	if ok, err := refused.Allowed(context.Background(), other.srv.URL+"/", ua); ok || Code(err) != CodeRobotsPrerequisiteFailed {
		t.Fatalf("Allowed with the gate refusing: %v, %v; want robots.txt unreachable", ok, err)
	}
	if refused.Cached(other.srv.URL+"/") || other.fetches.Load() != 0 {
		t.Fatal("a load the gate refused was cached or fetched")
	}
}
