package worker

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReplayCheckWACZ replays the pages of a WACZ made elsewhere
// (scripts/replay-check.sh) in ReplayWeb.page in headless Chromium and
// compares each with the live page: the computed style of the first element
// matching $ZKCRAWL_REPLAY_SELECTOR (default "body"), no archive miss, and
// at most 1% of the viewport's pixels different. It runs only when
// $ZKCRAWL_REPLAY_WACZ names the package; $ZKCRAWL_REPLAY_URLS names a file
// of the pages' URLs, one a line; $ZKCRAWL_REPLAY_STOP_LIVE, when set, is a
// shell command run after the live pages are seen and before the replay
// (it stops the live site, so nothing can come from it).
func TestReplayCheckWACZ(t *testing.T) {
	waczPath, urlsPath := os.Getenv("ZKCRAWL_REPLAY_WACZ"), os.Getenv("ZKCRAWL_REPLAY_URLS")
	if waczPath == "" {
		t.Skip("ZKCRAWL_REPLAY_WACZ is unset: this check of a real crawl runs from scripts/replay-check.sh")
	}
	sel := os.Getenv("ZKCRAWL_REPLAY_SELECTOR")
	if sel == "" {
		sel = "body"
	}
	f, err := os.Open(urlsPath)
	if err != nil {
		t.Fatalf("ZKCRAWL_REPLAY_URLS: %v", err)
	}
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if u := strings.TrimSpace(sc.Text()); u != "" {
			urls = append(urls, u)
		}
	}
	f.Close()
	if err := sc.Err(); err != nil || len(urls) == 0 {
		t.Fatalf("ZKCRAWL_REPLAY_URLS %s: %d URLs (%v), want one a line", urlsPath, len(urls), err)
	}
	b := newReplayBrowser(t)
	start := time.Now()
	live := map[string]pageView{}
	for _, u := range urls {
		live[u] = b.live(t, u, sel, "")
	}
	if stop := os.Getenv("ZKCRAWL_REPLAY_STOP_LIVE"); stop != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "sh", "-c", stop).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("ZKCRAWL_REPLAY_STOP_LIVE %q: %v: %s", stop, err, out)
		}
	}
	rs := newReplayServer(t, b.dir, waczPath)
	misses, worst := 0, 0.0
	for _, u := range urls {
		v := b.replay(t, rs.URL, u, sel, "")
		for k, want := range live[u].Style {
			if got := unreplayed(v.Style[k]); got != want {
				t.Errorf("replay of %s: %s %s is %q, live %q", u, sel, k, got, want)
			}
		}
		for fam, st := range live[u].Fonts {
			if st == "loaded" && v.Fonts[fam] != "loaded" {
				t.Errorf("replay of %s: web font %s is %q, live loaded", u, fam, v.Fonts[fam])
			}
		}
		for _, m := range v.missingResources(live[u]) {
			t.Errorf("replay of %s: %s", u, m)
		}
		for _, m := range v.Misses {
			t.Errorf("replay of %s: archive miss: %s", u, m)
		}
		misses += len(v.Misses)
		diff := pixelDiff(t, live[u].PNG, v.PNG)
		worst = max(worst, diff)
		t.Logf("replay of %s: %d requests answered from the archive, %d misses, %.3f%% of pixels differ from the live page", u, v.Served, len(v.Misses), 100*diff)
		if os.Getenv("ZKCRAWL_REPLAY_SHOTS") != "" || diff > 0.01 {
			name := strings.NewReplacer("/", "-", ":", "-").Replace(strings.TrimPrefix(u, "http://"))
			b.keep(t, "live-"+name+".png", live[u].PNG)
			b.keep(t, "replay-"+name+".png", v.PNG)
		}
		if diff > 0.01 {
			t.Errorf("replay of %s: %.2f%% of pixels differ from the live page, want at most 1%%", u, 100*diff)
		}
	}
	t.Logf("REPLAY-CHECK: %d pages, %d misses, worst pixel difference %.3f%%, %v", len(urls), misses, 100*worst, time.Since(start).Round(time.Millisecond))
}
