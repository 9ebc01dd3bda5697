package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// --revisit-from posts the old crawl's schedule entries into the new one,
// due at once; an old crawl that does not exist is one line naming it,
// and nothing is written.
func TestSeederRevisitFrom(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	env := map[string]string{"ZKCRAWL_ZK": zk.Addr()}
	if _, errOut, err := runSeeder(t, env, "", "--crawl", "old", "--shards", "1", "--host-spread", "1", "http://rv.example/seed"); err != nil {
		t.Fatalf("seed old: %v\n%s", err, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := coord.Connect(ctx, zk.Addr(), coord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	oldRoot, _ := coord.Root("old")
	old, err := frontier.Open(ctx, c, oldRoot)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	owner := frontier.NewOwner(old, frontier.OwnerOptions{Config: func() config.Config { return cfg }})
	octx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { owner.Run(octx, sess, 0); close(done) }()
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	entries := []frontier.Item{
		{URL: "http://rv.example/a", Depth: 1, Prev: &frontier.Capture{Time: at, Digest: "0123456789abcdef", IntervalS: 86400}},
		{URL: "http://rv.example/b", Depth: 2, Prev: &frontier.Capture{Time: at, IntervalS: 86400}},
	}
	if _, err := old.Enqueue(ctx, entries); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := old.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Scheduled == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-done

	_, errOut, err := runSeeder(t, env, "", "--crawl", "fresh", "--revisit-from", "gone")
	if err == nil || !strings.Contains(err.Error(), "--revisit-from gone: no such crawl") {
		t.Fatalf("missing old crawl: %v\n%s", err, errOut)
	}
	freshRoot, _ := coord.Root("fresh")
	if _, err := frontier.Open(ctx, c, freshRoot); err == nil {
		t.Fatal("the new crawl was created although the old one is missing")
	}
	out, errOut, err := runSeeder(t, env, "", "--crawl", "new", "--shards", "1", "--host-spread", "1", "--revisit-from", "old")
	if err != nil || !strings.Contains(out, "crawl new: 2 schedule entries from crawl old, due at once") {
		t.Fatalf("revisit-from: %q, %v\n%s", out, err, errOut)
	}
	newRoot, _ := coord.Root("new")
	nf, err := frontier.Open(ctx, c, newRoot)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := coord.Store(c, newRoot, coord.ConfigNode).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ncfg, err := config.Parse(data)
	if err != nil || ncfg.RecrawlDue().Before(at) {
		t.Fatalf("new crawl's recrawl_due_before: %s, %v", data, err)
	}
	owner2 := frontier.NewOwner(nf, frontier.OwnerOptions{Config: func() config.Config { return ncfg }})
	go owner2.Run(ctx, sess, 0)
	for {
		p, err := nf.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Ready == 2 && p.Scheduled == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the imported entries did not become ready: %+v", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
