package fetch

import (
	"net/http"
	"strings"
)

// RobotsDirectives are the indexing directives of a page that a crawler
// honours: from <meta name="robots"> (Links.NoFollow, Links.NoIndex) or from
// the X-Robots-Tag response header (XRobotsTag).
type RobotsDirectives struct {
	// NoFollow: "nofollow" or "none"; the page's links must not be followed.
	NoFollow bool
	// NoIndex: "noindex" or "none". Informational: zkcrawl archives pages
	// regardless (an archive is not a search index).
	NoIndex bool
}

// xRobotsValued are the X-Robots-Tag directives that carry a value after a
// colon ("unavailable_after: 25 Jun 2010 15:00:00 PST", "max-snippet: 20"),
// so that a token "name: ..." is a user-agent prefix only when name is not
// one of them.
var xRobotsValued = map[string]bool{
	"unavailable_after": true, "max-snippet": true, "max-image-preview": true,
	"max-video-preview": true, "indexifembedded": true,
}

// XRobotsTag reads the X-Robots-Tag response header fields of h (every
// field, any case of the field name, since net/http canonicalizes it) and
// returns the directives that apply to the crawler whose User-Agent is
// userAgent. It follows Google's definition of the header
// (developers.google.com/search/docs/crawling-indexing/robots-meta-tag,
// "Using the X-Robots-Tag HTTP header"), the de-facto specification:
//
//   - a field value is a comma-separated list of directives, matched ASCII
//     case-insensitively: "noindex", "nofollow", "none" (= both); other
//     directives (noarchive, nosnippet, max-snippet: N, ...) are ignored;
//   - a token "agent: directive" starts a user-agent section: it and the
//     tokens after it in the same field value apply only to a crawler whose
//     product token (ProductToken) equals agent, case-insensitively, until
//     the next "agent:" token; tokens before any agent apply to everyone.
//
// Several fields (or several sections) add up: any nofollow that applies
// wins. A missing header gives the zero RobotsDirectives. The function
// never fails; tokens it does not understand are skipped.
func XRobotsTag(h http.Header, userAgent string) RobotsDirectives {
	var d RobotsDirectives
	token := ProductToken(userAgent)
	for _, v := range h.Values("X-Robots-Tag") {
		applies := true // no agent named yet: for every crawler
		for _, tok := range strings.Split(v, ",") {
			tok = strings.TrimSpace(tok)
			if name, rest, ok := strings.Cut(tok, ":"); ok {
				name = strings.ToLower(strings.TrimSpace(name))
				if !xRobotsValued[name] {
					applies = name == token
					tok = strings.TrimSpace(rest)
				}
			}
			if applies {
				d.add(tok)
			}
		}
	}
	return d
}

// add applies one robots directive token (meta robots content or
// X-Robots-Tag, ASCII case-insensitive, surrounding spaces ignored):
// nofollow, noindex, none (= both); other tokens are ignored.
func (d *RobotsDirectives) add(tok string) {
	switch strings.ToLower(strings.TrimSpace(tok)) {
	case "nofollow":
		d.NoFollow = true
	case "noindex":
		d.NoIndex = true
	case "none":
		d.NoFollow, d.NoIndex = true, true
	}
}
