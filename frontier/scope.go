package frontier

import (
	"fmt"
	"net"
	"regexp"

	"golang.org/x/net/publicsuffix"
)

// Scope modes of ScopeConfig.Mode.
const (
	// ScopeSameHost keeps links whose authority (host:port, as returned by
	// Host) equals the authority of the page they were found on.
	ScopeSameHost = "same_host"
	// ScopeSameDomain keeps links whose registrable domain (eTLD+1 from the
	// Public Suffix List) equals that of the page they were found on.
	ScopeSameDomain = "same_domain"
	// ScopeAny keeps every link (subject to Include, Exclude and MaxDepth).
	ScopeAny = "any"
)

// ScopeConfig is the scope part of the live crawl configuration (R/config).
// The JSON keys are those of the crawl config document.
type ScopeConfig struct {
	// Mode is ScopeSameHost, ScopeSameDomain or ScopeAny; "" means
	// ScopeSameHost.
	Mode string `json:"mode"`
	// Include holds regular expressions (Go RE2 syntax, unanchored) matched
	// against the normalized URL. When non-empty a link must match at least
	// one. Seeds are not subject to Include.
	Include []string `json:"include,omitempty"`
	// Exclude holds regular expressions matched against the normalized URL;
	// a match puts the URL out of scope, seeds included. Exclude wins over
	// Include.
	Exclude []string `json:"exclude,omitempty"`
	// MaxDepth is the largest hop count from a seed (seeds have depth 0)
	// that is in scope; -1 means unlimited.
	MaxDepth int `json:"max_depth"`
}

// Scope decides whether a discovered link belongs to the crawl. It follows
// the Heritrix notion of scope (seed-relative host/domain rules, regular
// expression accept/reject decide-rules, a hop limit). A Scope is immutable
// and safe for concurrent use.
type Scope struct {
	mode     string
	include  []*regexp.Regexp
	exclude  []*regexp.Regexp
	maxDepth int
}

// NewScope compiles cfg. It returns an error naming the offending value for
// an unknown mode, a MaxDepth below -1, or a pattern that does not compile.
func NewScope(cfg ScopeConfig) (*Scope, error) {
	s := &Scope{mode: cfg.Mode, maxDepth: cfg.MaxDepth}
	switch cfg.Mode {
	case "":
		s.mode = ScopeSameHost
	case ScopeSameHost, ScopeSameDomain, ScopeAny:
	default:
		return nil, fmt.Errorf("scope: unknown mode %q (want %q, %q or %q)", cfg.Mode, ScopeSameHost, ScopeSameDomain, ScopeAny)
	}
	if cfg.MaxDepth < -1 {
		return nil, fmt.Errorf("scope: max depth %d invalid (want -1 for unlimited or >= 0)", cfg.MaxDepth)
	}
	var err error
	if s.include, err = compileAll("include", cfg.Include); err != nil {
		return nil, err
	}
	if s.exclude, err = compileAll("exclude", cfg.Exclude); err != nil {
		return nil, err
	}
	return s, nil
}

func compileAll(kind string, pats []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(pats))
	for i, p := range pats {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("scope: %s pattern %d %q: %w", kind, i, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Allows reports whether link (a normalized URL, see Normalize) found at hop
// depth on the page via is in scope. Seeds have via "" and are in scope
// unless an Exclude pattern matches or depth exceeds MaxDepth. For other
// links the checks are, in order: MaxDepth, Exclude, Mode (judged against
// the host of via), Include. When the answer is false, reason says why in a
// short human-readable phrase for the crawl log; when true, reason is "".
func (s *Scope) Allows(link string, depth int, via string) (bool, string) {
	if s.maxDepth >= 0 && depth > s.maxDepth {
		return false, fmt.Sprintf("too deep: depth %d > max depth %d", depth, s.maxDepth)
	}
	if depth < 0 {
		return false, fmt.Sprintf("invalid depth %d", depth)
	}
	for _, re := range s.exclude {
		if re.MatchString(link) {
			return false, fmt.Sprintf("excluded by pattern %q", re.String())
		}
	}
	if via == "" {
		if Host(link) == "" {
			return false, "not a valid http(s) URL"
		}
		return true, ""
	}
	lh := Host(link)
	if lh == "" {
		return false, "not a valid http(s) URL"
	}
	switch s.mode {
	case ScopeSameHost:
		vh := Host(via)
		if lh != vh {
			return false, fmt.Sprintf("off host: %s is not %s", lh, vh)
		}
	case ScopeSameDomain:
		ld, vd := registrableDomain(lh), registrableDomain(Host(via))
		if ld != vd {
			return false, fmt.Sprintf("off domain: %s is not %s", ld, vd)
		}
	}
	if len(s.include) > 0 {
		matched := false
		for _, re := range s.include {
			if re.MatchString(link) {
				matched = true
				break
			}
		}
		if !matched {
			return false, "matches no include pattern"
		}
	}
	return true, ""
}

// MaxDepth returns the configured hop limit (-1 = unlimited).
func (s *Scope) MaxDepth() int { return s.maxDepth }

// Mode returns the scope mode (ScopeSameHost, ScopeSameDomain or ScopeAny).
func (s *Scope) Mode() string { return s.mode }

// registrableDomain returns the eTLD+1 of the host part of an authority
// (golang.org/x/net/publicsuffix, the Public Suffix List), ignoring the
// port. For IP addresses, single-label hosts and public suffixes themselves,
// where there is no registrable domain, it returns the host itself.
func registrableDomain(authority string) string {
	h := hostName(authority)
	if net.ParseIP(h) != nil {
		return h
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return h
	}
	return d
}
