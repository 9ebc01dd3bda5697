package worker

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/font/gofont/gomono"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage/wacz"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// replaySheets are the replay fixture's style sheets by path: a five-deep
// @import chain whose last sheet gives h1.brand a distinctive color,
// background colour and image, and a web font (url()s to the font and the
// image, relative to the sheet).
var replaySheets = map[string]string{
	"/css/a.css": "@import url(b.css);\nbody { margin: 0; padding: 8px; color: rgb(20, 20, 20); font-family: sans-serif }\n",
	"/css/b.css": "@import \"c.css\";\n",
	"/css/c.css": "@import url('d.css');\n",
	"/css/d.css": "@import 'e.css';\n",
	"/css/e.css": "@font-face { font-family: ZkReplayFace; src: url(\"../font/face.ttf\") format(\"truetype\") }\n" +
		"h1.brand { color: rgb(201, 17, 99); font-family: ZkReplayFace, monospace; font-size: 40px; " +
		"background: rgb(10, 200, 30) url(../img/e.png) repeat-x; padding: 20px }\n",
}

// replayPages are the fixture's pages; each links the others and loads
// /css/a.css.
var replayPages = []string{"/index.html", "/two.html", "/three.html"}

// replayBrandStyle is the computed style of h1.brand that e.css sets.
var replayBrandStyle = map[string]string{
	"color":           "rgb(201, 17, 99)",
	"fontFamily":      "ZkReplayFace, monospace",
	"backgroundColor": "rgb(10, 200, 30)",
}

