package fetch

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMatchRobots checks the wildcard matcher on RFC 9309 section 2.2.3's
// examples and on greedy-search corner cases.
func TestMatchRobots(t *testing.T) {
	cases := []struct {
		rule, path string
		want       bool
	}{
		{"/*.php$", "/index.php", true},
		{"/*.php$", "/filename.php", true},
		{"/*.php$", "/folder/filename.php", true},
		{"/*.php$", "/filename.php?parameters", false},
		{"/*.php$", "/filename.php/", false},
		{"/*.php$", "/filename.php5", false},
		{"/*.php$", "/windows.PHP", false},
		{"/fish*.php", "/fish.php", true},
		{"/fish*.php", "/fishheads/catfish.php?parameters", true},
		{"/fish*.php", "/Fish.PHP", false},
		{"/fish", "/fish.html", true},
		{"/fish", "/fish/salmon.html", true},
		{"/fish", "/catfish", false},
		{"/fish$", "/fish", true},
		{"/fish$", "/fishes", false},
		{"/*", "/anything", true},
		{"/a*b*c", "/axxbyyczz", true},
		{"/a*b*c", "/axxcyyb", false},
		{"/a*bc$", "/abcbc", true},
		{"/a*bc$", "/abcb", false},
		{"/a*a$", "/a", false}, // the prefix and the suffix may not overlap
		{"/a*$", "/a", true},
		{"/$x", "/$x", true}, // '$' inside is literal
		{"*x", "/ax", true},
		{"/p%c3%a9", "/p%C3%A9", true},
		{"/pé", "/p%C3%A9", true},
		{"/%62", "/b", false},
	}
	for _, c := range cases {
		r := compileRule(c.rule, false)
		if got := matchRobots(r.pattern, r.anchored, normalizeRobotsPath(c.path)); got != c.want {
			t.Errorf("rule %q, path %q: match %v, want %v", c.rule, c.path, got, c.want)
		}
	}
}

// TestRobotsPrecedence: the longest rule wins, Allow on a tie, groups naming
// the same agent are merged, and the "*" group applies only when none names
// the agent (RFC 9309 sections 2.2.1 and 2.2.2).
func TestRobotsPrecedence(t *testing.T) {
	rr := parseRobots([]byte(strings.Join([]string{
		"User-agent: *",
		"Disallow: /",
		"User-agent: ZKCrawl/1.0",
		"Disallow: /a",
		"Allow: /a$",
		"Crawl-delay: 0.5",
		"User-agent: other",
		"Disallow: /x",
		"User-agent: zkcrawl",
		"Allow: /a/b",
		"Disallow: /a/b*",
		"Disallow: /c*",
		"Allow: /c/",
	}, "\n")))
	for path, want := range map[string]bool{
		"/":      true,
		"/a":     true,  // Allow /a$ (3 octets) beats Disallow /a (2)
		"/a/x":   false, // Disallow /a
		"/a/b":   false, // Disallow /a/b* (5 octets as written) beats Allow /a/b (4)
		"/c/d":   true,  // Allow /c/ (3) ties Disallow /c* (3): Allow wins
		"/x":     true,  // the "other" group does not apply
		"/cat":   false, // Disallow /c*
		"/a/b/c": false,
	} {
		if got := rr.allowed(path, "zkcrawl"); got != want {
			t.Errorf("zkcrawl %s: %v, want %v", path, got, want)
		}
	}
	if rr.allowed("/anything", "otherbot") {
		t.Error(`"*" group (Disallow /) not applied to an unnamed agent`)
	}
	if d := rr.crawlDelay("zkcrawl"); d != 500*time.Millisecond {
		t.Errorf("crawl delay %v, want 500ms", d)
	}
}

// TestRobotsRuleCap: rules past MaxRobotsRules are ignored, the earlier ones
// kept.
func TestRobotsRuleCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for i := 0; i < MaxRobotsRules; i++ {
		fmt.Fprintf(&b, "Disallow: /r%d$\n", i)
	}
	b.WriteString("Disallow: /late\n")
	rr := parseRobots([]byte(b.String()))
	if rr.dropped != 1 {
		t.Errorf("dropped %d lines, want 1", rr.dropped)
	}
	if rr.allowed("/r0", "zkcrawl") || !rr.allowed("/late", "zkcrawl") {
		t.Error("want /r0 disallowed (first rule kept) and /late allowed (over the cap)")
	}
}

