package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// recrawl --now writes the due request into the config (a bad --match is
// refused, nothing written); the owner applies it, and status shows the
// schedule line and counts only due entries as work.
func TestRecrawlNowAndStatus(t *testing.T) {
	cfg := testConfig()
	cfg.Recrawl = true
	c := newCrawl(t, "recrawl", cfg, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := frontier.Open(ctx, c.client, c.root)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner := frontier.NewOwner(f, frontier.OwnerOptions{Config: func() config.Config {
		data, _ := c.config()
		cur, err := config.Parse(data)
		if err != nil {
			t.Error(err)
		}
		return cur
	}})
	go owner.Run(ctx, sess, 0)
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	if _, err := f.Enqueue(ctx, []frontier.Item{{URL: "http://r.example/a", Prev: &frontier.Capture{Time: at, IntervalS: 86400}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the entry scheduled, not due, done", func() (bool, string) {
		d := c.status()
		return d.Done && d.Queue.Scheduled == 1 && d.Queue.DueNow == 0, d.State
	})
	r := c.ctl("status", "--rate-window", "0")
	if r.err != nil || !strings.Contains(r.stdout, "recrawl: 1 scheduled, 0 due now, 0 due within the hour, next due ") {
		t.Fatalf("status text lacks the recrawl line: %v", r)
	}
	_, v := c.config()
	if r := c.ctl("recrawl", "--now", "--match", "("); r.err == nil {
		t.Fatalf("a bad --match was accepted: %v", r)
	}
	if _, v2 := c.config(); v2 != v {
		t.Fatalf("a refused recrawl wrote the config (version %d -> %d)", v, v2)
	}
	if r := c.ctl("recrawl", "--now", "--match", `^http://r\.example/`); r.err != nil {
		t.Fatalf("recrawl --now: %v", r)
	}
	data, _ := c.config()
	got, err := config.Parse(data)
	if err != nil || got.RecrawlDue().IsZero() || got.RecrawlDueMatch != `^http://r\.example/` {
		t.Fatalf("config after recrawl --now: %s, %v", data, err)
	}
	eventually(t, 20*time.Second, "the entry moved to the ready window", func() (bool, string) {
		d := c.status()
		return d.Queue.Scheduled == 0 && d.Queue.Queued == 1 && !d.Done, d.State
	})
}
