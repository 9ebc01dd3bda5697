package worker

import (
	"net/url"
	"strings"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// contentRuled reports whether an item with this hop path is subject to
// the content rules' accept_mime and reject_mime (fetch.Fetcher.
// FetchContent): every item but page requisites (a page needs them to
// replay, whatever their type) and sitemaps (isManifest). robots.txt is
// fetched on its own path and never judged.
func contentRuled(hops string) bool {
	return !frontier.IsRequisite(hops) && !isManifest(hops)
}

// jsLinkBase returns the URL a script's speculative links are resolved
// and judged by scope against: the page that embedded or linked it (its
// Via), since a script runs in its page and its relative paths are the
// page's (Heritrix's ExtractorJS resolves a script file's strings against
// its via too); the script's own URL for a seed. A script embedded by a
// page that is itself a requisite (its via may be outside scope) gives ""
// and no links are taken from it, so scope keeps its induction: every link
// is judged against a URL that scope admitted.
func jsLinkBase(it frontier.Item) string {
	if it.Via == "" {
		return it.URL
	}
	h := strings.TrimRight(it.Hops, string(rune(frontier.HopRedirect)))
	if h != "" {
		h = h[:len(h)-1]
	}
	if frontier.IsRequisite(h) {
		return ""
	}
	return it.Via
}

// jsLinks returns the URLs fetch.ExtractJSLinks finds in a 2xx script
// response, resolved against base (jsLinkBase; none when it is "" or the
// body does not decode), at most fetch.DefaultMaxJSLinks of them.
func (w *Worker) jsLinks(it frontier.Item, res *fetch.Result, base string) []string {
	if base == "" {
		return nil
	}
	b, err := url.Parse(base)
	if err != nil {
		return nil
	}
	body, err := res.DecodedBody(fetch.MaxJSScanBytes)
	if err != nil && len(body) == 0 {
		w.log.Debug("script not decodable; no links taken", "url", it.URL, "error", err)
		return nil
	}
	return fetch.ExtractJSLinks(b, body, 0)
}
