package worker

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// maxManifestChain bounds sitemap nesting: robots.txt or /sitemap.xml (M),
// an index's children (MM), and one more level for indexes that break the
// protocol's "an index lists sitemaps only" rule (MMM).
const maxManifestChain = 3

// isSeed reports whether it is a seed: depth 0, no hop path, no via.
func isSeed(it frontier.Item) bool { return it.Depth == 0 && it.Hops == "" && it.Via == "" }

// isManifest reports whether it was enqueued as a sitemap: its last hop
// other than redirects is M.
func isManifest(hops string) bool {
	return frontier.LastHop(strings.TrimRight(hops, string(rune(frontier.HopRedirect)))) == frontier.HopManifest
}

// seedSitemaps returns, for a seed and with the sitemaps config key on, the
// sitemaps of its host as items (hop M, the seed's depth, in scope): the
// Sitemap: lines of the host's robots.txt (cached by fetch.Robots, fetched
// for this if obey_robots is off) and /sitemap.xml.
func (w *Worker) seedSitemaps(ctx context.Context, it frontier.Item, live *liveConfig) []frontier.Item {
	if !live.cfg.Sitemaps || !isSeed(it) {
		return nil
	}
	base, err := url.Parse(it.URL)
	if err != nil {
		return nil
	}
	refs := append(w.robots.Sitemaps(ctx, it.URL), "/sitemap.xml")
	var out []frontier.Item
	seen := map[string]bool{}
	for _, ref := range refs {
		abs, err := base.Parse(strings.TrimSpace(ref))
		if err != nil {
			continue
		}
		u, err := frontier.Normalize(abs.String())
		if err != nil || seen[u] {
			continue
		}
		seen[u] = true
		if ok, _ := live.scope.Allows(u, it.Depth, it.URL); ok {
			out = append(out, it.Child(u, frontier.HopManifest, it.Depth))
		}
	}
	return out
}

// sitemapLinks parses a fetched sitemap (fetch.ParseSitemap: urlset,
// index, text, gzip, the protocol's 50,000 URL and 50 MiB limits) and
// returns its entries as items: an index's sitemaps with hop M at the same
// depth (up to maxManifestChain nested), a urlset's URLs with hop L at
// depth+1 carrying lastmod, priority and changefreq; each normalized (relative locs
// resolved against the sitemap) and judged by scope against the sitemap's
// URL, like links. A sitemap cut at max_body_bytes or broken halfway gives
// the entries before the cut.
func (w *Worker) sitemapLinks(it frontier.Item, res *fetch.Result, live *liveConfig) []frontier.Item {
	body, err := res.DecodedBody(fetch.MaxSitemapBytes)
	if err != nil && !errors.Is(err, fetch.ErrDecodedTooLarge) && len(body) == 0 {
		w.log.Debug("sitemap not decodable", "url", it.URL, "error", err)
		return nil
	}
	sm, err := fetch.ParseSitemap(strings.NewReader(string(body)))
	if err != nil || sm.Dropped > 0 {
		w.log.Info("sitemap read in part", "url", it.URL, "urls", len(sm.URLs), "sitemaps", len(sm.Sitemaps),
			"dropped_over_50000", sm.Dropped, "error", err)
	}
	base, perr := url.Parse(it.URL)
	if perr != nil {
		return nil
	}
	norm := func(loc string) (string, bool) {
		abs, err := base.Parse(loc)
		if err != nil {
			return "", false
		}
		u, err := frontier.Normalize(abs.String())
		return u, err == nil
	}
	var out []frontier.Item
	if strings.Count(it.Hops, string(rune(frontier.HopManifest))) < maxManifestChain {
		for _, loc := range sm.Sitemaps {
			if u, ok := norm(loc); ok {
				if ok, _ := live.scope.Allows(u, it.Depth, it.URL); ok {
					out = append(out, it.Child(u, frontier.HopManifest, it.Depth))
				}
			}
		}
	}
	for _, e := range sm.URLs {
		u, ok := norm(e.Loc)
		if !ok {
			continue
		}
		if ok, _ := live.scope.Allows(u, it.Depth+1, it.URL); ok {
			c := it.Child(u, frontier.HopLink, it.Depth+1)
			c.Lastmod, c.Priority, c.Changefreq = e.Lastmod, e.Priority, e.Changefreq
			out = append(out, c)
		}
	}
	return out
}
