package fetch

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Caps on what one robots.txt may make a worker keep and check. A file over a
// cap keeps its first lines up to the cap (the later ones are ignored, with a
// warning), like the bytes past MaxRobotsBytes.
const (
	// MaxRobotsRules caps the Allow and Disallow rules kept from one
	// robots.txt, all groups together. Every rule of the chosen group may
	// have to be tried against a path, and a rule with '*' costs up to one
	// scan of the path, so this bounds Allowed to about MaxRobotsRules path
	// scans: under 1 ms for a 2,000-character path on a 500 KiB file of
	// wildcard rules (BenchmarkRobotsHostile). Large real files (a few
	// thousand rules) stay well below it.
	MaxRobotsRules = 4096
	// MaxRobotsAgents caps the User-agent lines kept from one robots.txt.
	MaxRobotsAgents = 1024
)

// robotsRule is one Allow or Disallow line, compiled for matching.
type robotsRule struct {
	// pattern is the path pattern with non-ASCII octets percent-encoded and
	// percent-escapes upper-cased (RFC 9309 section 2.2.2), without its
	// end anchor '$'.
	pattern  string
	anchored bool  // the pattern ended with '$'
	allow    bool  // Allow (true) or Disallow
	length   int32 // octets of the rule as written, '$' included: its specificity
}

// robotsGroup is the rules and Crawl-delay of one group of lines.
type robotsGroup struct {
	rules      []robotsRule // longest first, Allow before Disallow on a tie
	crawlDelay time.Duration
}

// robotsRules is one parsed robots.txt: its groups and, per product token
// (lower case; "*" for the default group), the groups that name it.
//
// Parsing and matching are written here rather than taken from a library:
// the one we used (github.com/temoto/robotstxt) compiles each wildcard rule to
// a regular expression, which kept 61 MiB of heap for a 500 KiB file and took
// seconds per Allowed on long paths; the other Go parsers (google/robotstxt
// ports) re-parse the file for every question and match in O(path x
// pattern). Here a rule is a string, and a match is a greedy left-to-right
// search of its literal segments, linear in the path and the pattern.
type robotsRules struct {
	groups  []robotsGroup
	byAgent map[string][]int // product token -> indexes into groups
	size    int              // estimated retained bytes, for the cache's byte cap
	dropped int              // rule and agent lines ignored over the caps
	// Sitemaps are the Sitemap: URLs, in file order (they belong to no
	// group; sitemap protocol 0.9, "Specifying the Sitemap location in your
	// robots.txt file"), at most robotsMaxSitemaps.
	Sitemaps []string
}

// robotsMaxSitemaps caps the Sitemap: lines kept from one robots.txt.
const robotsMaxSitemaps = 1000

// Rough per-object overheads for robotsRules.size.
const (
	robotsRuleBytes  = 48  // robotsRule plus slice growth slack
	robotsAgentBytes = 64  // map entry and index slice
	robotsBaseBytes  = 256 // the entry, the struct, the map header
)

