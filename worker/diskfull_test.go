package worker

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// smallFS mounts a tmpfs of size bytes and returns its path, unmounted at
// cleanup. It skips the test where mounting is not permitted (not root, or a
// container without CAP_SYS_ADMIN); storage's TestCrawlLogWriteErrorNotSticky
// covers the write path through an io.Writer seam there.
func smallFS(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); the storage seam test covers write errors", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// liveStatus reads worker id's status node, in the worker list or in
// standby (standby true); false while it has none.
func liveStatus(c *crawlEnv, id string) (st Status, standby, ok bool) {
	for _, root := range []string{c.root, coord.StandbyRoot(c.root)} {
		_, data, err := coord.Members(context.Background(), c.client, root)
		if err != nil {
			continue
		}
		if d, found := data[id]; found && json.Unmarshal(d, &st) == nil {
			return st, root != c.root, true
		}
	}
	return Status{}, false, false
}

// Issue 10 items 1 and 2: a worker whose --out is a tiny filesystem crawls
// until the disk is full; it then releases its items uncompleted, stops
// claiming, says why in its status node and moves it to standby (so its
// shards go to other workers); once space is freed it claims again; a second
// worker with a large disk finishes the crawl. Every page of
// the ground truth is in the union of the two crawl logs. Before: 6.7% of the
// pages were there (items completed without their log line).
func TestDiskFullLosesNoLogLine(t *testing.T) {
	small := smallFS(t, 512<<10)
	zks := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 11, Hosts: 3, PagesPerHost: 150, LinksPerPage: 4})
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxDepth = -1
	c := newCrawl(t, zks.Addr(), "diskfull", cfg, frontier.Layout{Shards: 4, Spread: 2}, web.Seeds())

	// Leave about 192 KiB free.
	filler := filepath.Join(small, "filler")
	if err := os.WriteFile(filler, make([]byte, 320<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	d1 := c.startWorker(ctx, "w1", func(o *Options) { o.OutDir = filepath.Join(small, "w1") })

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("w1 to report its storage error and move to standby", func() bool {
		st, standby, ok := liveStatus(c, "w1")
		return ok && st.StorageError != "" && standby
	})
	st, _, _ := liveStatus(c, "w1")
	t.Logf("w1 status: %s", st.StorageError)
	pagesAtStop := st.Pages

	// Free the filler: w1 claims and writes again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor("w1 to rejoin and crawl again after space was freed", func() bool {
		st, _, ok := liveStatus(c, "w1")
		return ok && st.Pages > pagesAtStop
	})

	// Fill the disk for good: w1 stays blocked, and w2 must take its shards.
	_ = os.WriteFile(filler, make([]byte, 512<<10), 0o644) // ENOSPC expected: what fits stays
	d2 := c.startWorker(ctx, "w2", nil)
	for i, d := range []<-chan error{d1, d2} {
		if err := <-d; err != nil {
			t.Errorf("w%d: %v", i+1, err)
		}
	}
	all := c.logs() // w2's, on the large disk
	f, err := os.Open(filepath.Join(small, "w1", "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w1, err := storage.ReadCrawlLog(f)
	if err != nil {
		t.Fatalf("w1's crawl log: %v", err)
	}
	if len(w1) == 0 {
		t.Fatal("w1 logged nothing")
	}
	final, _ := finalStatus(append(w1, all...))
	if bad := diffTruth(truth, final); len(bad) > 0 {
		t.Fatalf("%d of %d pages missing from the union of the crawl logs (w1 %d lines, w2 %d):\n%s",
			len(bad), len(truth), len(w1), len(all), firstN(bad, 20))
	}
	t.Logf("w1 logged %d lines on the small disk, w2 %d; all %d pages present", len(w1), len(all), len(truth))
}
