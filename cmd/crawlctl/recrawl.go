package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/pflag"
	"github.com/zkcrawl/zkcrawl/config"

	"github.com/zkcrawl/zkcrawl/internal/cli"
)

var recrawlCommand = &command{
	name: "recrawl",
	args: "--now [--match REGEX]",
	about: `Makes a continuous crawl's scheduled URLs due at once (docs/design.md,
"Recrawl"): it sets the config keys recrawl_due_before to the next whole second
(RFC 3339) and recrawl_due_match to REGEX ("" without --match), a
compare-and-set like 'config set'. Every shard group's owner applies it at
its next step: each schedule entry last fetched before that time whose URL
matches (RE2, over the normalized URL) is due now, and goes to the fetchers
through the same ready windows, quotas and politeness as any URL. The
request is part of the config, so it survives worker restarts and owner
changes, and running it again is harmless; captures made after it are
scheduled as usual. A bad REGEX is refused and nothing is written.`,
	examples: `  crawlctl --crawl news recrawl --now
  crawlctl --crawl news recrawl --now --match '^https://example\.org/blog/'
  crawlctl --crawl news status   # due now / within the hour / next due`,
	setup: func(fs *pflag.FlagSet) runFunc {
		now := fs.Bool("now", false, "make the scheduled URLs due at once")
		match := fs.String("match", "", "only URLs matching this regular expression (RE2)")
		return func(ctx context.Context, c *ctl, args []string) error {
			switch {
			case len(args) > 0:
				return cli.Usage("unexpected arguments %q", args)
			case !*now:
				return cli.Usage("recrawl: give --now")
			}
			if _, err := regexp.Compile(*match); err != nil {
				return cli.Usage("recrawl: --match %q: %v", *match, err)
			}
			due, err := config.NextDueSecond(ctx)
			if err != nil {
				return err
			}
			at, _ := json.Marshal(due.Format(time.RFC3339))
			m, _ := json.Marshal(*match)
			changes := []assignment{{key: "recrawl_due_before", value: at}, {key: "recrawl_due_match", value: m}}
			keys := []string{"recrawl_due_before", "recrawl_due_match"}
			if _, err := c.updateConfig(ctx, keys, func(cur []byte) ([]byte, error) { return applyAssignments(cur, changes) }); err != nil {
				return err
			}
			fmt.Fprintln(c.stdout(), "scheduled URLs last fetched before now are due at once (each shard group's owner applies it at its next step; 'crawlctl status' shows what is due)")
			return nil
		}
	},
}
