package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func runSeeder(t *testing.T, env map[string]string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	err := seed(ctx, args, lookup, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestSeederEnqueuesOnceAndReportsBadLines(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	lines := []string{
		"# a comment", "",
		"http://Example.COM:80/a/../b#frag", // normalizes to http://example.com/b
		"http://example.com/b",              // duplicate of the line above
		"ftp://example.com/file",            // unsupported scheme
		"http://",                           // no host
		"https://bücher.example/",           // IDN host
	}
	if err := os.WriteFile(seeds, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ZKCRAWL_ZK": zk.Addr()} // the flag comes from the environment
	out, errOut, err := runSeeder(t, env, "", "--crawl", "t1", "--shards", "4", "--host-spread", "2", "--seeds", seeds, "http://example.org/")
	if err != nil {
		t.Fatalf("seeder: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "3 enqueued, 1 duplicates, 2 rejected") {
		t.Fatalf("summary = %q", out)
	}
	for _, want := range []string{"line 5", "line 6", "ftp://example.com/file"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// A second run with the same seeds enqueues nothing new.
	out, errOut, err = runSeeder(t, env, "http://example.org/\n", "--crawl", "t1", "--seeds", "-")
	if err != nil || !strings.Contains(out, "0 enqueued, 1 duplicates, 0 rejected") {
		t.Fatalf("second run: %q, %v\n%s", out, err, errOut)
	}
	ctx := context.Background()
	client, err := coord.Connect(ctx, zk.Addr(), coord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	front, err := frontier.Open(ctx, client, "/zkcrawl/t1")
	if err != nil {
		t.Fatal(err)
	}
	// The seeds wait in their groups' inboxes until a worker drains them.
	if n, err := front.LoadKnown(ctx); err != nil || n != 3 {
		t.Fatalf("URLs held by the crawl = %d, %v; want 3", n, err)
	}
}

func TestSeederRejectsBadConfigBeforeTouchingZooKeeper(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(bad, []byte(`{"per_host_rate_per_s": -3}`), 0o644)
	_, _, err := runSeeder(t, nil, "", "--zk", "127.0.0.1:1", "--crawl", "x", "--config", bad, "http://example.org/")
	if err == nil || !strings.Contains(err.Error(), "per_host_rate_per_s") {
		t.Fatalf("err = %v, want the bad key named", err)
	}
	_, _, err = runSeeder(t, nil, "", "--crawl", "bad name!", "http://example.org/")
	if err == nil || !strings.Contains(err.Error(), "bad name!") {
		t.Fatalf("err = %v, want the bad crawl name named", err)
	}
}

// 10,000 seeds from a file with blank and comment lines: all enqueued once,
// in batches, and a second run finds them all in the seen-set.
func TestSeederTenThousandSeeds(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	var b strings.Builder
	for i := range 10_000 {
		if i%100 == 0 {
			b.WriteString("\n# batch " + strconv.Itoa(i) + "\n   \n")
		}
		fmt.Fprintf(&b, "http://h%d.example/page/%d\n", i%500, i)
	}
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	os.WriteFile(seeds, []byte(b.String()), 0o644)
	args := []string{"--zk", zk.Addr(), "--crawl", "big", "--seeds", seeds}
	out, errOut, err := runSeeder(t, nil, "", args...)
	if err != nil || !strings.Contains(out, "10000 enqueued, 0 duplicates, 0 rejected") {
		t.Fatalf("first run: %q, %v\n%s", out, err, errOut)
	}
	out, errOut, err = runSeeder(t, nil, "", args...)
	if err != nil || !strings.Contains(out, "0 enqueued, 10000 duplicates, 0 rejected") {
		t.Fatalf("second run: %q, %v\n%s", out, err, errOut)
	}
}
