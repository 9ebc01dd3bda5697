package testenv

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
)

// SPA defaults and limits.
const (
	// SPADefaultPages is the number of /page/<n> pages when SPAConfig.Pages is 0.
	SPADefaultPages = 20
	// SPADefaultJitter is the slack SPA.Violations allows below the
	// interval: two arrivals at one key count as a violation only when they
	// are closer than interval - jitter. It covers the time between a
	// crawler's politeness slot and the server's handler start (connect,
	// request line, header parse, goroutine scheduling) varying from one
	// request to the next on a loaded 2-core machine.
	SPADefaultJitter = 25 * time.Millisecond
	// SPARoute is the path of the fixture's one history.pushState route.
	SPARoute = "/app/route/about"

	spaMaxPages    = 10_000
	spaMaxArrivals = 1_000_000
)

//go:embed spa_assets
var spaAssets embed.FS

// SPAConfig describes the single-page-app fixture. The zero value is usable.
type SPAConfig struct {
	// Pages is the number of pages /page/0 .. /page/<Pages-1>, each reached
	// only through links the script renders; 0 means SPADefaultPages, at
	// most 10,000.
	Pages int
	// Logger receives start lines (Info) and one line per request (Debug);
	// nil means slog.Default().
	Logger *slog.Logger
}

// SPAArrival is one request the fixture received.
type SPAArrival struct {
	// Key is the politeness key of the host it arrived at: "host:port".
	Key string
	// Path is the request target (path and query).
	Path string
	// Time is when the handler started, after the request header was read.
	Time time.Time
	// Status is the HTTP status sent.
	Status int
	// UserAgent is the request's User-Agent field.
	UserAgent string
}

// SPAViolation is two consecutive arrivals at one key closer than the
// interval a crawl promised (SPA.Violations).
type SPAViolation struct {
	// Key is the politeness key, host:port.
	Key string
	// First and Next are the two arrivals, in arrival order.
	First, Next SPAArrival
	// Gap is Next.Time - First.Time.
	Gap time.Duration
}

// SPA is the single-page-app fixture: two loopback HTTP servers, the app
// host and the asset host (each its own politeness key). The app host
// serves the same HTML shell (an empty <div id="app"> and a script bundle)
// at "/", at /page/<n> and at SPARoute; the script fetches /api/pages.json,
// /api/page/<n>.json or /api/route/about.json and renders the page's
// content, images and links from it. The asset host serves two web fonts
// (one by @font-face in the style sheet, one by the FontFace API) and the
// PNG images (a banner from the style sheet, a hero image per page, and
// images far below the fold that load only when scrolled into view).
// Responses are plain: Content-Type and Content-Length, no validators, no
// compression; the asset host sends Access-Control-Allow-Origin: * (the
// fonts are cross-origin). Both hosts serve a robots.txt allowing all.
// Every request's arrival is recorded per politeness key (Arrivals).
type SPA struct {
	cfg         SPAConfig
	log         *slog.Logger
	app, assets string // host:port

	shell, js, css   []byte // embedded, with the asset origin put in
	pagesJSON, about []byte
	sans, mono       []byte // TrueType: Go Regular and Go Mono

	imgMu    sync.Mutex
	imgCache map[string][]byte // PNG by image name

	mu         sync.Mutex
	arrivals   []SPAArrival
	dropped    int
	arrivalLog io.Writer // nil: none, or after a write error

	servers    []*http.Server
	served     sync.WaitGroup
	cancelBase context.CancelFunc
	closeOnce  sync.Once
	closeErr   error
}

