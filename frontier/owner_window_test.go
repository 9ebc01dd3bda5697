package frontier

import (
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
)

// Without a per-host rate the owner's busy keys share readyBudget: one
// fast host alone gets 16 x per_host_max_in_flight + 1 ready items, a few
// get their share, and many keep ReadyWindow; under a rate every key keeps
// ReadyWindow however few there are.
func TestReadyWindowFollowsTheBusyKeys(t *testing.T) {
	unrated := config.Default()
	unrated.PerHostRatePerS, unrated.PerHostMaxInFlight = 0, 8
	rated := unrated
	rated.PerHostRatePerS = 50
	for _, c := range []struct {
		name string
		cfg  config.Config
		keys int64
		want int
	}{
		{"one fast host", unrated, 1, 129},
		{"no key counted yet", unrated, 0, 129},
		{"ten hosts share the budget", unrated, 10, 1024 / 10},
		{"hundreds keep the floor", unrated, 300, 33},
		{"a rate keeps the floor", rated, 1, 33},
	} {
		if got := readyWindowFor(c.cfg, c.keys); got != c.want {
			t.Errorf("%s: readyWindowFor(rate %v, in-flight %d, %d busy keys) = %d, want %d",
				c.name, c.cfg.PerHostRatePerS, c.cfg.PerHostMaxInFlight, c.keys, got, c.want)
		}
	}
	if ReadyWindow(unrated) != 33 {
		t.Errorf("ReadyWindow at in-flight 8 = %d, want 33", ReadyWindow(unrated))
	}
}