// newReplaySite serves the replay fixture on a loopback port: the pages,
// the style sheets, a TrueType font (Go Mono) and a PNG image; over plain
// HTTP/1.1, or with h2 over TLS speaking HTTP/2 only.
func newReplaySite(t *testing.T, h2 bool) *httptest.Server {
	t.Helper()
	var img bytes.Buffer
	m := image.NewNRGBA(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 16 {
			m.Set(x, y, color.NRGBA{R: uint8(x * 16), G: 40, B: uint8(y * 16), A: 255})
		}
	}
	if err := png.Encode(&img, m); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case replaySheets[p] != "":
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			fmt.Fprint(w, replaySheets[p])
		case p == "/font/face.ttf":
			w.Header().Set("Content-Type", "font/ttf")
			w.Write(gomono.TTF)
		case p == "/img/e.png" || p == "/img/icon.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(img.Bytes())
		default:
			for i, page := range replayPages {
				if p != page {
					continue
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprintf(w, `<!DOCTYPE html><html><head><title>Replay fixture %d</title>
<link rel="stylesheet" href="/css/a.css"><link rel="icon" href="/img/icon.png"></head><body>
<h1 class="brand">Page %d</h1><p>Styled by a chain of five style sheets.</p>
<ul><li><a href="/index.html">index</a><li><a href="/two.html">two</a><li><a href="/three.html">three</a></ul>
</body></html>`, i+1, i+1)
				return
			}
			http.NotFound(w, r)
		}
	}))
	if h2 {
		srv.EnableHTTP2 = true
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP2(true)
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// A crawl of a site whose style sheets chain five deep, packaged as a
// WACZ, replays in ReplayWeb.page in headless Chromium with the fixture
// server stopped: each page's h1.brand has the live page's computed style
// (color, font family, background colour and image), its web font loads,
// every request of the replayed page is answered from the archive (none
// with an error status or failure), and a screenshot of the replay differs
// from the live page's in at most 1% of pixels.
func TestCrawlReplaysInReplayWebPage(t *testing.T) { replayCheck(t, false) }

// The same fixture served over HTTP/2 only (TLS, ALPN h2) and crawled with
// http2 on replays the same way from its HTTP/1.1-form records (WARC-Protocol
// h2).
func TestCrawlReplaysHTTP2InReplayWebPage(t *testing.T) { replayCheck(t, true) }

// replayCheck crawls the replay fixture (over HTTP/2 when h2), packages it
// as a WACZ and checks its replay in ReplayWeb.page against the live site.
func replayCheck(t *testing.T, h2 bool) {
	b := newReplayBrowser(t) // skips when Chromium or ReplayWeb.page is missing
	start := time.Now()
	zk := testenv.ZooKeeper(t)
	site := newReplaySite(t, h2)
	cfg := testConfig()
	cfg.MaxDepth = -1
	cfg.Sitemaps = false
	c := newCrawl(t, zk.Addr(), "replay", cfg, frontier.Layout{Shards: 4, Spread: 1}, []string{site.URL + "/index.html"})
	var trust func(*Options)
	if h2 {
		trust = trusting(site)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", trust); err != nil {
		t.Fatal(err)
	}
	if h2 {
		for _, e := range c.logs() {
			if e.Status == 200 && e.Protocol != fetch.ProtoHTTP2 {
				t.Fatalf("%s fetched over %q, want h2", e.URL, e.Protocol)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "crawl.wacz")
	if _, err := wacz.Write(context.Background(), wacz.Options{
		Out: out, Dirs: []string{filepath.Join(c.out, "w1")}, Title: "replay fixture", Software: "zkcrawl test",
	}); err != nil {
		t.Fatal(err)
	}
	crawled := time.Since(start)

	live := map[string]pageView{}
	for _, p := range replayPages {
		v := b.live(t, site.URL+p, "h1.brand", "ZkReplayFace")
		for k, want := range replayBrandStyle {
			if v.Style[k] != want || v.Fonts["ZkReplayFace"] != "loaded" || !v.fetched("/img/e.png") {
				t.Fatalf("live %s: h1.brand %s is %q, the fixture sets %q; fonts %v, resources %v", p, k, v.Style[k], want, v.Fonts, v.Resources)
			}
		}
		live[p] = v
	}
	site.Close() // nothing can come from the live site now

	rs := newReplayServer(t, b.dir, out)
	for _, p := range replayPages {
		u := site.URL + p
		v := b.replay(t, rs.URL, u, "h1.brand", "ZkReplayFace")
		for k, want := range live[p].Style {
			if got := unreplayed(v.Style[k]); got != want {
				t.Errorf("replay of %s: h1.brand %s is %q, live %q", p, k, got, want)
			}
		}
		if !v.fetched("/img/e.png") {
			t.Errorf("replay of %s: the background image /img/e.png did not load", p)
		}
		if v.Fonts["ZkReplayFace"] != "loaded" {
			t.Errorf("replay of %s: the web font ZkReplayFace did not load", p)
		}
		for _, m := range v.missingResources(live[p]) {
			t.Errorf("replay of %s: %s", p, m)
		}
		for _, m := range v.Misses {
			t.Errorf("replay of %s: archive miss: %s", p, m)
		}
		diff := pixelDiff(t, live[p].PNG, v.PNG)
		t.Logf("replay of %s: %d requests answered from the archive, %d misses, %.3f%% of pixels differ from the live page", p, v.Served, len(v.Misses), 100*diff)
		if os.Getenv("ZKCRAWL_REPLAY_SHOTS") != "" || diff > 0.01 {
			b.keep(t, "live"+strings.ReplaceAll(p, "/", "-")+".png", live[p].PNG)
			b.keep(t, "replay"+strings.ReplaceAll(p, "/", "-")+".png", v.PNG)
		}
		if diff > 0.01 {
			t.Errorf("replay of %s: %.2f%% of pixels differ from the live page, want at most 1%%", p, 100*diff)
		}
	}
	t.Logf("%d pages replayed; crawl and package %v, all %v", len(replayPages), crawled.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// pixelDiff is the share (0..1) of pixels of a and b (PNG images of the
// same size) whose colour differs by more than 16 in some channel; a
// difference in size counts as 1.
func pixelDiff(t *testing.T, a, b []byte) float64 {
	t.Helper()
	ia, err1 := png.Decode(bytes.NewReader(a))
	ib, err2 := png.Decode(bytes.NewReader(b))
	if err1 != nil || err2 != nil {
		t.Fatalf("screenshots: %v %v", err1, err2)
	}
	if ia.Bounds() != ib.Bounds() {
		t.Errorf("screenshots differ in size: live %v, replay %v", ia.Bounds(), ib.Bounds())
		return 1
	}
	r := ia.Bounds()
	differ := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			if far(r1, r2) || far(g1, g2) || far(b1, b2) {
				differ++
			}
		}
	}
	return float64(differ) / float64(r.Dx()*r.Dy())
}

// far reports whether two 16-bit colour channels differ by more than 16 of
// 255.
func far(a, b uint32) bool {
	if a > b {
		a, b = b, a
	}
	return b-a > 16*257
}

// keep writes a screenshot of a failed comparison to
// $ZKCRAWL_REPLAY_SHOTS (when set) for a person to look at.
func (b *replayBrowser) keep(t *testing.T, name string, data []byte) {
	dir := os.Getenv("ZKCRAWL_REPLAY_SHOTS")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Log(err)
	}
}
