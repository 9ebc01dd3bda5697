package frontier_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// When the links of many new hosts arrive at once (the home pages of a
// wide crawl), the owner gives every host its first ready item before it
// fills any host's window: sampled while it fills, the ready items cover
// at least half as many hosts as there are items (filling whole windows
// host by host covers a fifth: a window of 5), until every host has one.
func TestOwnerFillsEveryHostFirst(t *testing.T) {
	t.Parallel()
	const hosts, pages = 600, 8
	cfg := config.Default() // per_host_max_in_flight 1: a window of 5
	sc := newSchedCrawl(t, cfg)
	var items []frontier.Item
	for p := range pages { // page-major, so every post names every host
		for h := range hosts {
			items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%d.example/p/%d", h, p)})
		}
	}
	sc.enqueue(items...)
	window := frontier.ReadyWindow(cfg)
	deadline := time.Now().Add(30 * time.Second)
	for samples := 0; ; samples++ {
		r := sc.ready()
		covered := map[string]int{}
		for u := range r {
			covered[u[:len(u)-len("/p/0")]]++
		}
		if len(covered) < min(hosts, len(r)/2) {
			t.Fatalf("%d ready items cover %d hosts; want every host served before windows fill (>= %d)", len(r), len(covered), min(hosts, len(r)/2))
		}
		if len(r) == hosts*window {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d samples in 30s: %d ready items, want every window full (%d)", samples, len(r), hosts*window)
		}
	}
}
