package worker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// walk returns every znode under root (root included), listed through conn.
func walk(t *testing.T, conn *zk.Conn, root string) []string {
	t.Helper()
	out := []string{root}
	kids, _, err := conn.Children(root)
	if err != nil {
		t.Fatalf("children of %s: %v", root, err)
	}
	for _, k := range kids {
		out = append(out, walk(t, conn, path.Join(root, k))...)
	}
	return out
}

// Issue 10 item 11: a crawl seeded and crawled with --zk-auth has only
// creator-only znodes (scheme "auth" resolves to digest:crawler:...), and a
// client without the credentials, or with others, can neither read nor
// change any of them. Before: every znode was world:anyone with all
// permissions.
func TestZKAuthCrawlIsCreatorOnly(t *testing.T) {
	zks := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 3, Hosts: 2, PagesPerHost: 10, LinksPerPage: 3})
	auth := coord.Config{Username: "crawler", Password: "s3cret"}
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawlWith(t, zks.Addr(), "secure", cfg, frontier.Layout{Shards: 4, Spread: 2}, web.Seeds(), auth)
	// A worker that stays up, so its ephemeral znodes (member, claims) exist
	// while the tree is checked.
	ctx, stop := context.WithCancel(context.Background())
	done := c.startWorker(ctx, "w1", func(o *Options) { o.ExitWhenDone = false })
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(c.logs()) < 20 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(c.logs()); n < 20 {
		t.Fatalf("only %d pages crawled with auth", n)
	}

	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	owner, err := testenv.RawConn(rctx, zks.Addr(), "digest:crawler:s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	nodes := walk(t, owner, "/zkcrawl") // the test client has no chroot
	if len(nodes) < 10 {
		t.Fatalf("only %d znodes under /zkcrawl", len(nodes))
	}
	for _, n := range nodes {
		acl, _, err := owner.GetACL(n)
		if errors.Is(err, zk.ErrNoNode) {
			continue // an ephemeral claim finished meanwhile
		}
		if err != nil {
			t.Fatalf("ACL of %s: %v", n, err)
		}
		if len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].Perms != zk.PermAll || !strings.HasPrefix(acl[0].ID, "crawler:") {
			t.Errorf("ACL of %s = %+v, want only digest crawler:... with all permissions", n, acl)
		}
	}

	wrong := coord.Config{Username: "crawler", Password: "guess"}
	for name, zkCfg := range map[string]coord.Config{"no credentials": {}, "wrong password": wrong} {
		rawAuth := map[string]string{"no credentials": "", "wrong password": "digest:crawler:guess"}[name]
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		zkCfg.Logger = testLogger(t)
		other, err := coord.Connect(cctx, zks.Addr(), zkCfg)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := testenv.RawConn(rctx, zks.Addr(), rawAuth)
		if err != nil {
			t.Fatal(err)
		}
		// refused: ErrNoAuth, or ErrNoNode for an ephemeral claim that
		// finished meanwhile (nothing leaked either way).
		refused := func(err error) bool { return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrNoNode) }
		for _, n := range nodes {
			if _, _, err := conn.Get(n); !refused(err) {
				t.Errorf("%s: get %s: %v, want ErrNoAuth", name, n, err)
			}
			if _, err := conn.Set(n, []byte("x"), -1); !refused(err) {
				t.Errorf("%s: set %s: %v, want ErrNoAuth", name, n, err)
			}
			if _, err := conn.Create(n+"/intruder", nil, 0, zk.WorldACL(zk.PermAll)); !refused(err) && !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
				t.Errorf("%s: create under %s: %v, want ErrNoAuth", name, n, err)
			}
		}
		// What an intruder would do first: turn private networks on.
		if _, err := coord.Store(other, c.root, coord.ConfigNode).Write(context.Background(), []byte(`{"allow_private_networks":true}`), -1); !errors.Is(err, coord.ErrNotAuthorized) {
			t.Errorf("%s: config write: %v, want coord.ErrNotAuthorized", name, err)
		}
		if _, err := frontier.Open(context.Background(), other, c.root); err == nil {
			t.Errorf("%s: opened the crawl's frontier", name)
		}
		other.Close()
		conn.Close()
	}
}

// Issue 10 item 11: --forbid-private-networks wins over the config's
// allow_private_networks: a loopback site is never fetched (its pages are
// logged as refused), though the config allows private networks.
func TestForbidPrivateNetworksOverridesConfig(t *testing.T) {
	zks := testenv.ZooKeeper(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><body>hi</body></html>"))
	}))
	defer srv.Close()
	cfg := testConfig()
	cfg.AllowPrivateNetworks = true
	cfg.MaxAttempts = 1
	c := newCrawl(t, zks.Addr(), "forbid", cfg, frontier.Layout{Shards: 1, Spread: 1}, []string{srv.URL + "/a"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := <-c.startWorker(ctx, "w1", func(o *Options) { o.ForbidPrivateNetworks = true }); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback site got %d requests, want 0", n)
	}
	logs := c.logs()
	if len(logs) == 0 || logs[len(logs)-1].Status >= 0 {
		t.Errorf("crawl log %+v, want the page refused (negative status)", logs)
	}
}
