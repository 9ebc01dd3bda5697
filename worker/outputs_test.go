package worker

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/storage"
)

// A second worker given the same --out stops at start with an error naming
// the crawl log, instead of sharing it (a writer cutting its partial line
// back would erase the other's lines); once the first closes, it opens.
func TestSecondWorkerOnOneOutDirRefused(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	d1, err := openDiskStore(Options{OutDir: dir, ID: "w1", Crawl: "c"}, log)
	if err != nil {
		t.Fatal(err)
	}
	_, err = openDiskStore(Options{OutDir: dir, ID: "w2", Crawl: "c"}, log)
	if !errors.Is(err, storage.ErrInUse) || !strings.Contains(err.Error(), filepath.Join(dir, "crawl.log")) {
		t.Fatalf("second diskStore on one directory: %v, want ErrInUse naming the crawl log", err)
	}
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := openDiskStore(Options{OutDir: dir, ID: "w2", Crawl: "c"}, log)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	d2.Close()
}
