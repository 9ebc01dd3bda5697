package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

var requeueCommand = &command{
	name: "requeue-failed",
	args: "[--list] [--all | NAME...]",
	about: `Moves dead letters back to the queue. A URL that failed every attempt
(config max_attempts; network errors, HTTP 5xx and 429) is moved to the
crawl's dead-letter znodes R/failed/<shard>-<item> with its last error.
requeue-failed puts each named one (or --all) back at the end of its shard's
queue with its attempt count reset to 0 and no retry delay, in one atomic
ZooKeeper multi per URL, so a URL is never queued twice even if two
operators run it at once.

--list shows the dead letters (name, URL, last error, when it failed)
without changing anything; the names are what to pass as NAME.`,
	examples: `  crawlctl --crawl docs requeue-failed --list
  crawlctl --crawl docs requeue-failed --all
  crawlctl --crawl docs requeue-failed s017-u-0000000042`,
	setup: func(fs *pflag.FlagSet) runFunc {
		all := fs.Bool("all", false, "requeue every dead letter")
		list := fs.Bool("list", false, "only list the dead letters; change nothing")
		return func(ctx context.Context, c *ctl, args []string) error {
			switch {
			case *list && (*all || len(args) > 0):
				return cli.Usage("requeue-failed: --list takes no --all or names")
			case *all && len(args) > 0:
				return cli.Usage("requeue-failed: give either --all or dead-letter names, not both")
			case !*list && !*all && len(args) == 0:
				return cli.Usage("requeue-failed: give --all or the dead-letter names to requeue (see --list)")
			}
			q, err := c.openQueue(ctx)
			if err != nil {
				return err
			}
			names := args
			if *list || *all {
				cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
				names, err = q.Failed(cctx)
				cancel()
				if err != nil {
					return fmt.Errorf("list dead letters: %w", err)
				}
			}
			if *list {
				return c.listFailed(ctx, q, names)
			}
			return c.requeue(ctx, q, names)
		}
	},
}

// deadLetter is the data of R/failed/<name>, as the worker writes it.
type deadLetter struct {
	Item      json.RawMessage `json:"item"`
	LastError string          `json:"last_error"`
	FailedAt  time.Time       `json:"failed_at"`
}

// decodeDeadLetter parses a dead letter's data: the worker's record, or a
// bare item (what a plain coord.Claim.Fail of the item data leaves).
func decodeDeadLetter(data []byte) (frontier.Item, deadLetter, error) {
	var dl deadLetter
	if err := json.Unmarshal(data, &dl); err == nil && len(dl.Item) > 0 {
		it, err := frontier.DecodeItem(dl.Item)
		return it, dl, err
	}
	it, err := frontier.DecodeItem(data)
	return it, dl, err
}

func (c *ctl) listFailed(ctx context.Context, q *coord.Queue, names []string) error {
	if len(names) == 0 {
		fmt.Fprintln(c.stdout(), "no dead letters")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tURL\tATTEMPTS\tFAILED AT\tLAST ERROR")
	for _, n := range names {
		cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
		data, err := q.FailedData(cctx, n)
		cancel()
		if errors.Is(err, coord.ErrNotFound) {
			continue // requeued meanwhile
		}
		if err != nil {
			return fmt.Errorf("read dead letter %s: %w", n, err)
		}
		it, dl, err := decodeDeadLetter(data)
		if err != nil {
			fmt.Fprintf(tw, "%s\t?\t?\t?\tunreadable: %v\n", n, err)
			continue
		}
		at := "?"
		if !dl.FailedAt.IsZero() {
			at = dl.FailedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", n, it.URL, it.Attempts+1, at, dash(dl.LastError))
	}
	tw.Flush()
	fmt.Fprintf(c.stdout(), "%d dead letters\n", len(names))
	return nil
}

// requeue moves each named dead letter back with coord.Queue.Requeue (one
// multi: delete the dead letter, create the item), its attempts reset and
// not_before cleared. Dead letters requeued by someone else meanwhile are
// skipped. Errors: the names that could not be requeued.
func (c *ctl) requeue(ctx context.Context, q *coord.Queue, names []string) error {
	var done, gone int
	var errs []error
	for _, n := range names {
		cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
		url, err := requeueOne(cctx, q, n)
		cancel()
		switch {
		case errors.Is(err, coord.ErrNotFound):
			gone++
			fmt.Fprintf(c.stderr(), "%s: no such dead letter (requeued by someone else, or a wrong name)\n", n)
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
			fmt.Fprintf(c.stderr(), "%s: %v\n", n, err)
		default:
			done++
			fmt.Fprintf(c.stdout(), "requeued %s %s\n", n, url)
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(c.stdout(), "%d requeued", done)
	if gone > 0 {
		fmt.Fprintf(c.stdout(), ", %d not found", gone)
	}
	if len(errs) > 0 {
		fmt.Fprintf(c.stdout(), ", %d failed", len(errs))
	}
	fmt.Fprintln(c.stdout())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d dead letters not requeued: %w", len(errs), len(names), errors.Join(errs...))
	}
	if gone > 0 && done == 0 {
		return fmt.Errorf("none of the %d dead letters named exists: %w", gone, coord.ErrNotFound)
	}
	return nil
}

func requeueOne(ctx context.Context, q *coord.Queue, name string) (string, error) {
	data, err := q.FailedData(ctx, name)
	if err != nil {
		return "", err
	}
	it, _, err := decodeDeadLetter(data)
	if err != nil {
		return "", fmt.Errorf("unreadable dead letter, left in place: %w", err)
	}
	it.Attempts, it.NotBefore = 0, time.Time{}
	enc, err := it.Encode()
	if err != nil {
		return "", err
	}
	if _, err := q.Requeue(ctx, name, enc); err != nil {
		return "", err
	}
	return it.URL, nil
}
