package config

import (
	"regexp"
)

// Render modes for Config.Render and RenderRule.Render.
const (
	// RenderNever stores the fetched HTML only (the default).
	RenderNever = "never"
	// RenderAlways renders every 2xx HTML page in the browser.
	RenderAlways = "always"
	// RenderAuto renders a 2xx HTML page that looks like a script shell
	// (worker.looksLikeShell: little visible text with a script bundle, or
	// an empty root element).
	RenderAuto = "auto"
)

// RenderRule is one entry of Config.RenderRules: URLs matching Match
// (RE2, over the normalized URL) are rendered as Render says; the first
// matching rule wins, a URL no rule matches follows Config.Render.
type RenderRule struct {
	Match  string `json:"match"`
	Render string `json:"render"`
}

// Bounds of the render keys.
const (
	// MaxRenderRules bounds Config.RenderRules.
	MaxRenderRules = 1000
	// MaxRenderConcurrency bounds Config.RenderConcurrency (pages).
	MaxRenderConcurrency = 64
	// MinRenderMemoryMB and MaxRenderMemoryMB bound Config.RenderMemoryMB
	// (MiB).
	MinRenderMemoryMB = 64
	MaxRenderMemoryMB = 1 << 20
	// MinRenderTimeoutMS and MaxRenderTimeoutMS bound
	// Config.RenderTimeoutMS (milliseconds).
	MinRenderTimeoutMS = 1000
	MaxRenderTimeoutMS = 600000
)

func renderMode(m string) bool { return m == RenderNever || m == RenderAlways || m == RenderAuto }

// validateRender checks the render keys, reporting through bad: the
// modes, each rule's pattern and mode (named by index and pattern), and
// the ranges of render_concurrency, render_memory_mb, render_timeout_ms.
func (c Config) validateRender(bad func(key, format string, args ...any) error) error {
	switch {
	case !renderMode(c.Render):
		return bad("render", "%q is not one of %s, %s, %s", c.Render, RenderNever, RenderAlways, RenderAuto)
	case c.RenderConcurrency < 1 || c.RenderConcurrency > MaxRenderConcurrency:
		return bad("render_concurrency", "%d is outside 1..%d", c.RenderConcurrency, MaxRenderConcurrency)
	case c.RenderMemoryMB < MinRenderMemoryMB || c.RenderMemoryMB > MaxRenderMemoryMB:
		return bad("render_memory_mb", "%d is outside %d..%d (MiB)", c.RenderMemoryMB, MinRenderMemoryMB, MaxRenderMemoryMB)
	case c.RenderTimeoutMS < MinRenderTimeoutMS || c.RenderTimeoutMS > MaxRenderTimeoutMS:
		return bad("render_timeout_ms", "%d is outside %d..%d", c.RenderTimeoutMS, MinRenderTimeoutMS, MaxRenderTimeoutMS)
	case len(c.RenderRules) > MaxRenderRules:
		return bad("render_rules", "%d rules, more than %d", len(c.RenderRules), MaxRenderRules)
	}
	for i, r := range c.RenderRules {
		if _, err := regexp.Compile(r.Match); err != nil {
			return bad("render_rules", "rule %d: match %q: %v", i, r.Match, err)
		}
		if !renderMode(r.Render) {
			return bad("render_rules", "rule %d (match %q): render %q is not one of %s, %s, %s", i, r.Match, r.Render, RenderNever, RenderAlways, RenderAuto)
		}
	}
	return nil
}

// RenderMatcher answers which render mode applies to a URL: the first
// matching rule of RenderRules, else Render. Build it once per config
// version (NewRenderMatcher): the rules are compiled there.
type RenderMatcher struct {
	mode  string
	rules []renderRule
}

type renderRule struct {
	re   *regexp.Regexp
	mode string
}

// NewRenderMatcher compiles c's render rules. A rule that does not compile
// is skipped (Validate refuses such a config).
func NewRenderMatcher(c Config) *RenderMatcher {
	m := &RenderMatcher{mode: c.Render}
	if m.mode == "" {
		m.mode = RenderNever
	}
	for _, r := range c.RenderRules {
		if re, err := regexp.Compile(r.Match); err == nil {
			m.rules = append(m.rules, renderRule{re: re, mode: r.Render})
		}
	}
	return m
}

// Mode returns the render mode for rawURL: RenderNever, RenderAlways or
// RenderAuto. A nil matcher answers RenderNever.
func (m *RenderMatcher) Mode(rawURL string) string {
	if m == nil {
		return RenderNever
	}
	for _, r := range m.rules {
		if r.re.MatchString(rawURL) {
			return r.mode
		}
	}
	return m.mode
}

// Renders reports whether any URL may be rendered under m (a mode or rule
// other than never): the worker starts no browser otherwise.
func (m *RenderMatcher) Renders() bool {
	if m == nil {
		return false
	}
	if m.mode != RenderNever {
		return true
	}
	for _, r := range m.rules {
		if r.mode != RenderNever {
			return true
		}
	}
	return false
}
