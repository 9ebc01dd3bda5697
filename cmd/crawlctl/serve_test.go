package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// dashboardEnv is a crawl with one live worker and crawlctl serve's handler
// on a real loopback HTTP server.
type dashboardEnv struct {
	c   *crawl
	d   *dashboard
	srv *httptest.Server
}

func newDashboardEnv(t *testing.T, name string) *dashboardEnv {
	t.Helper()
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 2, Hosts: 4, PagesPerHost: 100000, LinksPerPage: 3, Logger: testenv.Logger()})
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.PerHostRatePerS = 20
	c := newCrawl(t, name, cfg, 8, web.Seeds())
	ctx, cancel := context.WithCancel(context.Background())
	done := c.startWorker(ctx, "w1", false)
	t.Cleanup(func() { cancel(); <-done })

	fs, g := (&app{stderr: io.Discard}).toolFlags()
	if err := cli.Parse(fs, []string{"--zk", c.zk, "--crawl", c.name, "--timeout", "20s"}, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, env: func(string) (string, bool) { return "", false }}
	cl := &ctl{app: a, g: g, root: c.root, log: testenv.Logger()}
	t.Cleanup(cl.close)
	d, err := newDashboard(ctx, cl, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	go d.refreshLoop(ctx)
	srv := httptest.NewServer(d.handler())
	t.Cleanup(srv.Close)
	return &dashboardEnv{c: c, d: d, srv: srv}
}

func (e *dashboardEnv) get(t *testing.T, path string) (int, string) {
	t.Helper()
	r, err := http.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

func (e *dashboardEnv) post(t *testing.T, token string, form url.Values) (int, actionResult) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/action", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set("X-Zkcrawl-Token", token)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var res actionResult
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, res
}

func (e *dashboardEnv) storedConfig(t *testing.T) config.Config {
	t.Helper()
	data, _ := e.c.config()
	cfg, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestDashboardHTTP: the page, its embedded assets, the status JSON, and the
// actions (token required, the CLI's validation applied).
func TestDashboardHTTP(t *testing.T) {
	e := newDashboardEnv(t, "dash")

	code, page := e.get(t, "/")
	for _, want := range []string{e.c.name, `name="zkcrawl-token" content="` + e.d.token, "/static/vendor/chart.min.js", "/static/app.js", `id="heatmap"`} {
		if code != 200 || !strings.Contains(page, want) {
			t.Fatalf("GET / = %d, lacks %q", code, want)
		}
	}
	if code, js := e.get(t, "/static/vendor/chart.min.js"); code != 200 || !strings.Contains(js, "Chart.js v3.9.1") {
		t.Errorf("vendored Chart.js: %d, %d bytes", code, len(js))
	}
	if code, _ := e.get(t, "/static/app.js"); code != 200 {
		t.Errorf("app.js: %d", code)
	}

	var doc dashboardDoc
	eventually(t, 15*time.Second, "status with the worker, pages and a rate", func() (bool, string) {
		_, body := e.get(t, "/api/status")
		doc = dashboardDoc{}
		if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.Status == nil {
			return false, body
		}
		return len(doc.Status.Workers) == 1 && doc.Status.Workers[0].Pages > 0 && doc.Status.PagesPerS != nil && len(doc.History) > 1, body
	})
	if doc.Status.Queue.Shards != 8 || !strings.Contains(doc.ConfigDoc, "per_host_rate_per_s") || doc.Status.Workers[0].ShardsOwned != 8 {
		t.Errorf("status doc: shards %d, owned %d, config %q", doc.Status.Queue.Shards, doc.Status.Workers[0].ShardsOwned, doc.ConfigDoc)
	}

	if code, res := e.post(t, "", url.Values{"action": {"pause"}}); code != http.StatusForbidden || !strings.Contains(res.Error, "X-Zkcrawl-Token") {
		t.Fatalf("action without token: %d %+v", code, res)
	}
	if e.storedConfig(t).Paused {
		t.Fatal("paused by a request without the token")
	}
	if code, res := e.post(t, e.d.token, url.Values{"action": {"pause"}}); code != 200 || !res.OK || !strings.Contains(res.Output, "paused") {
		t.Fatalf("pause: %d %+v", code, res)
	}
	if !e.storedConfig(t).Paused {
		t.Fatal("pause action did not set paused=true")
	}
	code, res := e.post(t, e.d.token, url.Values{"action": {"config-set"}, "assignments": {"per_host_rate_per_s=-1"}})
	if code != http.StatusUnprocessableEntity || res.OK || !strings.Contains(res.Error, "per_host_rate_per_s") {
		t.Fatalf("invalid config-set: %d %+v", code, res)
	}
	code, res = e.post(t, e.d.token, url.Values{"action": {"config-set"}, "assignments": {"per_host_rate_per_s=3\nmax_depth=5"}})
	if code != 200 || !res.OK || !strings.Contains(res.Output, "config version") {
		t.Fatalf("config-set: %d %+v", code, res)
	}
	if cfg := e.storedConfig(t); cfg.PerHostRatePerS != 3 || cfg.MaxDepth != 5 || !cfg.Paused {
		t.Errorf("config after config-set: %+v", cfg)
	}
	if code, res := e.post(t, e.d.token, url.Values{"action": {"rm -rf"}}); code != http.StatusBadRequest || !strings.Contains(res.Error, "unknown action") {
		t.Errorf("unknown action: %d %+v", code, res)
	}
	if code, res := e.post(t, e.d.token, url.Values{"action": {"resume"}}); code != 200 || !res.OK {
		t.Fatalf("resume: %d %+v", code, res)
	}
}
