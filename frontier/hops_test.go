package frontier

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestHopPaths(t *testing.T) {
	seed := Item{URL: "http://x/"}
	page := seed.Child("http://x/a", HopLink, 1)
	img := page.Child("http://cdn/i.png", HopEmbed, 1)
	moved := img.Child("http://cdn/j.png", HopRedirect, 1)
	if page.Hops != "L" || img.Hops != "LE" || moved.Hops != "LER" || moved.Via != "http://cdn/i.png" || moved.Depth != 1 {
		t.Fatalf("hops %q %q %+v", page.Hops, img.Hops, moved)
	}
	if IsRequisite(page.Hops) || !IsRequisite(img.Hops) || !IsRequisite(moved.Hops) || IsRequisite("") {
		t.Error("IsRequisite")
	}
	if LastHop("") != 0 || LastHop("LE") != HopEmbed {
		t.Error("LastHop")
	}
	long := strings.Repeat("L", MaxHops)
	if h := AppendHop(long, HopEmbed); len(h) != MaxHops || h[0] != '+' || !strings.HasSuffix(h, "LE") {
		t.Errorf("AppendHop past MaxHops = %q", h)
	}
	// A style sheet chain of any length: the path stays MaxHops long, a
	// valid hop path, still a requisite at the page's depth.
	deep := page
	for i := range 3 * MaxHops {
		deep = deep.Child(fmt.Sprintf("http://x/%d.css", i), HopEmbed, page.Depth)
	}
	if len(deep.Hops) != MaxHops || !IsRequisite(deep.Hops) || deep.Depth != 1 || validateHops(deep.Hops) != nil {
		t.Errorf("hops after %d embeds: %q depth %d, valid: %v", 3*MaxHops, deep.Hops, deep.Depth, validateHops(deep.Hops))
	}
}

func TestItemCaptureFieldsRoundTrip(t *testing.T) {
	p := 0.8
	it := Item{URL: "http://x/a", Depth: 1, Via: "http://x/sitemap.xml", Hops: "ML", Lastmod: "2026-11-01T10:00:00+00:00", Priority: &p}
	b, err := it.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"url":"http://x/a","depth":1,"via":"http://x/sitemap.xml","attempts":0,"hops":"ML","lastmod":"2026-11-01T10:00:00+00:00","priority":0.8}`; string(b) != want {
		t.Errorf("Encode = %s\nwant %s", b, want)
	}
	got, err := DecodeItem(b)
	if err != nil || got.Hops != "ML" || got.Lastmod != it.Lastmod || got.Priority == nil || *got.Priority != 0.8 {
		t.Fatalf("DecodeItem: %+v %v", got, err)
	}
	for data, want := range map[string]string{
		`{"url":"http://x/","hops":"LQ"}`:                                 "not a hop letter",
		`{"url":"http://x/","hops":"L+"}`:                                 "not a hop letter",
		`{"url":"http://x/","hops":"` + strings.Repeat("L", 65) + `"}`:    "limit 64",
		`{"url":"http://x/","priority":1.5}`:                              "outside 0.0..1.0",
		`{"url":"http://x/","priority":-0.1}`:                             "outside 0.0..1.0",
		`{"url":"http://x/","lastmod":"` + strings.Repeat("9", 65) + `"}`: "limit 64",
	} {
		if _, err := DecodeItem([]byte(data)); !errors.Is(err, ErrBadItem) || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeItem(%.60s) = %v, want %q", data, err, want)
		}
	}
}
