package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A crawl created with credentials (under its team's chroot): crawlctl with
// ZKCRAWL_ZK_AUTH reads it; without, it fails with one line naming
// --zk-auth and exit status 1; a malformed --zk-auth is a usage error.
func TestCtlZKAuth(t *testing.T) {
	servers := zkAddr(t) + "/team-auth"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := coord.Connect(ctx, servers, coord.Config{Username: "ops", Password: "pw", Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	root, _ := coord.Root("secure")
	if _, _, err := frontier.Create(ctx, client, root, frontier.Layout{Shards: 2, Spread: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := coord.Store(client, root, coord.ConfigNode).Write(ctx, testConfig().Encode(), -1); err != nil {
		t.Fatal(err)
	}
	args := []string{"--zk", servers, "--crawl", "secure", "--timeout", "20s", "status"}

	if r := runCtl(ctx, map[string]string{"ZKCRAWL_ZK_AUTH": "digest:ops:pw"}, nil, args...); r.err != nil {
		t.Errorf("status with the credentials: %v", r)
	}
	r := runCtl(ctx, nil, nil, args...)
	if !errors.Is(r.err, coord.ErrNotAuthorized) {
		t.Fatalf("status without credentials: %v; want coord.ErrNotAuthorized", r)
	}
	msg, code := cli.Outcome("crawlctl", r.err)
	if code != 1 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "--zk-auth") {
		t.Errorf("without credentials: exit %d, message %q; want 1 and one line naming --zk-auth", code, msg)
	}
	r = runCtl(ctx, nil, nil, append([]string{"--zk-auth", "sasl:x"}, args...)...)
	if !cli.IsUsage(r.err) || !strings.Contains(r.err.Error(), "--zk-auth") {
		t.Errorf("malformed --zk-auth: %v; want a usage error naming the flag", r)
	}
	r = runCtl(ctx, nil, nil, append([]string{"--zk-tls-ca", "/nonexistent/ca.pem"}, args...)...)
	if !cli.IsUsage(r.err) || !strings.Contains(r.err.Error(), "--zk-tls-ca") {
		t.Errorf("missing --zk-tls-ca file: %v; want a usage error naming the flag", r)
	}
}