// StartSPA starts the single-page-app fixture described by cfg on two free
// loopback ports and serves until Close; ctx bounds the start only. Errors
// name a bad cfg field or the failing listener.
func StartSPA(ctx context.Context, cfg SPAConfig) (*SPA, error) {
	if cfg.Pages == 0 {
		cfg.Pages = SPADefaultPages
	}
	if cfg.Pages < 1 || cfg.Pages > spaMaxPages {
		return nil, fmt.Errorf("testenv: SPAConfig.Pages %d: want 1..%d", cfg.Pages, spaMaxPages)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var lc net.ListenConfig
	var lns []net.Listener
	for range 2 {
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("testenv: start SPA: listen on 127.0.0.1:0: %w", err)
		}
		lns = append(lns, ln)
	}
	baseCtx, cancel := context.WithCancel(context.Background())
	s := &SPA{cfg: cfg, log: cfg.Logger, app: lns[0].Addr().String(), assets: lns[1].Addr().String(),
		sans: goregular.TTF, mono: gomono.TTF, imgCache: map[string][]byte{}, cancelBase: cancel}
	if err := s.build(); err != nil {
		closeAll(lns)
		cancel()
		return nil, err
	}
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	for i, ln := range lns {
		key := ln.Addr().String()
		serve := s.serveApp
		if i == 1 {
			serve = s.serveAssets
		}
		srv := &http.Server{Handler: s.recorder(key, serve), ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return baseCtx }, ErrorLog: errLog}
		s.servers = append(s.servers, srv)
		s.served.Add(1)
		go func() {
			defer s.served.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("SPA fixture: serve failed", "host", key, "err", err)
			}
		}()
	}
	s.log.Info("SPA fixture started", "seed", s.Seed(), "assets", s.assets, "pages", cfg.Pages)
	return s, nil
}

// NewSPA starts the fixture for a test and closes it in t.Cleanup; it
// calls t.Fatal if it cannot start.
func NewSPA(t testing.TB, cfg SPAConfig) *SPA {
	t.Helper()
	s, err := StartSPA(t.Context(), cfg)
	if err != nil {
		t.Fatalf("testenv.NewSPA: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("testenv: close SPA: %v", err)
		}
	})
	return s
}

// build reads the embedded shell, script and style sheet (with the asset
// host's origin put in) and renders the listing and route JSON.
func (s *SPA) build() error {
	read := func(name string) ([]byte, error) {
		b, err := spaAssets.ReadFile("spa_assets/" + name)
		if err != nil {
			return nil, fmt.Errorf("testenv: SPA asset %s: %w", name, err)
		}
		return bytes.ReplaceAll(b, []byte("__ASSETS__"), []byte("http://"+s.assets)), nil
	}
	var err error
	if s.shell, err = read("index.html"); err != nil {
		return err
	}
	if s.js, err = read("app.js"); err != nil {
		return err
	}
	if s.css, err = read("app.css"); err != nil {
		return err
	}
	links := make([]spaLink, 0, s.cfg.Pages+1)
	for n := range s.cfg.Pages {
		links = append(links, spaLink{Kind: "page", ID: n, Label: "Page " + strconv.Itoa(n)})
	}
	links = append(links, spaLink{Kind: "route", Name: "about", Label: "About"})
	s.pagesJSON = spaJSON(spaDoc{Title: "SPA fixture", Text: fmt.Sprintf("%d pages, each rendered by script from its JSON.", s.cfg.Pages),
		Hero: "hero-index", Links: links, Lazy: []string{"lazy-index-0"}})
	s.about = spaJSON(spaDoc{Title: "About", Text: "A route the script shows by history.pushState.", Hero: "hero-about",
		Links: []spaLink{{Kind: "index", Label: "Index"}, {Kind: "page", ID: 0, Label: "Page 0"}}, Lazy: []string{"lazy-about-0"}})
	return nil
}

// spaDoc is the JSON a route's script renders.
type spaDoc struct {
	Title string    `json:"title"`
	Text  string    `json:"text"`
	Hero  string    `json:"hero"`
	Links []spaLink `json:"links"`
	Lazy  []string  `json:"lazy"`
}

// spaLink is a link the script renders: kind "page" (to /page/<id>),
// "route" (to /app/route/<name>, followed by history.pushState) or "index".
type spaLink struct {
	Kind  string `json:"kind"`
	ID    int    `json:"id"`
	Name  string `json:"name,omitempty"`
	Label string `json:"label"`
}

func spaJSON(d spaDoc) []byte {
	b, err := json.Marshal(d)
	if err != nil {
		panic("testenv: SPA JSON: " + err.Error()) // plain structs of strings and ints
	}
	return append(b, '\n')
}

// pageJSON is page n's JSON: its hero image, two images below the fold,
// and links to the index, its neighbours and the route.
func (s *SPA) pageJSON(n int) []byte {
	links := []spaLink{{Kind: "index", Label: "Index"}}
	if n > 0 {
		links = append(links, spaLink{Kind: "page", ID: n - 1, Label: "Previous"})
	}
	if n+1 < s.cfg.Pages {
		links = append(links, spaLink{Kind: "page", ID: n + 1, Label: "Next"})
	}
	links = append(links, spaLink{Kind: "route", Name: "about", Label: "About"})
	id := strconv.Itoa(n)
	return spaJSON(spaDoc{Title: "Page " + id, Text: "The content of page " + id + ", fetched as JSON and rendered by script.",
		Hero: "hero-" + id, Links: links, Lazy: []string{"lazy-" + id + "-0", "lazy-" + id + "-1"}})
}

