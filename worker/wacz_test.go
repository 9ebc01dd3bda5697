package worker

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage/wacz"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A real crawl by 3 workers packages as a WACZ file that verifies: every
// WARC file's index lines are in it, and its pages are the seeds and the
// 200 HTML pages of the crawl logs, each with the <title> the worker logged.
func TestCrawlPackagesAsWACZ(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 11, Hosts: 2, PagesPerHost: 15, LinksPerPage: 3, CrossHostShare: 0.3})
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, zk.Addr(), "wacz", cfg, frontier.Layout{Shards: 8, Spread: 2}, web.Seeds())
	c.runWorkers(3, 90*time.Second)

	wantPages := map[string]bool{}
	titled := 0
	for _, e := range c.logs() {
		if e.Status == 200 && e.MIME == "text/html" && e.WARCFile != "" {
			wantPages[e.URL] = true
			if e.Title != "" {
				titled++
			}
		}
	}
	if len(wantPages) == 0 || titled != len(wantPages) {
		t.Fatalf("%d HTML pages logged, %d with a title: every generated page has one", len(wantPages), titled)
	}
	var dirs []string
	indexLines := 0
	for _, id := range []string{"w1", "w2", "w3"} {
		dir := filepath.Join(c.out, id)
		dirs = append(dirs, dir)
		idx, _ := filepath.Glob(filepath.Join(dir, "*.cdxj"))
		for _, f := range idx {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			indexLines += strings.Count(string(b), "\n")
		}
	}
	out := filepath.Join(t.TempDir(), "crawl.wacz")
	sum, err := wacz.Write(context.Background(), wacz.Options{Out: out, Dirs: dirs, Title: "zkcrawl crawl wacz", Software: "zkcrawl test"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.IndexLines != int64(indexLines) {
		t.Errorf("package index has %d lines, the .cdxj files %d", sum.IndexLines, indexLines)
	}
	rep, err := wacz.Verify(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IndexLines != int64(indexLines) {
		t.Errorf("verified %d index lines, want %d", rep.IndexLines, indexLines)
	}

	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := zr.Open("pages/pages.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	got := map[string]bool{}
	for sc.Scan() {
		var p wacz.Page
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if wantPages[p.URL] && p.Title == "" {
			t.Errorf("page %s has no title", p.URL)
		}
		got[p.URL] = true
	}
	for u := range wantPages {
		if !got[u] {
			t.Errorf("HTML page %s missing from pages.jsonl", u)
		}
	}
	for _, s := range web.Seeds() {
		if !got[s] {
			t.Errorf("seed %s missing from pages.jsonl", s)
		}
	}
}
