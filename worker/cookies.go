package worker

import (
	"context"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/fetch"
)

// applyCookies puts a config version's cookie settings in force: with
// cookies off every jar is dropped; with them on, changed cookies_seed
// drops every jar so each key starts again from the new seeds
// (fetch.CookieJars.SetSeeds). The jars live in this process only: the
// owner of a key's shard group is the only process fetching the key, and a
// new owner starts the key's jar afresh (docs/design.md, "Cookies").
func (w *Worker) applyCookies(cfg config.Config) {
	if !cfg.Cookies {
		w.cookies.Reset()
		return
	}
	if err := w.cookies.SetSeeds(cfg.CookiesSeed); err != nil {
		// config.Validate parsed the seeds already; the error names no value.
		w.log.Error("cookies_seed rejected; keeping the seeds in force", "error", err)
	}
}

// cookieCtx returns the context the attempt's page fetch runs in: with
// cookies on in the attempt's config, one carrying its politeness key's
// jar (fetch.WithCookieJar); else the attempt's own.
func (a *attempt) cookieCtx() context.Context {
	if !a.live.cfg.Cookies {
		return a.ctx
	}
	return fetch.WithCookieJar(a.ctx, a.w.cookies.Jar(a.key))
}
