package render

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// needChromium skips loudly when no Chromium is installed.
func needChromium(t testing.TB) {
	t.Helper()
	if _, err := FindChromium(""); err != nil {
		t.Skip("!!! browser capture NOT tested: " + err.Error() + " !!!")
	}
}

// spaPages is a tiny script-built site: links only after script runs
// (from a fetch() of JSON), a pushState route, a lazy image that loads on
// scroll, a WebSocket, an EventSource and a service worker that must never
// reach the server.
var spaPages = map[string]string{
	"/": `<!doctype html><html><head><title>shell</title><script src="/app.js"></script></head>
<body><div id="root"></div><div style="height:6000px"></div><div id="lazy"></div></body></html>`,
	"/app.js": `addEventListener('DOMContentLoaded', async () => {
  const r = await fetch('/api/links.json');
  const links = await r.json();
  const root = document.getElementById('root');
  for (const l of links) { const a = document.createElement('a'); a.href = l; a.textContent = l; root.appendChild(a); }
  history.pushState({}, '', '/route/one');
  try { new WebSocket('ws://' + location.host + '/ws'); } catch (e) {}
  try { new EventSource('/events'); } catch (e) {}
  try { navigator.serviceWorker.register('/sw.js').catch(() => {}); } catch (e) {}
  const io = new IntersectionObserver((es) => { for (const e of es) if (e.isIntersecting) {
    const img = new Image(); img.src = '/lazy.png'; document.getElementById('lazy').appendChild(img); io.disconnect(); } });
  io.observe(document.getElementById('lazy'));
});`,
	"/api/links.json": `["/page/a", "/page/b", "https://example.org/x"]`,
	"/lazy.png":       "PNG",
	"/sw.js":          "self.addEventListener('fetch', () => {});",
	"/hang":           `<!doctype html><html><body><script>for(;;){}</script></body></html>`,
	"/slow":           `<!doctype html><html><body><script>fetch('/slow.json')</script></body></html>`,
	"/slow.json":      `{}`,
}

// spaServer serves spaPages and counts every request by path; a request
// that does not carry X-Zk-Test came from elsewhere than the test's
// Fetcher (the browser on its own).
type spaServer struct {
	*httptest.Server
	mu     sync.Mutex
	hits   map[string]int
	leaked []string
}

func newSPAServer(t testing.TB) *spaServer {
	s := &spaServer{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		if r.Header.Get("X-Zk-Test") == "" {
			s.leaked = append(s.leaked, r.URL.Path)
		}
		s.mu.Unlock()
		body, ok := spaPages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ".js"):
			w.Header().Set("Content-Type", "text/javascript")
		case strings.HasSuffix(r.URL.Path, ".json"):
			w.Header().Set("Content-Type", "application/json")
		case strings.HasSuffix(r.URL.Path, ".png"):
			w.Header().Set("Content-Type", "image/png")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// get fetches u from the server as the test's Fetcher does.
func (s *spaServer) get(ctx context.Context, u string) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("X-Zk-Test", "1")
	resp, err := s.Client().Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
}

// page returns the Page of path: its document fetched first, the rest by
// fetcher (or s.get when nil), the URLs asked for noted in asked.
func (s *spaServer) page(t *testing.T, path string, asked *[]string, mu *sync.Mutex) Page {
	t.Helper()
	doc, err := s.get(context.Background(), s.URL+path)
	if err != nil {
		t.Fatal(err)
	}
	return Page{URL: s.URL + path, Document: doc, Fetch: func(ctx context.Context, r Request) (Response, error) {
		mu.Lock()
		*asked = append(*asked, r.URL)
		mu.Unlock()
		if !strings.HasPrefix(r.URL, s.URL) {
			return Response{}, errors.New("out of scope")
		}
		return s.get(ctx, r.URL)
	}}
}

