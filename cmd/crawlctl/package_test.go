package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/storage"
)

// package writes a WACZ file from worker folders and --verify checks it,
// with no ZooKeeper reachable (--zk names a port nobody listens on); a
// missing folder fails with one line and leaves no package; a damaged
// package fails --verify; missing arguments are usage errors.
func TestPackageCommand(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for _, id := range []string{"w1", "w2"} {
		dir := filepath.Join(root, id)
		w, err := storage.NewWriter(dir, "zkcrawl-"+id, storage.WriterOptions{WorkerID: id, Hostname: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteExchange(storage.Exchange{
			TargetURI: "https://example.com/" + id, RawRequest: []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
			RawResponseHeader: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), Body: []byte("<title>x</title>"),
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	ctx := context.Background()
	env := map[string]string{"ZKCRAWL_ZK": "127.0.0.1:1"}
	out := filepath.Join(root, "c.wacz")
	r := runCtl(ctx, env, nil, append([]string{"--crawl", "c", "package", "--out", out}, dirs...)...)
	if r.err != nil || !strings.Contains(r.stdout, "2 WARC file(s)") || !strings.Contains(r.stdout, "2 index records") {
		t.Fatalf("package: %v", r)
	}
	r = runCtl(ctx, env, nil, "package", "--verify", out)
	if r.err != nil || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("package --verify: %v", r)
	}

	b, _ := os.ReadFile(out)
	bad := filepath.Join(root, "bad.wacz")
	os.WriteFile(bad, b[:len(b)-100], 0o644)
	if r = runCtl(ctx, env, nil, "package", "--verify", bad); r.err == nil || cli.IsUsage(r.err) || !strings.Contains(r.err.Error(), bad) {
		t.Errorf("--verify a truncated package: %v", r)
	}

	missing := filepath.Join(root, "nope")
	out2 := filepath.Join(root, "d.wacz")
	r = runCtl(ctx, env, nil, "--crawl", "c", "package", "--out", out2, dirs[0], missing)
	if r.err == nil || cli.IsUsage(r.err) || !strings.Contains(r.err.Error(), missing) || strings.Contains(r.err.Error(), "\n") {
		t.Errorf("package with a missing folder: want one line naming it, got %v", r)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("%s written after an error", out2)
	}

	for _, args := range [][]string{
		{"package", "--out", out, dirs[0]},         // no --crawl
		{"--crawl", "c", "package", dirs[0]},       // no --out
		{"--crawl", "c", "package", "--out", out},  // no folders
		{"package", "--verify", out, "--out", out}, // both
		{"--crawl", "bad/name", "package", "--out", out, dirs[0]},
	} {
		if r := runCtl(ctx, env, nil, args...); !cli.IsUsage(r.err) {
			t.Errorf("crawlctl %q: want a usage error, got %v", args, r)
		}
	}
}