// recorder wraps serve, the handler of host key, recording each arrival.
func (s *SPA) recorder(key string, serve func(http.ResponseWriter, *http.Request)) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &webStatusWriter{ResponseWriter: rw}
		serve(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		s.record(SPAArrival{Key: key, Path: r.URL.RequestURI(), Time: start, Status: status, UserAgent: r.UserAgent()})
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "SPA fixture request", slog.String("host", key),
			slog.String("path", r.URL.RequestURI()), slog.Int("status", status))
	})
}

func (s *SPA) record(a SPAArrival) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.arrivals) < spaMaxArrivals {
		s.arrivals = append(s.arrivals, a)
	} else {
		s.dropped++
	}
	if s.arrivalLog == nil {
		return
	}
	if err := writeArrival(s.arrivalLog, a.Time, a.Key, a.Path, a.Status, a.UserAgent); err != nil {
		s.arrivalLog = nil
		s.log.Error("SPA fixture: arrival log dropped", "err", err)
	}
}

// LogArrivals makes every later arrival also be written to w as one line,
// "unix_seconds<TAB>key<TAB>path<TAB>status<TAB>user_agent" (the arrival
// time to the microsecond; key the politeness key host:port), once the
// request is answered; nil stops it. Writes are serialized; after a write
// error the log is logged once and dropped.
func (s *SPA) LogArrivals(w io.Writer) {
	s.mu.Lock()
	s.arrivalLog = w
	s.mu.Unlock()
}

const spaPlain = "text/plain; charset=utf-8"

var spaRobots = []byte("User-agent: *\nDisallow:\n")

// serveApp answers the app host: the shell at "/", /page/<n> and SPARoute,
// the script and style sheet under /static/, the JSON under /api/.
func (s *SPA) serveApp(rw http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/robots.txt":
		webWrite(rw, http.StatusOK, spaPlain, spaRobots)
	case p == "/" || p == SPARoute || s.pageNum(p, "/page/", "") >= 0:
		webWrite(rw, http.StatusOK, webHTMLType, s.shell)
	case p == "/static/app.js":
		webWrite(rw, http.StatusOK, "text/javascript; charset=utf-8", s.js)
	case p == "/static/app.css":
		webWrite(rw, http.StatusOK, "text/css; charset=utf-8", s.css)
	case p == "/api/pages.json":
		webWrite(rw, http.StatusOK, "application/json", s.pagesJSON)
	case p == "/api/route/about.json":
		webWrite(rw, http.StatusOK, "application/json", s.about)
	case s.pageNum(p, "/api/page/", ".json") >= 0:
		webWrite(rw, http.StatusOK, "application/json", s.pageJSON(s.pageNum(p, "/api/page/", ".json")))
	default:
		webWrite(rw, http.StatusNotFound, spaPlain, []byte("not found\n"))
	}
}

// pageNum is n when p is prefix + n + suffix with n a page number in
// canonical form, else -1.
func (s *SPA) pageNum(p, prefix, suffix string) int {
	rest, ok := strings.CutPrefix(p, prefix)
	if !ok {
		return -1
	}
	if rest, ok = strings.CutSuffix(rest, suffix); !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n >= s.cfg.Pages || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

// serveAssets answers the asset host: the fonts and the PNG images.
func (s *SPA) serveAssets(rw http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/robots.txt" {
		webWrite(rw, http.StatusOK, spaPlain, spaRobots)
		return
	}
	rw.Header().Set("Access-Control-Allow-Origin", "*")
	switch {
	case p == "/font/sans.ttf":
		webWrite(rw, http.StatusOK, "font/ttf", s.sans)
	case p == "/font/mono.ttf":
		webWrite(rw, http.StatusOK, "font/ttf", s.mono)
	case strings.HasPrefix(p, "/img/") && strings.HasSuffix(p, ".png") && s.imageExists(strings.TrimSuffix(p[len("/img/"):], ".png")):
		webWrite(rw, http.StatusOK, "image/png", s.image(strings.TrimSuffix(p[len("/img/"):], ".png")))
	default:
		webWrite(rw, http.StatusNotFound, spaPlain, []byte("not found\n"))
	}
}