// parseRobots parses a robots.txt body per RFC 9309 section 2.2: groups start
// at User-agent lines (consecutive ones share a group; one after a rule starts
// a new group), Allow and Disallow lines outside a group or with an empty
// value are ignored, and so are lines that do not parse; Crawl-delay (not in
// the RFC, seconds, fractions allowed) belongs to its group. Lines end with
// LF, CR or CRLF; '#' starts a comment. A leading UTF-8 byte-order mark,
// whole or cut short (EF, EF BB, EF BB BF), is skipped, as Google's
// reference parser (github.com/google/robotstxt) does. At most
// MaxRobotsRules rules and MaxRobotsAgents User-agent lines are kept.
func parseRobots(body []byte) *robotsRules {
	p := robotsParser{rr: &robotsRules{byAgent: make(map[string][]int), size: robotsBaseBytes}, cur: -1}
	for _, line := range splitLines(skipBOM(body)) {
		content, _, _ := bytes.Cut(line, []byte("#"))
		key, val, ok := bytes.Cut(content, []byte(":"))
		if !ok {
			continue
		}
		k := strings.ToLower(string(bytes.TrimSpace(key)))
		v := string(bytes.TrimSpace(val))
		switch k {
		case "user-agent", "useragent", "user agent":
			p.userAgent(v)
		case "allow", "disallow":
			p.rule(v, k == "allow")
		case "sitemap":
			p.sitemap(v)
		case "crawl-delay", "crawldelay":
			p.crawlDelay(v)
		}
	}
	for i := range p.rr.groups {
		slices.SortStableFunc(p.rr.groups[i].rules, moreSpecific)
	}
	return p.rr
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte-order mark.
const utf8BOM = "\xef\xbb\xbf"

// skipBOM returns body without the longest prefix of utf8BOM it starts
// with: a whole mark, or its first one or two bytes.
func skipBOM(body []byte) []byte {
	i := 0
	for i < len(utf8BOM) && i < len(body) && body[i] == utf8BOM[i] {
		i++
	}
	return body[i:]
}

// robotsParser is the state of parseRobots between lines.
type robotsParser struct {
	rr      *robotsRules
	cur     int  // current group index, -1 before the first User-agent
	inRules bool // the current group has seen a rule line
	rules   int  // rules kept, up to MaxRobotsRules
	agents  int  // User-agent lines kept, up to MaxRobotsAgents
}

// userAgent handles a User-agent line: it starts a group unless it follows
// another User-agent line, and adds the group to its product token's.
func (p *robotsParser) userAgent(v string) {
	if p.agents >= MaxRobotsAgents {
		p.rr.dropped++
		return
	}
	if p.cur < 0 || p.inRules {
		p.rr.groups = append(p.rr.groups, robotsGroup{})
		p.cur = len(p.rr.groups) - 1
		p.inRules = false
	}
	tok := agentToken(v)
	if tok == "" {
		return
	}
	p.agents++
	if idx := p.rr.byAgent[tok]; len(idx) == 0 || idx[len(idx)-1] != p.cur {
		p.rr.byAgent[tok] = append(idx, p.cur)
		p.rr.size += len(tok) + robotsAgentBytes
	}
}

// rule handles an Allow (allow true) or Disallow line: ignored outside a
// group, with an empty value, or past MaxRobotsRules.
func (p *robotsParser) rule(v string, allow bool) {
	if p.cur < 0 {
		return
	}
	p.inRules = true
	if v == "" {
		return // "Disallow:" alone allows everything: no rule
	}
	if p.rules >= MaxRobotsRules {
		p.rr.dropped++
		return
	}
	p.rules++
	r := compileRule(v, allow)
	p.rr.groups[p.cur].rules = append(p.rr.groups[p.cur].rules, r)
	p.rr.size += len(r.pattern) + robotsRuleBytes
}

// sitemap handles a Sitemap line, which belongs to no group.
func (p *robotsParser) sitemap(v string) {
	if len(p.rr.Sitemaps) < robotsMaxSitemaps && v != "" {
		p.rr.Sitemaps = append(p.rr.Sitemaps, v)
		p.rr.size += len(v) + 16
	}
}

// crawlDelay handles a Crawl-delay line (seconds, fractions allowed, 0 to
// 1e6): it sets the current group's delay; an unparsable value is ignored.
func (p *robotsParser) crawlDelay(v string) {
	if p.cur < 0 {
		return
	}
	p.inRules = true
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs < 0 || secs > 1e6 {
		return
	}
	p.rr.groups[p.cur].crawlDelay = time.Duration(secs * float64(time.Second))
}

// moreSpecific orders rules for robotsGroup.rules: longer first, Allow
// before Disallow on a tie (RFC 9309 section 2.2.2).
func moreSpecific(a, b robotsRule) int {
	if a.length != b.length {
		return int(b.length - a.length)
	}
	switch {
	case a.allow == b.allow:
		return 0
	case a.allow:
		return -1
	default:
		return 1
	}
}

// agentToken returns the product token a User-agent line names, lower case:
// its leading letters, '_' and '-' (RFC 9309 section 2.2.1), so
// "Googlebot/2.1" names "googlebot"; "*" for the default group; "" if none.
func agentToken(v string) string {
	if strings.HasPrefix(v, "*") {
		return "*"
	}
	end := 0
	for end < len(v) {
		c := v[end]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			break
		}
		end++
	}
	return strings.ToLower(v[:end])
}