func newPool(t *testing.T, o Options) *Pool {
	t.Helper()
	needChromium(t)
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestRenderScriptPage(t *testing.T) {
	s := newSPAServer(t)
	p := newPool(t, Options{Timeout: 20 * time.Second})
	var asked []string
	var mu sync.Mutex
	pg := s.page(t, "/", &asked, &mu)
	pg.Screenshot = true
	res, err := p.Render(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered in %s: %d requests, %d failed; browser RSS %d MiB; asked %q", res.Took, res.Requests, res.Failed, p.RSS()>>20, asked)
	want := []string{s.URL + "/page/a", s.URL + "/page/b", "https://example.org/x"}
	for _, w := range want {
		if !contains(res.Links, w) {
			t.Errorf("rendered links %q lack %s", res.Links, w)
		}
	}
	if !contains(res.Routes, s.URL+"/route/one") {
		t.Errorf("routes %q lack the pushState route", res.Routes)
	}
	if !strings.Contains(res.HTML, `href="/page/a"`) {
		t.Errorf("rendered DOM lacks the script's links: %.300s", res.HTML)
	}
	if !contains(asked, s.URL+"/lazy.png") {
		t.Errorf("the lazy image was not requested on scroll; asked %q", asked)
	}
	if len(res.Screenshot) < 8 || string(res.Screenshot[1:4]) != "PNG" {
		t.Errorf("screenshot is not a PNG (%d bytes)", len(res.Screenshot))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.leaked) > 0 {
		t.Errorf("requests reached the server past the Fetcher: %q", s.leaked)
	}
	if s.hits["/ws"] > 0 || s.hits["/events"] > 0 || s.hits["/sw.js"] > 0 {
		t.Errorf("a WebSocket, EventSource or service worker script reached the server: %v", s.hits)
	}
	if s.hits["/"] != 1 {
		t.Errorf("the document was fetched %d times, want once (by the test)", s.hits["/"])
	}
}

func TestRenderHangKilled(t *testing.T) {
	s := newSPAServer(t)
	const timeout = 8 * time.Second
	p := newPool(t, Options{Timeout: timeout, IdleMax: time.Second})
	var asked []string
	var mu sync.Mutex
	start := time.Now()
	_, err := p.Render(context.Background(), s.page(t, "/hang", &asked, &mu))
	took := time.Since(start)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("a page that loops for ever: err %v, want ErrTimeout", err)
	}
	if took > timeout+3*time.Second {
		t.Errorf("the hung render took %s, past its %s timeout", took, timeout)
	}
	if _, err := p.Render(context.Background(), s.page(t, "/", &asked, &mu)); err != nil {
		t.Fatalf("the render after a killed browser failed: %v", err)
	}
}

func TestRenderBrowserKilled(t *testing.T) {
	s := newSPAServer(t)
	p := newPool(t, Options{Timeout: 20 * time.Second})
	var asked []string
	var mu sync.Mutex
	pg := s.page(t, "/slow", &asked, &mu)
	inner := pg.Fetch
	killed := 0
	pg.Fetch = func(ctx context.Context, r Request) (Response, error) {
		if strings.HasSuffix(r.URL, "/slow.json") {
			killed = p.PID()
			_ = syscall.Kill(killed, syscall.SIGKILL)
			<-ctx.Done()
			return Response{}, ctx.Err()
		}
		return inner(ctx, r)
	}
	start := time.Now()
	_, err := p.Render(context.Background(), pg)
	if err == nil {
		t.Fatal("a render whose browser was killed -9 returned no error")
	}
	t.Logf("killed browser %d: %v after %s", killed, err, time.Since(start))
	if time.Since(start) > 15*time.Second {
		t.Errorf("the killed render took %s to fail", time.Since(start))
	}
	res, err := p.Render(context.Background(), s.page(t, "/", &asked, &mu))
	if err != nil {
		t.Fatalf("the render after a killed browser failed: %v", err)
	}
	if p.PID() == killed || !contains(res.Links, s.URL+"/page/a") {
		t.Errorf("after the kill: pid %d (killed %d), links %q", p.PID(), killed, res.Links)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
