package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// TestSeederOperatorMistakes: nothing valid given is an error; --shards on
// an existing crawl is reported as ignored; a pending drain is pointed out
// with the command that lifts it.
func TestSeederOperatorMistakes(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	env := map[string]string{"ZKCRAWL_ZK": zk.Addr()}

	_, _, err := runSeeder(t, env, "ftp://x/\nnot a url\n", "--crawl", "m1", "--seeds", "-")
	if err == nil || !strings.Contains(err.Error(), "no valid seed: all 2 rejected") {
		t.Fatalf("every seed rejected: err = %v", err)
	}
	_, _, err = runSeeder(t, env, "# only a comment\n\n", "--crawl", "m1", "--seeds", "-")
	if err == nil || !strings.Contains(err.Error(), "no seeds") {
		t.Fatalf("empty seed input: err = %v", err)
	}

	if _, errOut, err := runSeeder(t, env, "", "--crawl", "m2", "--shards", "16", "--host-spread", "2", "http://a.example/"); err != nil {
		t.Fatalf("create: %v\n%s", err, errOut)
	}
	_, errOut, err := runSeeder(t, env, "", "--crawl", "m2", "--shards", "64", "http://b.example/")
	if err != nil || !strings.Contains(errOut, "--shards 64 ignored: crawl m2 already exists with --shards 16") {
		t.Fatalf("--shards on an existing crawl: err=%v stderr:\n%s", err, errOut)
	}
	if strings.Contains(errOut, "--host-spread") {
		t.Errorf("--host-spread not given but reported:\n%s", errOut)
	}

	client, err := coord.Connect(context.Background(), zk.Addr(), coord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := coord.Store(client, "/zkcrawl/m2", coord.DrainNode).Write(context.Background(), []byte("drained by a test"), -1); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = runSeeder(t, env, "", "--crawl", "m2", "http://c.example/")
	if err != nil || !strings.Contains(errOut, "pending drain") || !strings.Contains(errOut, "crawlctl --crawl m2 drain --cancel") {
		t.Fatalf("pending drain: err=%v stderr:\n%s", err, errOut)
	}
}

// TestSeederProgress: a large seed input gets progress lines.
func TestSeederProgress(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "http://h%d.example/p\n", i)
	}
	out, errOut, err := runSeeder(t, map[string]string{"ZKCRAWL_ZK": zk.Addr()}, in.String(),
		"--crawl", "prog", "--shards", "8", "--seeds", "-", "--progress-interval", "1ms")
	if err != nil || !strings.Contains(out, "3000 enqueued") {
		t.Fatalf("seeder: %v %s\n%s", err, out, errOut)
	}
	if n := strings.Count(errOut, "msg=seeding"); n < 2 {
		t.Fatalf("%d progress lines for 3000 seeds at 1ms, want several:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, "lines_per_s=") {
		t.Errorf("progress line lacks lines_per_s:\n%s", errOut)
	}
}
