package frontier_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// scheduleBigEnv names the environment variable that gives
// BenchmarkScheduleBig its URL count (a positive integer); unset or
// empty, the benchmark is skipped.
const scheduleBigEnv = "ZKCRAWL_SCHEDULE_BIG"

// scheduleBigZooCfgEnv names the environment variable whose
// space-separated key=value words BenchmarkScheduleBig adds to zoo.cfg
// (e.g. snapSizeLimitInKb=65536); unset, ZooKeeper's defaults.
const scheduleBigZooCfgEnv = "ZKCRAWL_SCHEDULE_BIG_ZOOCFG"

// scheduleBigStep is the URLs written per group step (one multi of about
// 100 to 250 KiB).
const scheduleBigStep = 4000

// scheduleBigShape is the capture shape of BenchmarkScheduleBig
// (scheduleCapture): a random Last-Modified per page, the largest entry
// of a page with a Last-Modified.
const scheduleBigShape = "random"

// BenchmarkScheduleBig measures a recrawl schedule of N URLs
// (N = $ZKCRAWL_SCHEDULE_BIG; skipped when unset) in one ZooKeeper run as
// deployed (-Xmx1g, -Xms256m, the full JIT, testenv's serial GC, tickTime
// 2 s), with forceSync=yes and, beside it, forceSync=no (docs/design.md,
// "Recrawl"). URLs are http://hNNNNNN.example/p/N, 100 per host, routed to
// the 64 groups of frontier.DefaultLayout; each group is written
// in-process by the owner's store path (Backlog.Open, Group.Apply: the
// layout a crawl's owner writes), 4 groups at a time, 4,000 URLs a step:
// first every URL is accepted and dropped (fetched: its key retires into
// the seen chunks), then each gets a schedule entry (scheduleCapture,
// shape "random", captured 10 ms apart within its group and ending a
// minute before the run, so none is due). It then reads the server
// (mntr data size and znodes, the JVM heap after a full GC by jcmd, the
// snapshot and log files), the Go heap per scheduled URL of group 0 as
// Backlog.Open holds it and as a running Owner holds it (runtime.ReadMemStats
// after two GCs, with less without), and restarts the server twice
// (SIGTERM, then start): replaying the transaction log, then from the
// snapshot the first restart wrote; each time until it serves and until
// a new client's Owner has loaded group 0 (its schedule summary
// written). $ZKCRAWL_SCHEDULE_BIG_ZOOCFG adds zoo.cfg lines. Run:
//
//	ZKCRAWL_SCHEDULE_BIG=1000000 go test -run '^$' -bench ScheduleBig -benchtime 1x -timeout 3h ./frontier/
//
// Errors: a value of the variable that is not a positive integer fails
// the benchmark, naming it.
func BenchmarkScheduleBig(b *testing.B) {
	v := os.Getenv(scheduleBigEnv)
	if v == "" {
		b.Skipf("%s is not set: give the URL count to run it", scheduleBigEnv)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer count of URLs", scheduleBigEnv, v)
	}
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("forceSync=%s", map[bool]string{true: "yes", false: "no"}[fsync]), func(b *testing.B) {
			for range b.N {
				scheduleBig(b, n, fsync)
			}
		})
	}
}

// scheduleBigConnect opens a client with a 20 s session timeout (the
// server's 2 s tick allows 4 to 40 s), closed at cleanup.
func scheduleBigConnect(b *testing.B, ctx context.Context, addr string) *coord.Client {
	b.Helper()
	c, err := coord.Connect(ctx, addr, coord.Config{SessionTimeout: 20 * time.Second, Logger: testenv.Logger()})
	if err != nil {
		b.Fatalf("connect %s: %v", addr, err)
	}
	b.Cleanup(c.Close)
	return c
}

