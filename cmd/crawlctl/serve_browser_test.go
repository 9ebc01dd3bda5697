package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserPath finds a Chromium or Chrome binary; "" when none is installed.
func browserPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInBrowser loads the dashboard in a real headless Chromium
// (Chrome DevTools protocol, chromedp): the script fills the workers table
// and the heat map, Chart.js draws the chart, and the Pause button and the
// config form change the crawl in ZooKeeper.
func TestDashboardInBrowser(t *testing.T) {
	exe := browserPath()
	if exe == "" {
		t.Skip("no Chromium or Chrome installed: install Debian's chromium (apt-get install chromium) to run the dashboard's browser test")
	}
	e := newDashboardEnv(t, "browser")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/"),
		chromedp.WaitVisible(`#workers tbody tr[data-worker="w1"]`),
		poll(`document.querySelectorAll('#heatmap .cell').length === 8`),
		poll(`typeof Chart !== 'undefined' && Chart.getChart(document.getElementById('chart')) !== undefined && Chart.getChart(document.getElementById('chart')).data.labels.length > 0`),
	)
	if err != nil {
		t.Fatalf("dashboard in Chromium: %v", err)
	}
	// The table is redrawn at every refresh: read it in one script, not
	// through a node id that a redraw may have replaced meanwhile.
	firstWorker, err1 := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('#workers tbody tr td') || {}).textContent || ''`))
	cells, err2 := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#heatmap .cell').length`))
	state, err3 := chromedp.Run(ctx, chromedp.Text(`#state`))
	if err1 != nil || err2 != nil || err3 != nil || firstWorker != "w1" || cells != 8 || state != "RUNNING" {
		t.Fatalf("page: first worker %q, %d heat map cells, state %q (%v %v %v)", firstWorker, cells, state, err1, err2, err3)
	}

	err = chromedp.Do(ctx,
		chromedp.Click(`button[data-action="pause"]`),
		poll(`document.getElementById('state').textContent === 'PAUSED'`),
		chromedp.SetValue(`#assignments`, "per_host_rate_per_s=7"),
		chromedp.Click(`#configform button[type="submit"]`),
		poll(`document.getElementById('result').textContent.includes('per_host_rate_per_s')`),
	)
	if err != nil {
		t.Fatalf("controls in Chromium: %v", err)
	}
	result, err := chromedp.Run(ctx, chromedp.Text(`#result`))
	cfg := e.storedConfig(t)
	if err != nil || !cfg.Paused || cfg.PerHostRatePerS != 7 || !strings.Contains(result, "per_host_rate_per_s") {
		t.Fatalf("after Pause and config set in the page: paused %v, rate %v, result %q (%v)", cfg.Paused, cfg.PerHostRatePerS, result, err)
	}

	// An invalid value is refused with the CLI's message, shown on the page.
	err = chromedp.Do(ctx,
		chromedp.SetValue(`#assignments`, "worker_concurrency=0"),
		chromedp.Click(`#configform button[type="submit"]`),
		poll(`document.getElementById('result').className.includes('fail')`),
	)
	if err == nil {
		result, err = chromedp.Run(ctx, chromedp.Text(`#result`))
	}
	if err != nil || !strings.Contains(result, "worker_concurrency") {
		t.Fatalf("invalid config in the page: %v, result %q", err, result)
	}
}
