package testenv

// zkcrawl's own commands run as processes, as an operator runs them: the
// seeder creating and seeding a crawl, and crawler workers serving their
// metrics. The binaries come from BuildCommands or `make build`.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// RunSeeder writes cfg (config keys over the defaults) as dir/config.json
// and seeds, one URL a line, as dir/seeds.txt (seeds nil: that file is
// already written), then runs the seeder at bin
// with --zk, --crawl, --config and --seeds (default layout) to create the
// crawl and enqueue the seeds, bounded by ctx. It returns the seeder's
// output, its last line the summary. Errors: a file not written, or the
// seeder's exit status with its output.
func RunSeeder(ctx context.Context, bin, zkAddr, crawl, dir string, cfg map[string]any, seeds []string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if seeds != nil {
		if err := os.WriteFile(filepath.Join(dir, "seeds.txt"), []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", fmt.Errorf("testenv: config of crawl %s: %w", crawl, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, bin, "--zk", zkAddr, "--crawl", crawl, "--config", filepath.Join(dir, "config.json"),
		"--seeds", filepath.Join(dir, "seeds.txt"), "--log-level", "warn").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("testenv: seeder --crawl %s: %w\n%s", crawl, err, out)
	}
	return string(out), nil
}

// Crawler is one crawler process started by StartCrawlers.
type Crawler struct {
	ID      string // its --id: w1, w2, ...
	Dir     string // its --out: crawl.log and WARC files
	LogFile string // its stdout and stderr
	Metrics string // its /metrics URL, from its "serving metrics" log line
	*Proc
}

// CrawlLog returns the path of the crawler's crawl log.
func (c *Crawler) CrawlLog() string { return filepath.Join(c.Dir, "crawl.log") }

// metricsLine is the crawler's log line naming its metrics URL.
var metricsLine = regexp.MustCompile(`msg="serving metrics" url=(\S+)`)

// StartCrawlers starts n crawler processes (the binary bin) of crawl on
// zkAddr, with ids w1..wn, --out dir/<id>, logs in dir/<id>.log, metrics on
// a free loopback port (--metrics-addr 127.0.0.1:0), --stop-timeout 5s and
// the extra flags, and waits up to 15 s until each has logged its metrics
// URL. On error the crawlers started are killed. Errors: a start failed, a
// crawler exited or logged no metrics URL in time (with its log tail).
func StartCrawlers(ctx context.Context, bin, zkAddr, crawl, dir string, n int, logger *slog.Logger, extra ...string) ([]*Crawler, error) {
	var cs []*Crawler
	fail := func(err error) ([]*Crawler, error) {
		for _, c := range cs {
			_ = c.Kill()
		}
		return nil, err
	}
	for i := 1; i <= n; i++ {
		c := &Crawler{ID: fmt.Sprintf("w%d", i)}
		c.Dir, c.LogFile = filepath.Join(dir, c.ID), filepath.Join(dir, c.ID+".log")
		args := append([]string{"--zk", zkAddr, "--crawl", crawl, "--out", c.Dir, "--id", c.ID,
			"--metrics-addr", "127.0.0.1:0", "--stop-timeout", "5s"}, extra...)
		p, err := StartProcess(ctx, ProcConfig{Path: bin, Args: args, LogFile: c.LogFile, Logger: logger})
		if err != nil {
			return fail(err)
		}
		c.Proc = p
		cs = append(cs, c)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, c := range cs {
		for c.Metrics == "" {
			if m := metricsLine.FindStringSubmatch(TailFile(c.LogFile, 200)); m != nil {
				c.Metrics = m[1]
				break
			}
			if c.Exited() || time.Now().After(deadline) {
				return fail(fmt.Errorf("testenv: crawler %s logged no metrics URL within 15s:\n%s", c.ID, c.LogTail(20)))
			}
			select {
			case <-ctx.Done():
				return fail(ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return cs, nil
}