// heapAfterGC returns the live Go heap after two GCs (the second empties
// sync.Pools).
func heapAfterGC() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func scheduleBig(b *testing.B, n int, forceSync bool) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("bench", b.Name())
	ctx := testenv.Context(b, 3*time.Hour)
	srv := testenv.ZooKeeperWith(b, testenv.ZKConfig{
		ForceSync: forceSync, TickTime: 2 * time.Second, StartTimeout: 10 * time.Minute, Logger: testenv.Logger(),
		JavaOpts:    []string{"-Xms256m", "-Xmx1g", "-XX:TieredStopAtLevel=4"},
		ExtraConfig: strings.Fields(os.Getenv(scheduleBigZooCfgEnv)),
	})
	base, err := testenv.ReadZKStats(ctx, srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	c := scheduleBigConnect(b, ctx, srv.Addr())
	const root = "/zkcrawl/schedule-big"
	layout := frontier.DefaultLayout
	f, _, err := frontier.Create(ctx, c, root, layout)
	if err != nil {
		b.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	url := func(i int) string { return fmt.Sprintf("http://h%06d.example/p/%d", i/100, i%100) }
	byGroup := make([][]int32, layout.Groups()) // URL indexes, host by host
	for h := 0; h*100 < n; h++ {
		g := layout.Group(url(h * 100))
		for i := h * 100; i < min(h*100+100, n); i++ {
			byGroup[g] = append(byGroup[g], int32(i))
		}
	}
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	var written atomic.Int64
	t0 := time.Now()
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(4)
	for g := range byGroup {
		eg.Go(func() error {
			err := scheduleBigGroup(ectx, f.Backlog(), sess, g, byGroup[g], url, at)
			if w := written.Add(int64(len(byGroup[g]))); err == nil && g%8 == 7 {
				log.Info("schedule written", "urls", w, "s", time.Since(t0).Round(time.Second))
			}
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		b.Fatal(err)
	}
	writeS := time.Since(t0).Seconds()
	st, err := testenv.ReadZKStats(ctx, srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	liveKB, err := srv.LiveHeapKB(ctx)
	if err != nil {
		b.Logf("no JVM heap reading: %v", err)
	}
	snaps, logBytes, err := srv.DataFiles()
	if err != nil {
		b.Fatal(err)
	}
	n0 := len(byGroup[0])
	groupHeap, ownerHeap := scheduleBigHeap(b, ctx, c, f, root, sess, n0)
	b.ReportMetric(float64(n)/writeS, "written-URLs/s")
	b.ReportMetric(float64(st.DataBytes-base.DataBytes)/float64(n), "zk-B/URL")
	b.ReportMetric(float64(st.Znodes-base.Znodes)/float64(n), "znodes/URL")
	b.ReportMetric(float64(liveKB)/1024, "jvm-live-MiB")
	b.ReportMetric(float64(liveKB)*1024/float64(n), "jvm-live-B/URL")
	b.ReportMetric(groupHeap, "open-heap-B/URL")
	b.ReportMetric(ownerHeap, "owner-heap-B/URL")
	b.Logf("zoo.cfg extra %q; %d URLs (%d hosts, 64 groups, group 0: %d) written in %.1f s (%.0f URLs/s), forceSync=%v; mntr: %d B data (%.2f B/URL), %d znodes (%.5f/URL); JVM heap after a full GC %.1f MiB; txn logs %.1f MiB, %d snapshots; Go heap per scheduled URL of group 0: %.1f B (Backlog.Open), %.1f B (Owner loaded)",
		os.Getenv(scheduleBigZooCfgEnv), n, (n+99)/100, n0, writeS, float64(n)/writeS, forceSync, st.DataBytes-base.DataBytes, float64(st.DataBytes-base.DataBytes)/float64(n),
		st.Znodes-base.Znodes, float64(st.Znodes-base.Znodes)/float64(n), float64(liveKB)/1024, float64(logBytes)/(1<<20), len(snaps), groupHeap, ownerHeap)
	c.Close()
	for i, what := range []string{"log", "snapshot"} { // replaying the log, then from the snapshot the first restart wrote
		stopS, serveS, loadS := scheduleBigRestart(b, ctx, srv, root, n0)
		snaps, logBytes, _ := srv.DataFiles()
		var largest int64
		for _, s := range snaps {
			largest = max(largest, s)
		}
		b.ReportMetric(serveS, "restart-"+what+"-serving-s")
		b.ReportMetric(loadS, "restart-"+what+"-loaded-s")
		b.Logf("restart %d (from the %s): stop %.1f s, then serving after %.1f s, group 0's owner loaded after %.1f s (from the start); snapshots %d (largest %.1f MiB), txn logs %.1f MiB; load average %s; server: %s",
			i+1, what, stopS, serveS, loadS, len(snaps), float64(largest)/(1<<20), float64(logBytes)/(1<<20), loadAverage(), snapshotTimes(srv.LogTail(300)))
	}
}

// scheduleBigGroup writes group g's URLs (indexes idx) by the owner's
// store path: each accepted and, the next step, dropped (fetched), until
// every batch retired into the seen chunks; then each URL's schedule
// entry, accepted into the batches.
func scheduleBigGroup(ctx context.Context, bl *frontier.Backlog, sess *coord.Session, g int, idx []int32, url func(int) string, at time.Time) error {
	grp, err := bl.Open(ctx, sess, g)
	if err != nil {
		return err
	}
	var prev []frontier.Ref
	for i := 0; i < len(idx); i += scheduleBigStep {
		recs := make([][]byte, 0, scheduleBigStep)
		for _, j := range idx[i:min(i+scheduleBigStep, len(idx))] {
			rec, err := frontier.Item{URL: url(int(j)), Depth: 1}.Record()
			if err != nil {
				return err
			}
			recs = append(recs, rec)
		}
		res, err := grp.Apply(ctx, frontier.Step{Accept: recs, Drop: prev})
		if err != nil {
			return err
		}
		prev = res.Accepted
	}
	if _, err := grp.Apply(ctx, frontier.Step{Drop: prev}); err != nil {
		return err
	}
	if _, err := grp.Apply(ctx, frontier.Step{}); err != nil { // retire the last batch
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(g), 2))
	start := at.Add(-time.Duration(len(idx)) * 10 * time.Millisecond)
	for i := 0; i < len(idx); i += scheduleBigStep {
		recs := make([][]byte, 0, scheduleBigStep)
		for k, j := range idx[i:min(i+scheduleBigStep, len(idx))] {
			c := scheduleCapture(rng, start, i+k, scheduleBigShape)
			rec, err := frontier.Item{URL: url(int(j)), Depth: 1, Prev: &c}.Record()
			if err != nil {
				return err
			}
			recs = append(recs, rec)
		}
		if _, err := grp.Apply(ctx, frontier.Step{Accept: recs}); err != nil {
			return err
		}
	}
	return nil
}

// scheduleBigOwnerConfig is the owners' config: recrawl on, the default
// intervals, max_frontier_bytes at its 1 TiB cap (it refuses no entry).
func scheduleBigOwnerConfig() config.Config {
	cfg := config.Default()
	cfg.Recrawl = true
	cfg.MaxFrontierBytes = 1 << 40
	return cfg
}

// runOwnerLoaded starts an Owner of f's group 0 and waits until it has
// loaded the group and written its schedule summary (n entries); stop
// ends it and waits for its Run.
func runOwnerLoaded(ctx context.Context, f *frontier.Frontier, sess *coord.Session, n int) (stop func(), err error) {
	cfg := scheduleBigOwnerConfig()
	owner := frontier.NewOwner(f, frontier.OwnerOptions{Log: testenv.Logger(), Config: func() config.Config { return cfg }})
	octx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); owner.Run(octx, sess, 0) }()
	stop = func() { cancel(); <-done }
	for owner.Totals().Scheduled < int64(n) {
		select {
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("owner of group 0: %d of %d entries loaded: %w", owner.Totals().Scheduled, n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return stop, nil
}

// scheduleBigHeap returns the Go heap per scheduled URL of group 0 (n
// entries): as Backlog.Open holds it (records and seen-set) and as a
// running Owner holds it (that plus its per-host heaps and indexes).
func scheduleBigHeap(b *testing.B, ctx context.Context, c *coord.Client, f *frontier.Frontier, root string, sess *coord.Session, n int) (groupB, ownerB float64) {
	b.Helper()
	without := heapAfterGC()
	grp, err := f.Backlog().Open(ctx, sess, 0)
	if err != nil {
		b.Fatal(err)
	}
	with := heapAfterGC()
	runtime.KeepAlive(grp)
	grp = nil
	groupB = float64(with-without) / float64(n)
	f2, err := frontier.Open(ctx, c, root)
	if err != nil {
		b.Fatal(err)
	}
	without = heapAfterGC()
	stop, err := runOwnerLoaded(ctx, f2, sess, n)
	if err != nil {
		b.Fatal(err)
	}
	with = heapAfterGC()
	stop()
	return groupB, float64(with-without) / float64(n)
}

// scheduleBigRestart stops the server (SIGTERM) and starts it again; it
// returns the stop's seconds, the seconds from the start until it serves
// and until a new client's Owner has loaded group 0 (n entries).
func scheduleBigRestart(b *testing.B, ctx context.Context, srv *testenv.ZKServer, root string, n int) (stopS, serveS, loadS float64) {
	b.Helper()
	t0 := time.Now()
	if err := srv.Stop(); err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	if err := srv.Restart(ctx); err != nil {
		b.Fatal(err)
	}
	serveS = time.Since(t1).Seconds()
	c, err := coord.Connect(ctx, srv.Addr(), coord.Config{SessionTimeout: 20 * time.Second, Logger: testenv.Logger()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	f, err := frontier.Open(ctx, c, root)
	if err != nil {
		b.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	stop, err := runOwnerLoaded(ctx, f, sess, n)
	if err != nil {
		b.Fatal(err)
	}
	loadS = time.Since(t1).Seconds()
	stop()
	return t1.Sub(t0).Seconds(), serveS, loadS
}

// snapshotTimes picks from a server log tail its last start's
// "Snapshot loaded in" and "Snapshot taken in" figures (ZooKeeper's
// ZKDatabase and FileTxnSnapLog log lines), "" when there are none.
func snapshotTimes(tail string) string {
	var got []string
	for _, line := range strings.Split(tail, "\n") {
		for _, what := range []string{"Snapshot loaded in ", "Snapshot taken in "} {
			if i := strings.Index(line, what); i >= 0 {
				got = append(got, strings.SplitN(line[i:], ",", 2)[0])
			}
		}
	}
	return strings.Join(got[max(len(got)-2, 0):], "; ")
}

// loadAverage is /proc/loadavg's first three fields ("" when unreadable).
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
