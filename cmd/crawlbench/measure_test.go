package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/cmd/crawlbench/report"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func TestSpreadNearestRank(t *testing.T) {
	d := map[int]time.Duration{}
	for i := 1; i <= 100; i++ {
		d[i] = time.Duration(i) * time.Millisecond
	}
	if n, lo, mid, hi := spread(d); n != 100 || lo != 0.001 || mid != 0.05 || hi != 0.1 {
		t.Errorf("spread = %d, %v, %v, %v; want 100, 0.001, 0.05, 0.1", n, lo, mid, hi)
	}
	if n, _, mid, _ := spread(map[int]time.Duration{}); n != 0 || mid != 0 {
		t.Errorf("empty spread = %d, median %v", n, mid)
	}
}

func TestJudgeSynthCountsMissingDuplicateExtraAndWrongStatus(t *testing.T) {
	truth := map[string]testenv.WebExpect{
		"http://a/1": {Status: 200},
		"http://a/2": {Status: 200},
		"http://a/3": {Status: 404},
		"http://a/x": {Status: 0}, // must not be fetched
	}
	t0 := time.Now()
	lines := []storage.LogEntry{ // in time order, as testenv.ReadCrawlLogs returns them
		{URL: "http://a/1", Status: 200, TS: t0, Worker: "w1"},
		{URL: "http://a/3", Status: 200, TS: t0, Worker: "w1"},
		{URL: "http://a/x", Status: 200, TS: t0, Worker: "w2"},
		{URL: "http://a/1", Status: 200, TS: t0.Add(time.Second), Worker: "w2"},
	}
	b := &bench{log: slog.New(slog.DiscardHandler)}
	f := &fleet{workers: []*testenv.Crawler{{ID: "w1"}, {ID: "w2"}}}
	run := report.SynthRun{WallS: 2}
	b.judgeSynth(&run, f, lines, truth)
	if run.URLs != 3 || run.Missing != 1 || run.Dups != 1 || run.Extra != 1 || run.WrongStatus != 1 {
		t.Errorf("judgeSynth: urls %d, missing %d, dups %d, extra %d, wrong %d; want 3, 1, 1, 1, 1", run.URLs, run.Missing, run.Dups, run.Extra, run.WrongStatus)
	}
	if run.Pages != 4 || run.PagesPerS != 2 || len(run.PagesPerWorker) != 2 || run.PagesPerWorker[0] != 2 {
		t.Errorf("judgeSynth: pages %d, pages/s %v, per worker %v", run.Pages, run.PagesPerS, run.PagesPerWorker)
	}
}

// TestPollReportsTimeoutErrorAndContext: poll returns cond's done, its
// error at once, false at the timeout, and ctx's error when it ends.
func TestPollReportsTimeoutErrorAndContext(t *testing.T) {
	ctx := context.Background()
	n := 0
	if done, err := poll(ctx, time.Millisecond, time.Second, func() (bool, error) { n++; return n == 3, nil }); !done || err != nil || n != 3 {
		t.Errorf("poll until the third call = %v, %v after %d calls", done, err, n)
	}
	boom := errors.New("boom")
	if _, err := poll(ctx, time.Millisecond, time.Second, func() (bool, error) { return false, boom }); err != boom {
		t.Errorf("poll with a failing cond = %v, want %v", err, boom)
	}
	if done, err := poll(ctx, time.Millisecond, 20*time.Millisecond, func() (bool, error) { return false, nil }); done || err != nil {
		t.Errorf("poll past its timeout = %v, %v; want false, nil", done, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := poll(cctx, time.Millisecond, time.Second, func() (bool, error) { return false, nil }); err != context.Canceled {
		t.Errorf("poll with a cancelled ctx = %v", err)
	}
}
