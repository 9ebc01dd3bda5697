package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// spaGet fetches u and returns the response (body read) and the body.
func spaGet(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", u, err)
	}
	return resp, body
}

// TestSPAServes checks the fixture over HTTP without a browser: the HTML is
// a shell without links at every page's URL, the JSON lists the pages and
// the route, assets answer 200 with plain headers (no validators), unknown
// paths 404, and every arrival is recorded per key.
func TestSPAServes(t *testing.T) {
	s := NewSPA(t, SPAConfig{Pages: 3, Logger: Logger()})
	app, assets := "http://"+s.AppHost(), "http://"+s.AssetHost()
	for _, p := range []string{"/", "/page/0", "/page/2", SPARoute} {
		resp, body := spaGet(t, app+p)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s, want 200 text/html", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if strings.Contains(string(body), "<a") || !strings.Contains(string(body), `<div id="app"></div>`) {
			t.Errorf("GET %s: not an empty shell without links:\n%s", p, body)
		}
	}
	_, body := spaGet(t, app+"/api/pages.json")
	var d spaDoc
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("/api/pages.json: %v", err)
	}
	if len(d.Links) != 4 || d.Links[3].Kind != "route" || d.Links[3].Name != "about" {
		t.Errorf("/api/pages.json links %+v, want 3 pages and the route", d.Links)
	}
	for _, p := range []string{app + "/static/app.js", app + "/static/app.css", app + "/api/page/2.json", app + "/api/route/about.json",
		assets + "/font/sans.ttf", assets + "/font/mono.ttf", assets + "/img/banner.png", assets + "/img/hero-2.png", assets + "/img/lazy-2-1.png"} {
		resp, body := spaGet(t, p)
		if resp.StatusCode != 200 || len(body) == 0 || resp.Header.Get("ETag") != "" || resp.Header.Get("Last-Modified") != "" ||
			resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Errorf("GET %s: %d, %d bytes, header %v: want 200, a body, Content-Length and no validators", p, resp.StatusCode, len(body), resp.Header)
		}
	}
	if _, css := spaGet(t, app+"/static/app.css"); !strings.Contains(string(css), assets+"/font/sans.ttf") {
		t.Errorf("app.css does not name the asset host's font %s", assets+"/font/sans.ttf")
	}
	for _, p := range []string{app + "/page/3", app + "/page/01", app + "/api/page/3.json", assets + "/img/hero-3.png", assets + "/img/lazy-0-2.png", app + "/x"} {
		if resp, _ := spaGet(t, p); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	arr, dropped := s.Arrivals()
	if len(arr) != 4+1+9+1+6 || dropped != 0 {
		t.Errorf("arrivals: %d (dropped %d), want 21", len(arr), dropped)
	}
	if arr[0].Key != s.AppHost() || arr[0].Path != "/" || arr[0].Status != 200 {
		t.Errorf("first arrival %+v, want %s / 200", arr[0], s.AppHost())
	}
	s.ResetArrivals()
	if arr, _ := s.Arrivals(); len(arr) != 0 {
		t.Errorf("after ResetArrivals: %d arrivals", len(arr))
	}
}

// TestSPAViolations checks the politeness count at the server: requests
// 100 ms apart violate a 1 s interval, requests 300 ms apart per key do
// not violate a 250 ms one.
func TestSPAViolations(t *testing.T) {
	s := NewSPA(t, SPAConfig{Pages: 1, Logger: Logger()})
	for range 3 {
		spaGet(t, "http://"+s.AppHost()+"/")
		time.Sleep(100 * time.Millisecond)
	}
	v, err := s.Violations(time.Second, SPADefaultJitter)
	if err != nil || len(v) != 2 || v[0].Key != s.AppHost() || v[0].Gap >= time.Second {
		t.Errorf("Violations(1s): %+v, %v; want 2 at %s", v, err, s.AppHost())
	}
	if v, err := s.Violations(50*time.Millisecond, SPADefaultJitter); err != nil || len(v) != 0 {
		t.Errorf("Violations(50ms): %+v, %v; want none", v, err)
	}
	if _, err := s.Violations(0, 0); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("Violations(0): %v, want an error naming the interval", err)
	}
}

// TestSPATruth renders the live fixture in Chromium and checks the ground
// truth: every page and the route, and the resources a replay needs (the
// JSON, the images below the fold, both fonts, the style sheet).
func TestSPATruth(t *testing.T) {
	browser, err := BrowserPath()
	if errors.Is(err, ErrNoBrowser) {
		t.Skip("!!! SPA ground truth NOT checked: Chromium is missing: run `make deps` (or apt-get install chromium) !!!")
	}
	const pages = 4
	s := NewSPA(t, SPAConfig{Pages: pages, Logger: Logger()})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	truth, err := s.RenderTruth(ctx, browser)
	if err != nil {
		t.Fatal(err)
	}
	app, assets := "http://"+s.AppHost(), "http://"+s.AssetHost()
	var want []string
	for n := range pages {
		want = append(want, app+"/page/"+strconv.Itoa(n))
	}
	want = append(want, app+SPARoute)
	slices.Sort(want)
	if !slices.Equal(truth.Pages, want) {
		t.Errorf("truth pages %q, want %q", truth.Pages, want)
	}
	need := []string{app + "/static/app.js", app + "/static/app.css", app + "/api/pages.json", app + "/api/route/about.json",
		assets + "/font/sans.ttf", assets + "/font/mono.ttf", assets + "/img/banner.png", assets + "/img/hero-index.png", assets + "/img/hero-about.png",
		assets + "/img/lazy-index-0.png", assets + "/img/lazy-about-0.png"}
	for n := range pages {
		id := strconv.Itoa(n)
		need = append(need, app+"/api/page/"+id+".json", assets+"/img/hero-"+id+".png",
			assets+"/img/lazy-"+id+"-0.png", assets+"/img/lazy-"+id+"-1.png")
	}
	for _, u := range need {
		if !slices.Contains(truth.Resources, u) {
			t.Errorf("truth resources lack %s", u)
		}
	}
	if len(truth.Resources) != len(need) {
		t.Errorf("truth has %d resources, want %d: %q", len(truth.Resources), len(need), truth.Resources)
	}
	if r := truth.Renders[app+"/page/1"]; !slices.Contains(r, assets+"/img/lazy-1-1.png") || slices.Contains(r, assets+"/img/lazy-2-1.png") {
		t.Errorf("render of /page/1: %q, want its own lazy images only", r)
	}
	if !slices.Contains(truth.RouteChange, app+"/api/route/about.json") || slices.Contains(truth.RouteChange, app+SPARoute) {
		t.Errorf("route change requested %q, want the route's JSON and no document", truth.RouteChange)
	}
	t.Logf("SPA truth: %d pages, %d resources (%s)", len(truth.Pages), len(truth.Resources), truth.Browser)
}
