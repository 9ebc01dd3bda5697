package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
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
// package fails --verify; missing arguments are usage errors. The crawl
// reports of the folders' crawl logs are packaged under reports/.
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
		line := `{"ts":"2026-11-26T10:00:00Z","url":"https://example.com/` + id + `","status":200,"bytes":16,"mime":"text/html","depth":0,"via":"","hops":"","worker":"` + id + `","duration_ms":3,"attempt":1}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, "crawl.log"), []byte(line), 0o644); err != nil {
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
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var rep struct {
		Summary struct {
			URLs int64 `json:"urls"`
		} `json:"summary"`
	}
	var txt bool
	for _, f := range zr.File {
		switch f.Name {
		case "reports/crawl-report.json":
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Errorf("reports/crawl-report.json: %v", err)
			}
		case "reports/crawl-report.txt":
			txt = true
		}
	}
	if rep.Summary.URLs != 2 || !txt {
		t.Errorf("packaged reports: json summary URLs %d (want 2), text present %v", rep.Summary.URLs, txt)
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
