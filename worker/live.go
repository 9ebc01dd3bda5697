package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// watchDrain calls stop once R/drain exists, until ctx ends.
func (w *Worker) watchDrain(ctx context.Context, stop func()) {
	drain := coord.Store(w.client, w.root, coord.DrainNode)
	for v := range drain.Watch(ctx) {
		if v.Version >= 0 {
			w.log.Info("drain requested: finishing in-flight items, claiming nothing new, then exiting; the drain stays until 'crawlctl drain --cancel'", "znode", drain.String())
			w.progress.stopping("drain")
			stop()
			return
		}
	}
}

// watchConfig starts the config watch (ZooKeeper recipes: configuration
// service, via coord.ConfigStore) and blocks until the first config is in
// force. Later versions are applied live by a goroutine that lives until
// cfgCtx ends. An invalid version is logged and recorded for the status node;
// the last good config stays in force.
func (w *Worker) watchConfig(ctx, cfgCtx context.Context) error {
	store := coord.Store(w.client, w.root, coord.ConfigNode)
	values := store.Watch(cfgCtx)
	first := true
	for w.live.Load() == nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case v, ok := <-values:
			if !ok {
				return fmt.Errorf("worker: config watch on %s ended", store)
			}
			w.applyConfig(v.Data, v.Version)
			if w.live.Load() == nil && first {
				w.log.Error("the crawl's config is invalid: waiting for a valid one", "znode", store.String(), "error", *w.cfgErr.Load())
				first = false
			}
		}
	}
	go func() {
		for v := range values {
			w.applyConfig(v.Data, v.Version)
		}
	}()
	return nil
}

// applyConfig parses one config version and, if valid, puts it in force:
// fetcher options, politeness limits and scope change at once, and the
// shard loops are woken to pick up concurrency and pause changes.
func (w *Worker) applyConfig(data []byte, version int32) {
	cfg, err := config.Parse(data)
	if err == nil {
		err = w.layout.CheckKey(cfg.PolitenessKey)
	}
	if err != nil {
		msg := fmt.Sprintf("version %d rejected: %v", version, err)
		w.cfgErr.Store(&msg)
		w.log.Error("invalid crawl config rejected; keeping the last good one", "version", version, "error", err)
		return
	}
	scope, err := frontier.NewScope(frontier.ScopeConfig{
		Mode: cfg.Scope, Include: cfg.Include, Exclude: cfg.Exclude, MaxDepth: cfg.MaxDepth,
	})
	var reqScope *frontier.Scope
	if err == nil {
		reqScope, err = frontier.NewScope(frontier.ScopeConfig{
			Mode: cfg.RequisitesScope, Include: cfg.Include, Exclude: cfg.Exclude, MaxDepth: cfg.MaxDepth,
		})
	}
	if err != nil { // config.Validate compiled the patterns already; belt and braces
		msg := fmt.Sprintf("version %d rejected: %v", version, err)
		w.cfgErr.Store(&msg)
		w.log.Error("invalid crawl scope rejected; keeping the last good config", "version", version, "error", err)
		return
	}
	proxies, perr := fetch.NewProxies(cfg.Proxy, cfg.ProxyRules)
	if perr != nil { // config.Validate checked them; never fall back to direct
		msg := fmt.Sprintf("version %d rejected: %v", version, perr)
		w.cfgErr.Store(&msg)
		w.log.Error("invalid proxy setting rejected; keeping the last good config", "version", version, "error", perr)
		return
	}
	empty := ""
	w.cfgErr.Store(&empty)
	nofile, ram := fdLimit(), totalRAM() // getrlimit and sysinfo: read once per version
	budget := cfg.MaxInFlight
	if budget <= 0 {
		budget = autoBudget(cfg, nofile, ram)
	}
	fopts := fetch.Options{
		UserAgent:            cfg.UserAgent,
		Timeout:              cfg.FetchTimeout(),
		MaxBodyBytes:         cfg.MaxBodyBytes,
		AllowPrivateNetworks: cfg.AllowPrivateNetworks && !w.opts.ForbidPrivateNetworks,
		Logger:               w.log,
		// The pool follows politeness: a host never has more than
		// per_host_max_in_flight requests (plus a robots.txt or sitemap
		// fetch), the worker never more than its budget; idle ones for
		// every host it crawls, within the descriptors the budget leaves.
		MaxConnsPerHost: cfg.PerHostMaxInFlight + 1,
		MaxIdleConns:    idlePool(budget, nofile, ram, cfg.PerHostRatePerS*fetch.IdleConnTimeout.Seconds() > 1),
		DisableHTTP2:    !cfg.HTTP2,
		RootCAs:         w.opts.rootCAs,
	}
	fopts.Proxies = proxies
	if fopts.Content, err = fetch.NewContentRules(cfg.AcceptMIME, cfg.RejectMIME, cfg.MaxBodyBytesRules); err != nil {
		w.log.Error("content rules rejected", "error", err) // config.Validate checked them
	}
	if f, ok := w.fetcher.(fetchConfigurer); ok {
		f.SetOptions(fopts)
	}
	if err := w.polite.SetLimits(cfg.PerHostRatePerS, cfg.PerHostBurst, cfg.PerHostMaxInFlight); err != nil {
		w.log.Error("politeness limits rejected", "error", err) // config.Validate checked the ranges
	}
	if err := w.polite.SetMaxRequests(budget); err != nil {
		w.log.Error("request budget rejected", "error", err)
	}
	if err := w.polite.SetDelayFactor(cfg.DelayFactor, time.Duration(cfg.MaxDelayMS)*time.Millisecond); err != nil {
		w.log.Error("adaptive delay rejected", "error", err)
	}
	w.applyCookies(cfg)
	if err := w.polite.SetMaxHold(time.Duration(cfg.MaxRetryAfterS) * time.Second); err != nil {
		w.log.Error("max_retry_after_s rejected", "error", err)
	}
	matcher := config.NewRenderMatcher(cfg)
	if !matcher.Renders() {
		w.renders.close() // no page renders under this version: the browser's memory is freed
	}
	prev := w.live.Swap(&liveConfig{cfg: cfg, version: version, scope: scope, reqScope: reqScope, render: matcher,
		claimCap: config.ClaimsPerRequest * budget})
	w.metrics.configVersion(version)
	if prev == nil || prev.version != version {
		w.log.Info("crawl config applied", "version", version,
			"rate_per_s", cfg.PerHostRatePerS, "max_in_flight", budget, "paused", cfg.Paused, "scope", cfg.Scope,
			"proxy", proxies.String(), "cookies", cfg.Cookies, "cookie_seeds", len(cfg.CookiesSeed))
		if cfg.NeedsContactUA() && (prev == nil || !prev.cfg.NeedsContactUA()) {
			w.log.Warn(config.UserAgentHint, "user_agent", cfg.UserAgent)
		}
	}
	w.wake.Fire()
}

// current returns the config in force; nil before the first valid one.
func (l *liveState) current() *liveConfig { return l.live.Load() }

// retryAt is when an item that failed its attempt-th try may be tried
// again, on ZooKeeper's clock (coord.Client.Now): every worker compares
// not_before with that one clock, so a worker whose own clock is off does
// not stall the items it retries.
func (w *Worker) retryAt(cfg config.Config, attempt int) time.Time {
	return w.clusterNow().Add(cfg.RetryDelay(attempt))
}

// clusterNow is ZooKeeper's clock as this worker's client estimates it, or
// the local clock when the worker has no client (the in-memory pipeline of
// process_test.go).
func (w *Worker) clusterNow() time.Time {
	if w.client == nil {
		return time.Now()
	}
	return w.client.Now()
}
