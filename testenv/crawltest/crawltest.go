// Package crawltest creates crawls for the tests of the packages that run
// them (worker, crawlctl): the steps of bin/seeder done in-process against
// a real ZooKeeper. It sits apart from package testenv because it uses
// coord and frontier, whose own tests use testenv.
package crawltest

import (
	"context"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// SessionTimeout is the session timeout of the client Seed opens.
const SessionTimeout = 2 * time.Second

// Seed creates the crawl at znode root on the ZooKeeper at zkAddr as
// bin/seeder does: frontier.Create with layout, cfg written as the crawl's
// config, then seeds normalized (frontier.Normalize) and enqueued. It
// returns the client it used (connected with zk, e.g. its Username and
// Password, a zero SessionTimeout made SessionTimeout and a nil Logger
// testenv.Logger; closed at cleanup) and the crawl's frontier. Any
// failure, a seed that does not normalize included, fails t. Bounded by
// 30 s.
func Seed(t testing.TB, zkAddr, root string, cfg config.Config, layout frontier.Layout, seeds []string, zk coord.Config) (*coord.Client, *frontier.Frontier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if zk.SessionTimeout == 0 {
		zk.SessionTimeout = SessionTimeout
	}
	if zk.Logger == nil {
		zk.Logger = testenv.Logger()
	}
	client, err := coord.Connect(ctx, zkAddr, zk)
	if err != nil {
		t.Fatalf("crawltest: connect %s: %v", zkAddr, err)
	}
	t.Cleanup(client.Close)
	front, _, err := frontier.Create(ctx, client, root, layout)
	if err != nil {
		t.Fatalf("crawltest: create %s: %v", root, err)
	}
	if _, err := coord.Store(client, root, coord.ConfigNode).Write(ctx, cfg.Encode(), -1); err != nil {
		t.Fatalf("crawltest: config of %s: %v", root, err)
	}
	items := make([]frontier.Item, 0, len(seeds))
	for _, s := range seeds {
		u, err := frontier.Normalize(s)
		if err != nil {
			t.Fatalf("crawltest: seed %q: %v", s, err)
		}
		items = append(items, frontier.Item{URL: u})
	}
	if _, err := front.Enqueue(ctx, items); err != nil {
		t.Fatalf("crawltest: enqueue %d seeds into %s: %v", len(items), root, err)
	}
	return client, front
}
