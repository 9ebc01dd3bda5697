package fetch

import (
	"net/http"
	"testing"
)

func TestXRobotsTag(t *testing.T) {
	const ua = "zkcrawl/0.1 (+https://github.com/zkcrawl/zkcrawl)"
	cases := []struct {
		name   string
		fields []string
		want   RobotsDirectives
	}{
		{"absent", nil, RobotsDirectives{}},
		{"nofollow", []string{"nofollow"}, RobotsDirectives{NoFollow: true}},
		{"noindex upper case", []string{"NoIndex"}, RobotsDirectives{NoIndex: true}},
		{"none", []string{"none"}, RobotsDirectives{NoFollow: true, NoIndex: true}},
		{"list", []string{"noarchive, nofollow ,nosnippet"}, RobotsDirectives{NoFollow: true}},
		{"two fields add up", []string{"noindex", "nofollow"}, RobotsDirectives{NoFollow: true, NoIndex: true}},
		{"our agent", []string{"ZKCrawl: nofollow"}, RobotsDirectives{NoFollow: true}},
		{"other agent", []string{"googlebot: nofollow, noindex"}, RobotsDirectives{}},
		{"other then ours", []string{"googlebot: noindex, zkcrawl: nofollow"}, RobotsDirectives{NoFollow: true}},
		{"ours then other", []string{"zkcrawl: noindex, otherbot: nofollow"}, RobotsDirectives{NoIndex: true}},
		{"general before agent", []string{"nofollow, otherbot: noindex"}, RobotsDirectives{NoFollow: true}},
		{"valued directive is no agent", []string{"unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow"}, RobotsDirectives{NoFollow: true}},
		{"max-snippet then none", []string{"max-snippet: 20, none"}, RobotsDirectives{NoFollow: true, NoIndex: true}},
		{"agent section ends with its field", []string{"otherbot: nofollow", "noindex"}, RobotsDirectives{NoIndex: true}},
		{"garbage", []string{",,  , :, nofollowing"}, RobotsDirectives{}},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, f := range c.fields {
			h.Add("x-robots-tag", f) // any case of the name: Add canonicalizes as net/http does
		}
		if got := XRobotsTag(h, ua); got != c.want {
			t.Errorf("%s: XRobotsTag(%q) = %+v, want %+v", c.name, c.fields, got, c.want)
		}
	}
}