// compileRule turns an Allow or Disallow value into a robotsRule. A value
// that starts with neither '/' nor '*' gets a leading '/' (a common mistake
// that other crawlers forgive). A final '$' anchors the end; a '$' elsewhere
// is an ordinary character (RFC 9309 section 2.2.3).
func compileRule(v string, allow bool) robotsRule {
	r := robotsRule{allow: allow, length: int32(len(v))}
	if v[0] != '/' && v[0] != '*' {
		v = "/" + v
	}
	if strings.HasSuffix(v, "$") {
		r.anchored = true
		v = v[:len(v)-1]
	}
	// "/a**b" is "/a*b", and a trailing '*' changes nothing unless anchored.
	for strings.Contains(v, "**") {
		v = strings.ReplaceAll(v, "**", "*")
	}
	if !r.anchored {
		v = strings.TrimSuffix(v, "*")
	}
	r.pattern = normalizeRobotsPath(v)
	return r
}

// normalizeRobotsPath percent-encodes octets outside US-ASCII and upper-cases
// the hex digits of percent-escapes, so that a rule and a URL path written
// differently compare equal (RFC 9309 section 2.2.2; RFC 3986 section
// 6.2.2.1). It does not decode escapes: "/%62" does not match "/b".
func normalizeRobotsPath(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || (c == '%' && i+2 < len(s) && (isLowerHex(s[i+1]) || isLowerHex(s[i+2]))) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte('%')
			b.WriteByte(upperHex(s[i+1]))
			b.WriteByte(upperHex(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool      { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isLowerHex(c byte) bool { return c >= 'a' && c <= 'f' }
func upperHex(c byte) byte {
	if isLowerHex(c) {
		return c - 'a' + 'A'
	}
	return c
}

// groupsFor returns the indexes of the groups that apply to product token
// (lower case): those naming it, else those naming "*", else none (RFC 9309
// section 2.2.1: groups naming the same agent are combined).
func (rr *robotsRules) groupsFor(token string) []int {
	if g := rr.byAgent[token]; len(g) > 0 && token != "" {
		return g
	}
	return rr.byAgent["*"]
}

// allowed reports whether path (escaped path and query, normalized with
// normalizeRobotsPath) is allowed for token: the matching rule with the
// most octets wins, Allow on a tie, and no match allows (RFC 9309 section
// 2.2.2). Cost: at most one linear match per rule of token's groups.
func (rr *robotsRules) allowed(path, token string) bool {
	best, bestAllow := int32(-1), true
	for _, gi := range rr.groupsFor(token) {
		for _, r := range rr.groups[gi].rules {
			if r.length < best || (r.length == best && (bestAllow || !r.allow)) {
				break // sorted: nothing later can beat the best
			}
			if matchRobots(r.pattern, r.anchored, path) {
				best, bestAllow = r.length, r.allow
				break // the first match of a group is its most specific
			}
		}
	}
	return bestAllow
}

// crawlDelay returns the Crawl-delay for token: the largest of its groups'.
func (rr *robotsRules) crawlDelay(token string) time.Duration {
	var d time.Duration
	for _, gi := range rr.groupsFor(token) {
		d = max(d, rr.groups[gi].crawlDelay)
	}
	return d
}

// matchRobots reports whether path matches pattern, where '*' matches any
// run of octets and anchored means the match must end at the end of path
// (RFC 9309 section 2.2.3). Greedy: the literal before the first '*' must be
// a prefix, an anchored last literal a suffix, and each literal between is
// taken at its leftmost occurrence after the previous one, which finds a
// match whenever one exists. Time linear in len(path)+len(pattern) (each
// strings.Index resumes where the last one stopped); no allocation.
func matchRobots(pattern string, anchored bool, path string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	path, pattern = path[star:], pattern[star+1:]
	last := pattern
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		last, pattern = pattern[i+1:], pattern[:i]
	} else {
		pattern = ""
	}
	if anchored {
		if !strings.HasSuffix(path, last) {
			return false
		}
		path = path[:len(path)-len(last)]
	}
	for pattern != "" {
		var seg string
		seg, pattern, _ = strings.Cut(pattern, "*")
		i := strings.Index(path, seg)
		if i < 0 {
			return false
		}
		path = path[i+len(seg):]
	}
	return anchored || strings.Contains(path, last)
}
