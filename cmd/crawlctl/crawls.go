package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

var listCommand = &command{
	name:    "list",
	noCrawl: true,
	about: `Lists the crawls under /zkcrawl in ZooKeeper (under the --zk chroot, if
any): name, live workers, queued URLs (ready plus backlog), inbox posts
not yet drained by a worker, claims in flight and whether a drain is
pending. --crawl is not needed.`,
	examples: `  crawlctl --zk 127.0.0.1:2181 list
  crawlctl --zk zk1:2181,zk2:2181,zk3:2181/team-a list`,
	setup: func(fs *pflag.FlagSet) runFunc {
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) > 0 {
				return cli.Usage("list takes no arguments, got %q", args)
			}
			return c.listCrawls(ctx)
		}
	},
}

var deleteCommand = &command{
	name:    "delete",
	args:    "NAME [--force]",
	noCrawl: true,
	about: `Deletes the crawl NAME: every znode under /zkcrawl/NAME (queue, claims,
seen-set, dead letters, config, drain marker). WARC files and crawl logs on
the workers' disks are not touched. It refuses while workers of the crawl
are live (drain them first: 'crawlctl --crawl NAME drain --wait'), unless
--force. The crawl is named as the argument, never taken from --crawl or
ZKCRAWL_CRAWL, so an exported variable cannot delete the wrong crawl.`,
	examples: `  crawlctl delete tour
  crawlctl --zk zk1:2181/team-a delete old-news --force`,
	setup: func(fs *pflag.FlagSet) runFunc {
		force := fs.Bool("force", false, "delete even while workers of the crawl are live (they lose their znodes and fail)")
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) != 1 {
				return cli.Usage("delete needs exactly one crawl NAME, got %q", args)
			}
			return c.deleteCrawl(ctx, args[0], *force)
		}
	},
}

// crawlRow is one line of list.
type crawlRow struct {
	name            string
	workers         int
	queued, claimed int
	posts           int
	draining        bool
	err             string
}

func (c *ctl) listCrawls(ctx context.Context) error {
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	crawls, err := coord.Store(client, coord.CrawlsRoot).Children(cctx)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return fmt.Errorf("list crawls: %w", err)
	}
	names := slices.Sorted(maps.Keys(crawls))
	if len(names) == 0 {
		fmt.Fprintf(c.stdout(), "no crawls under %s in ZooKeeper %s (create one with seeder)\n", coord.CrawlsRoot, c.g.zk)
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWORKERS\tQUEUED\tPOSTS\tCLAIMED\tDRAIN")
	for _, n := range names {
		r := c.crawlRow(cctx, client, n)
		if r.err != "" {
			fmt.Fprintf(tw, "%s\t?\t?\t?\t?\t?\t(%s)\n", n, r.err)
			continue
		}
		drain := "-"
		if r.draining {
			drain = "pending"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", n, r.workers, r.queued, r.posts, r.claimed, drain)
	}
	return tw.Flush()
}

// crawlRow reads one crawl's counts; problems go into the row, not an error,
// so one broken crawl does not hide the others.
func (c *ctl) crawlRow(ctx context.Context, client *coord.Client, name string) crawlRow {
	r := crawlRow{name: name}
	root, err := coord.Root(name)
	if err != nil {
		r.err = err.Error()
		return r
	}
	ids, _, err := coord.Members(ctx, client, root)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		r.err = err.Error()
		return r
	}
	r.workers = len(ids)
	f, err := frontier.Open(ctx, client, root)
	if err != nil {
		r.err = "not a crawl of this zkcrawl: " + err.Error()
		return r
	}
	p, err := f.Pending(ctx)
	if err != nil {
		r.err = err.Error()
		return r
	}
	r.queued, r.posts, r.claimed = p.Ready+p.Backlog, p.Posts, p.Claimed
	_, _, err = coord.Store(client, root, coord.DrainNode).Read(ctx)
	r.draining = err == nil
	return r
}

func (c *ctl) deleteCrawl(ctx context.Context, name string, force bool) error {
	root, err := coord.Root(name)
	if err != nil {
		return cli.Usage("delete: %v", err)
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	ids, _, err := coord.Members(cctx, client, root)
	cancel()
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return fmt.Errorf("delete %s: list workers: %w", name, err)
	}
	cctx, cancel = context.WithTimeout(ctx, c.g.timeout)
	_, _, err = coord.Store(client, root).Read(cctx)
	cancel()
	if errors.Is(err, coord.ErrNotFound) {
		return fmt.Errorf("delete: no crawl %q at %s in ZooKeeper %s ('crawlctl list' shows the crawls)", name, root, c.g.zk)
	}
	if len(ids) > 0 && !force {
		return fmt.Errorf("delete: crawl %q has %d live worker(s) (%s): stop them first ('crawlctl --crawl %s drain --wait') or add --force",
			name, len(ids), strings.Join(ids, ", "), name)
	}
	start := time.Now()
	last := start
	n, err := coord.Store(client, root).Delete(ctx, func(n int64) {
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			fmt.Fprintf(c.stderr(), "deleting %s: %d znodes so far\n", root, n)
		}
	})
	if err != nil {
		return fmt.Errorf("delete %s after %d znodes: %w (run it again to finish)", name, n, err)
	}
	fmt.Fprintf(c.stdout(), "crawl %s deleted: %d znodes under %s in %v\n", name, n, root, time.Since(start).Round(time.Millisecond))
	return nil
}