// imageExists reports whether name is one of the fixture's images: banner,
// hero-index, hero-about, lazy-index-0, lazy-about-0, hero-<n>,
// lazy-<n>-0 and lazy-<n>-1.
func (s *SPA) imageExists(name string) bool {
	switch name {
	case "banner", "hero-index", "hero-about", "lazy-index-0", "lazy-about-0":
		return true
	}
	if s.pageNum(name, "hero-", "") >= 0 {
		return true
	}
	rest, ok := strings.CutPrefix(name, "lazy-")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, '-')
	return i > 0 && (rest[i+1:] == "0" || rest[i+1:] == "1") && s.pageNum(rest[:i], "", "") >= 0
}

// image renders the PNG of name once: a banner 8x60, a hero 240x120, a
// lazy image 200x150; two colours and a diagonal band, all drawn from
// name's hash, so every image differs and replays pixel for pixel.
func (s *SPA) image(name string) []byte {
	s.imgMu.Lock()
	defer s.imgMu.Unlock()
	if b, ok := s.imgCache[name]; ok {
		return b
	}
	w, h := 200, 150
	switch {
	case name == "banner":
		w, h = 8, 60
	case strings.HasPrefix(name, "hero-"):
		w, h = 240, 120
	}
	f := fnv.New64a()
	f.Write([]byte(name))
	x := f.Sum64()
	bg := color.RGBA{uint8(x), uint8(x >> 8), uint8(x >> 16), 255}
	fg := color.RGBA{uint8(x >> 24), uint8(x >> 32), uint8(x >> 40), 255}
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for py := range h {
		for px := range w {
			c := bg
			if d := (px + py) % 40; d < 12 {
				c = fg
			}
			m.SetRGBA(px, py, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		panic("testenv: SPA image: " + err.Error()) // encoding to memory does not fail
	}
	s.imgCache[name] = buf.Bytes()
	return buf.Bytes()
}

// Seed is the fixture's one seed, the app host's "/".
func (s *SPA) Seed() string { return "http://" + s.app + "/" }

// AppHost is the app host's politeness key, "127.0.0.1:port".
func (s *SPA) AppHost() string { return s.app }

// AssetHost is the asset host's politeness key, "127.0.0.1:port".
func (s *SPA) AssetHost() string { return s.assets }

// Pages is the number of /page/<n> pages.
func (s *SPA) Pages() int { return s.cfg.Pages }

// Arrivals returns a copy of the requests received since the start or the
// last ResetArrivals, in the order they were answered (at most 1,000,000;
// later ones are counted in dropped).
func (s *SPA) Arrivals() (arrivals []SPAArrival, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SPAArrival(nil), s.arrivals...), s.dropped
}

// ResetArrivals forgets the arrivals so far (for example the ground
// truth's own render, before a crawl is measured).
func (s *SPA) ResetArrivals() {
	s.mu.Lock()
	s.arrivals, s.dropped = nil, 0
	s.mu.Unlock()
}

// Violations returns every pair of consecutive arrivals at one key (by
// arrival time) closer than interval - jitter, the politeness a crawl at
// 1/interval requests per second per key promised: robots.txt and every
// page and subrequest count. interval must be > 0 and jitter >= 0 (else
// an error naming the argument); SPADefaultJitter is a fair jitter.
func (s *SPA) Violations(interval, jitter time.Duration) ([]SPAViolation, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("testenv: SPA.Violations: interval %v: want > 0", interval)
	}
	if jitter < 0 {
		return nil, fmt.Errorf("testenv: SPA.Violations: jitter %v: want >= 0", jitter)
	}
	arr, _ := s.Arrivals()
	last := map[string]SPAArrival{}
	var out []SPAViolation
	slices.SortStableFunc(arr, func(a, b SPAArrival) int { return a.Time.Compare(b.Time) })
	for _, a := range arr {
		if p, ok := last[a.Key]; ok {
			if gap := a.Time.Sub(p.Time); gap < interval-jitter {
				out = append(out, SPAViolation{Key: a.Key, First: p, Next: a, Gap: gap})
			}
		}
		last[a.Key] = a
	}
	return out, nil
}

// Close stops both hosts: it cancels in-flight requests, closes listeners
// and connections, and waits for handlers to return. Safe to call more
// than once.
func (s *SPA) Close() error {
	s.closeOnce.Do(func() {
		s.cancelBase()
		var errs []error
		for _, srv := range s.servers {
			errs = append(errs, srv.Close())
		}
		s.served.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
