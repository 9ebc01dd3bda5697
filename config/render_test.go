package config

import (
	"errors"
	"strings"
	"testing"
)

func TestRenderKeys(t *testing.T) {
	c, err := Parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Render != RenderNever || c.RenderConcurrency != 2 || c.RenderMemoryMB != 1024 || c.RenderTimeoutMS != 30000 || c.RenderScreenshot {
		t.Errorf("render defaults: %q %d %d %d %v", c.Render, c.RenderConcurrency, c.RenderMemoryMB, c.RenderTimeoutMS, c.RenderScreenshot)
	}
	c, err = Parse([]byte(`{"render":"auto","render_rules":[{"match":"/app/","render":"always"},{"match":"\\.pdf$","render":"never"}],"render_concurrency":4,"render_memory_mb":2048,"render_timeout_ms":10000,"render_screenshot":true}`))
	if err != nil {
		t.Fatal(err)
	}
	m := NewRenderMatcher(c)
	for u, want := range map[string]string{"https://a.example/app/x": RenderAlways, "https://a.example/x.pdf": RenderNever, "https://a.example/": RenderAuto} {
		if got := m.Mode(u); got != want {
			t.Errorf("Mode(%s) = %q, want %q", u, got, want)
		}
	}
	if !m.Renders() || NewRenderMatcher(Default()).Renders() {
		t.Error("Renders: want true with auto, false with the defaults")
	}
	for doc, key := range map[string]string{
		`{"render":"sometimes"}`:                             `"render"`,
		`{"render_rules":[{"match":"(","render":"always"}]}`: `"render_rules"`,
		`{"render_rules":[{"match":"x","render":"maybe"}]}`:  `"render_rules"`,
		`{"render_concurrency":0}`:                           `"render_concurrency"`,
		`{"render_memory_mb":10}`:                            `"render_memory_mb"`,
		`{"render_timeout_ms":999999}`:                       `"render_timeout_ms"`,
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("Parse(%s): %v, want an error naming %s", doc, err, key)
		}
	}
}
