package worker

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/zkcrawl/zkcrawl/frontier"
)

// normCacheSize is how many link URLs a worker remembers normalized: the
// links that repeat from page to page (a site's navigation) are
// normalized once, not once per page.
const normCacheSize = 16384

// normCacheMaxLen is the longest link cached (bytes), raw or normalized:
// the cache holds at most normCacheSize x 2 x normCacheMaxLen bytes of URLs
// (~16 MB), whatever a hostile site links to.
const normCacheMaxLen = 512

// normCache memoizes frontier.Normalize for link URLs (a pure function of
// its input) that frontier.IsPlainNormal cannot pass as they are. Safe for
// concurrent use.
type normCache struct{ c *lru.Cache[string, string] } // link -> normalized, "" if rejected

func newNormCache() *normCache {
	c, _ := lru.New[string, string](normCacheSize) // size > 0: cannot fail
	return &normCache{c: c}
}

// normalize returns frontier.Normalize(raw), or ok false if it rejects raw.
func (n *normCache) normalize(raw string) (u string, ok bool) {
	if frontier.IsPlainNormal(raw) {
		return raw, true // cheaper than the cache's lock and list
	}
	if u, hit := n.c.Get(raw); hit {
		return u, u != ""
	}
	u, err := frontier.Normalize(raw)
	if err != nil {
		u = ""
	}
	if len(raw) <= normCacheMaxLen && len(u) <= normCacheMaxLen {
		n.c.Add(raw, u)
	}
	return u, u != ""
}
