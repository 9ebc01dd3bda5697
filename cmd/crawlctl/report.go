package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
)

var reportCommand = &command{
	name: "report",
	args: "[--json] [--zk-dead-letters] DIR...",
	about: `Prints the end-of-crawl reports Heritrix writes, from the workers' crawl
logs: the crawl summary, the seeds (each seed's status and where its
redirects led), the hosts (URLs, bytes, status classes, robots-precluded and
dead letters per host), the MIME types and the status codes. Each DIR is a
worker's --out folder or a folder holding several; every crawl.log under it
is read. It needs no ZooKeeper: it reports a finished crawl from its files.

Each URL counts once, with its last attempt (the logs are merged by time
stamp, so a URL retried by another worker counts its final answer). A
dead letter is a URL whose last attempt failed with a retryable code (5xx,
429, network errors) with no later attempt in the logs. With
--zk-dead-letters the command also reads the crawl's dead letters from
ZooKeeper (R/failed) and adds their count per host (column ZK-DEAD).

The host table lists at most 10,000 hosts, those with the most URLs; the
rest are summed in an "(other)" row, so the totals stay exact. A crawl-log
line that cannot be read is skipped and named (file and line) on stderr
and under "skipped lines". --json prints one JSON document instead.`,
	examples: `  crawlctl --crawl docs report /data/worker-*/
  crawlctl --crawl docs report --json /data | jq '.hosts[:10]'
  crawlctl --zk zk1:2181 --crawl docs report --zk-dead-letters /data`,
	setup: func(fs *pflag.FlagSet) runFunc {
		asJSON := fs.Bool("json", false, "print the reports as one JSON document")
		zkDead := fs.Bool("zk-dead-letters", false, "also count the dead letters in ZooKeeper (R/failed) per host")
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) == 0 {
				return cli.Usage("report: give the workers' output folders (DIR...)")
			}
			files, err := crawlreport.Find(args)
			if err != nil {
				return err
			}
			r, err := crawlreport.Read(ctx, c.g.crawl, files, c.log)
			if err != nil {
				return err
			}
			if *zkDead {
				byHost, err := c.deadLettersByHost(ctx)
				if err != nil {
					return err
				}
				r.AddZKDeadLetters(byHost)
			}
			if *asJSON {
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.stdout(), "%s\n", b)
				return err
			}
			renderReport(c.stdout(), r)
			return nil
		}
	},
}

// deadLettersByHost counts the crawl's dead letters (R/failed, read with
// coord.Queue.Failed and FailedData) by crawlreport.HostOf of their URL.
// Dead letters requeued meanwhile are skipped; an unreadable one counts
// under "(unreadable)".
func (c *ctl) deadLettersByHost(ctx context.Context) (map[string]int64, error) {
	q, err := c.openQueue(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	names, err := q.Failed(cctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out := map[string]int64{}
	for _, n := range names {
		cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
		data, err := q.FailedData(cctx, n)
		cancel()
		if errors.Is(err, coord.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read dead letter %s: %w", n, err)
		}
		it, _, err := decodeDeadLetter(data)
		if err != nil {
			out["(unreadable)"]++
			continue
		}
		out[crawlreport.HostOf(it.URL)]++
	}
	return out, nil
}
