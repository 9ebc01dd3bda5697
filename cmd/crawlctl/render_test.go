package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/worker"
)

// A worker that stopped claiming because its writes fail is shown with the
// reason from its status node.
func TestRenderShowsStorageError(t *testing.T) {
	d := &statusDoc{State: "RUNNING", Workers: []workerDoc{{
		Status:   worker.Status{ID: "w1", Host: "h", StorageError: "output writes failing since 2026-11-23T01:00:00Z: no space left on device; not claiming until they succeed"},
		OnConfig: true,
	}}}
	var b bytes.Buffer
	renderStatus(&b, d)
	if !strings.Contains(b.String(), "! w1: output writes failing") || !strings.Contains(b.String(), "no space left on device") {
		t.Errorf("status output lacks w1's storage error:\n%s", b.String())
	}
}
