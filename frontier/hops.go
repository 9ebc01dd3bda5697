package frontier

import (
	"fmt"
	"strings"
)

// Hop types: one letter per hop of an item's path from its seed, the
// letters of Heritrix's crawl.log "discovery path" (org.archive.modules.
// extractor.Hop).
const (
	// HopLink is a navigational link (<a href>, frames, a PDF's link
	// annotations): it spends one depth.
	HopLink = 'L'
	// HopEmbed is a page requisite (image, style sheet, script, ...): it
	// keeps the depth of the page that embeds it.
	HopEmbed = 'E'
	// HopRedirect is a redirect's Location: it keeps the redirect's depth.
	HopRedirect = 'R'
	// HopManifest is a sitemap (robots.txt Sitemap: line, /sitemap.xml or
	// a sitemap index entry): it keeps the depth of the seed.
	HopManifest = 'M'
	// HopSpeculative is a URL guessed from a string literal of a script
	// (extract_js_links): it spends one depth, as a link does.
	HopSpeculative = 'X'
)

// MaxHops is the longest hop path an item keeps: a longer one keeps its
// last MaxHops-1 letters after a "+" (e.g. "+LLLE"), so items stay small
// however deep the crawl goes (Depth still counts every link hop).
const MaxHops = 64

// validHops is every character a hop path may hold.
const validHops = "LERMPXI"

// AppendHop returns the hop path hops extended by hop (one of the Hop*
// letters), shortened to MaxHops as described there.
func AppendHop(hops string, hop byte) string {
	h := hops + string(hop)
	if len(h) > MaxHops {
		h = "+" + h[len(h)-(MaxHops-1):]
	}
	return h
}

// LastHop returns the last letter of a hop path, or 0 for a seed ("").
func LastHop(hops string) byte {
	if hops == "" {
		return 0
	}
	return hops[len(hops)-1]
}

// IsRequisite reports whether an item with this hop path is a page
// requisite: its last hop other than redirects is an embed ("E", "ER").
func IsRequisite(hops string) bool {
	h := strings.TrimRight(hops, string(rune(HopRedirect)))
	return LastHop(h) == HopEmbed
}

// Child returns the item for a URL found while processing it: via it.URL,
// at depth, with it's hop path extended by hop. url must be normalized.
func (it Item) Child(url string, hop byte, depth int) Item {
	return Item{URL: url, Depth: depth, Via: it.URL, Hops: AppendHop(it.Hops, hop)}
}

// validateHops checks a hop path: at most MaxHops characters, the Hop*
// letters (and P, X, I, which Heritrix also writes), optionally after one
// leading "+".
func validateHops(h string) error {
	if len(h) > MaxHops {
		return fmt.Errorf("%w: hops of %d characters, limit %d", ErrBadItem, len(h), MaxHops)
	}
	for i, c := range h {
		if (c == '+' && i == 0) || strings.ContainsRune(validHops, c) {
			continue
		}
		return fmt.Errorf("%w: hops %q: character %q is not a hop letter (%s)", ErrBadItem, h, c, validHops)
	}
	return nil
}
