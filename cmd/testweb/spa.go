package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// spaOptions are the flags of `testweb --spa`.
type spaOptions struct {
	pages     int    // /page/<n> pages
	truthFile string // "" or where the JSON ground truth goes
	arrivals  string // "" or where every request's arrival is logged
}

// runSPA serves the single-page-app fixture (testenv.StartSPA) until ctx
// ends: it renders the ground truth in Chromium and writes it to
// o.truthFile as JSON when asked (an error when Chromium is missing), then
// logs every later request to o.arrivals, prints the seed and waits.
func runSPA(ctx context.Context, o spaOptions, log *slog.Logger, stdout io.Writer) error {
	spa, err := testenv.StartSPA(ctx, testenv.SPAConfig{Pages: o.pages, Logger: log})
	if err != nil {
		return err
	}
	defer spa.Close()
	if o.truthFile != "" {
		browser, err := testenv.BrowserPath()
		if err != nil {
			return fmt.Errorf("--truth-file %q needs a browser: %w", o.truthFile, err)
		}
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		truth, err := spa.RenderTruth(rctx, browser)
		cancel()
		if err != nil {
			return err
		}
		if err := writeAtomic(o.truthFile, "--truth-file", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(truth)
		}); err != nil {
			return err
		}
		spa.ResetArrivals()
		log.Info("SPA ground truth rendered and written", "file", o.truthFile, "pages", len(truth.Pages),
			"resources", len(truth.Resources), "took", time.Since(start).Round(time.Millisecond), "browser", truth.Browser)
	}
	stopArrivals, err := logArrivals(o.arrivals, spa.LogArrivals)
	if err != nil {
		return err
	}
	defer stopArrivals()
	if _, err := fmt.Fprintln(stdout, spa.Seed()); err != nil {
		return fmt.Errorf("write seeds: %w", err)
	}
	log.Info("serving the SPA fixture until SIGINT or SIGTERM", "seed", spa.Seed(), "assets", spa.AssetHost(), "pages", spa.Pages())
	<-ctx.Done()
	return spa.Close()
}
