package crawltest

import (
	"context"
	"testing"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestSeedCreatesAConfiguredCrawlWithItsSeeds: the crawl Seed creates has
// the config written and every seed pending, normalized.
func TestSeedCreatesAConfiguredCrawlWithItsSeeds(t *testing.T) {
	cfg := config.Default()
	cfg.PerHostRatePerS = 7
	client, front := Seed(t, testenv.SharedZooKeeper(t).Addr(), "/crawltest/seed", cfg, frontier.Layout{Shards: 2, Spread: 1},
		[]string{"HTTP://Example.COM/a", "http://example.com/b"}, coord.Config{})
	ctx := context.Background()
	st, err := front.Backlog().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, g := range st {
		k, err := front.Backlog().Keys(ctx, g.Group)
		if err != nil {
			t.Fatal(err)
		}
		keys += k.Len()
	}
	if keys != 2 {
		t.Fatalf("%d keys posted; want the 2 seeds", keys)
	}
	data, _, err := coord.Store(client, "/crawltest/seed", coord.ConfigNode).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.Parse(data)
	if err != nil || got.PerHostRatePerS != 7 {
		t.Fatalf("config = %+v, %v; want per_host_rate_per_s 7", got, err)
	}
}