// TestRobotsCacheByteCap: the cache drops least recently used origins once
// their parsed files exceed MaxBytes.
func TestRobotsCacheByteCap(t *testing.T) {
	body := hostileRobots(100<<10, false)
	srvs := make([]*httptest.Server, 4)
	for i := range srvs {
		srvs[i] = httptest.NewServer(serveRobots(200, body))
		defer srvs[i].Close()
	}
	one := parseRobots([]byte(body)).size
	r := newRobots(t, RobotsOptions{MaxBytes: 2*one + one/2})
	for _, s := range srvs {
		if _, err := r.Allowed(context.Background(), s.URL+"/x", ua); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.cacheBytes(); got > 2*one+one/2 || r.cache.Len() != 2 {
		t.Errorf("cache keeps %d bytes in %d entries; want <= %d in 2", got, r.cache.Len(), 2*one+one/2)
	}
	last, _ := url.Parse(srvs[3].URL)
	if _, ok := r.cache.Peek(originKey(last)); !ok {
		t.Error("the newest origin was evicted")
	}
}

// TestRobotsHostileBounded checks that a 500 KiB robots.txt of wildcard
// rules keeps at most 5 MiB of heap and that Allowed on a 2,000-character
// path stays fast (a backtracking matcher such as temoto/robotstxt keeps
// 61 MiB and takes 3.5 s per Allowed). The time bound here is loose for the race
// detector; BenchmarkRobotsHostile gives the real figure (< 1 ms).
func TestRobotsHostileBounded(t *testing.T) {
	site := newRobotsSite(t, serveRobots(200, hostileRobots(MaxRobotsBytes-100, false)))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := newRobots(t, RobotsOptions{})
	if _, err := r.Allowed(context.Background(), site.srv.URL+"/", ua); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 5<<20 {
		t.Errorf("parsed file keeps %d bytes of heap, want <= 5 MiB", kept)
	}
	url := site.srv.URL + hostilePaths["2000"]
	best := time.Hour
	for range 5 {
		start := time.Now()
		if ok, err := r.Allowed(context.Background(), url, ua); !ok || err != nil {
			t.Fatalf("Allowed = %v, %v; want true", ok, err)
		}
		best = min(best, time.Since(start))
	}
	if best > 50*time.Millisecond {
		t.Errorf("Allowed on a 2,000-character path took %v, want well under 50ms", best)
	}
	runtime.KeepAlive(r)
}

// A robots.txt that starts with a UTF-8 byte-order mark, whole or cut short
// (EF, EF BB, EF BB BF), is read as if it had none, as Google's reference
// parser reads it; a mark elsewhere is not skipped.
func TestRobotsByteOrderMark(t *testing.T) {
	const body = "User-agent: *\nDisallow: /"
	for _, bom := range []string{"\xef\xbb\xbf", "\xef\xbb", "\xef"} {
		if parseRobots([]byte(bom+body)).allowed("/x", "zkcrawl") {
			t.Errorf("BOM % x: Disallow: / ignored", bom)
		}
		site := newRobotsSite(t, serveRobots(200, bom+body))
		ok, err := newRobots(t, RobotsOptions{}).Allowed(context.Background(), site.srv.URL+"/x", ua)
		if err != nil || ok {
			t.Errorf("BOM % x served: Allowed = %v, %v; want false", bom, ok, err)
		}
	}
	if !parseRobots([]byte("User-agent: x\n\xef\xbb\xbfUser-agent: *\nDisallow: /")).allowed("/x", "zkcrawl") {
		t.Error("a BOM inside the file was skipped: its line named agent * after all")
	}
	if parseRobots([]byte("\xef\xbb\xbf")).allowed("/x", "zkcrawl") != true {
		t.Error("a file of only a BOM disallows")
	}
}
