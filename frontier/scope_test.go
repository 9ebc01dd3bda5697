package frontier

import (
	"strings"
	"testing"
)

func TestNewScopeErrors(t *testing.T) {
	cases := []struct {
		cfg  ScopeConfig
		want string
	}{
		{ScopeConfig{Mode: "same_planet"}, `"same_planet"`},
		{ScopeConfig{Mode: ScopeAny, MaxDepth: -2}, "-2"},
		{ScopeConfig{Mode: ScopeAny, Include: []string{"ok", "(unclosed"}}, `"(unclosed"`},
		{ScopeConfig{Mode: ScopeAny, Exclude: []string{"[z-a]"}}, `"[z-a]"`},
	}
	for _, c := range cases {
		_, err := NewScope(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewScope(%+v) error = %v, want one naming %s", c.cfg, err, c.want)
		}
	}
}

func TestScopeAllows(t *testing.T) {
	type check struct {
		link  string
		depth int
		via   string
		want  bool
	}
	cases := []struct {
		name   string
		cfg    ScopeConfig
		checks []check
	}{
		{"same_host", ScopeConfig{Mode: ScopeSameHost, MaxDepth: -1}, []check{
			{"http://a.example.com/x", 1, "http://a.example.com/", true},
			{"https://a.example.com/x", 1, "http://a.example.com/", true},
			{"http://b.example.com/x", 1, "http://a.example.com/", false},
			{"http://127.0.0.1:8081/", 1, "http://127.0.0.1:8080/", false},
			{"http://127.0.0.1:8080/y", 1, "http://127.0.0.1:8080/", true},
			{"http://anything.org/", 0, "", true}, // seed
			{"http://a.example.com/x", 1000, "http://a.example.com/", true},
		}},
		{"default mode is same_host", ScopeConfig{MaxDepth: -1}, []check{
			{"http://b.example.com/x", 1, "http://a.example.com/", false},
		}},
		{"same_domain", ScopeConfig{Mode: ScopeSameDomain, MaxDepth: -1}, []check{
			{"http://b.example.com/x", 1, "http://a.example.com/", true},
			{"http://example.com:8080/x", 1, "http://www.example.com/", true},
			{"http://b.example.co.uk/", 1, "http://a.example.co.uk/", true},
			{"http://other.co.uk/", 1, "http://a.example.co.uk/", false},
			{"http://x.github.io/", 1, "http://y.github.io/", false}, // github.io is a public suffix
			{"http://127.0.0.1:9/", 1, "http://127.0.0.1:8080/", true},
			{"http://127.0.0.2/", 1, "http://127.0.0.1/", false},
			{"http://localhost:1/", 1, "http://localhost:2/", true},
			{"http://example.org/", 1, "http://example.com/", false},
		}},
		{"any with depth", ScopeConfig{Mode: ScopeAny, MaxDepth: 2}, []check{
			{"http://example.org/", 2, "http://example.com/", true},
			{"http://example.org/", 3, "http://example.com/", false},
			{"http://example.org/", 0, "", true},
		}},
		{"max depth 0 keeps seeds only", ScopeConfig{Mode: ScopeAny, MaxDepth: 0}, []check{
			{"http://example.org/", 0, "", true},
			{"http://example.org/a", 1, "http://example.org/", false},
		}},
		{"include and exclude", ScopeConfig{Mode: ScopeAny, MaxDepth: -1,
			Include: []string{`^https?://example\.com/docs/`},
			Exclude: []string{`\.pdf$`, `[?&]sessionid=`}}, []check{
			{"http://example.com/docs/a", 1, "http://example.com/", true},
			{"http://example.com/blog/a", 1, "http://example.com/", false},
			{"http://example.com/docs/a.pdf", 1, "http://example.com/", false},
			{"http://example.com/docs/a?sessionid=1", 1, "http://example.com/", false},
			{"http://example.com/blog/", 0, "", true},       // seeds skip include
			{"http://example.com/docs/x.pdf", 0, "", false}, // but not exclude
		}},
		{"invalid links", ScopeConfig{Mode: ScopeAny, MaxDepth: -1}, []check{
			{"mailto:x@example.com", 1, "http://example.com/", false},
			{"not a url", 0, "", false},
			{"http://example.com/", -1, "", false},
		}},
	}
	for _, c := range cases {
		s, err := NewScope(c.cfg)
		if err != nil {
			t.Fatalf("%s: NewScope: %v", c.name, err)
		}
		for _, ch := range c.checks {
			got, reason := s.Allows(ch.link, ch.depth, ch.via)
			if got != ch.want {
				t.Errorf("%s: Allows(%q, %d, %q) = %v (%q), want %v", c.name, ch.link, ch.depth, ch.via, got, reason, ch.want)
			}
			if !got && reason == "" {
				t.Errorf("%s: Allows(%q) refused without a reason", c.name, ch.link)
			}
			if got && reason != "" {
				t.Errorf("%s: Allows(%q) accepted with reason %q", c.name, ch.link, reason)
			}
		}
	}
}

func TestScopeReasons(t *testing.T) {
	s, err := NewScope(ScopeConfig{Mode: ScopeSameHost, MaxDepth: 1, Exclude: []string{`/private/`}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ link, via, want string }{
		{"http://example.com/private/x", "http://example.com/", `excluded by pattern "/private/"`},
		{"http://other.com/", "http://example.com/", "off host"},
	} {
		if _, r := s.Allows(c.link, 1, c.via); !strings.Contains(r, c.want) {
			t.Errorf("reason %q, want it to contain %q", r, c.want)
		}
	}
	if _, r := s.Allows("http://example.com/a", 2, "http://example.com/"); !strings.Contains(r, "too deep") {
		t.Errorf("reason %q, want too deep", r)
	}
}
