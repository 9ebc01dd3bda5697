package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/worker"
)

var drainCommand = &command{
	name: "drain",
	args: "[--wait] | --cancel",
	about: `Asks every worker of the crawl to stop: it creates the persistent znode
R/drain, which each worker watches. A worker that sees it claims nothing new,
finishes the URLs it has in flight and exits with status 0. The queue is
kept: nothing is lost, and the crawl continues when workers start again.

The drain request stays until 'crawlctl drain --cancel' deletes it; a worker
started while it exists exits at once. So: drain, wait for the workers to
exit (--wait, or watch 'crawlctl status'), do the maintenance, then
drain --cancel and start the workers again.`,
	examples: `  crawlctl --crawl docs drain --wait
  crawlctl --crawl docs drain --cancel`,
	setup: func(fs *pflag.FlagSet) runFunc {
		cancelDrain := fs.Bool("cancel", false, "delete the drain request, so workers can be started again")
		wait := fs.Bool("wait", false, "wait until every worker has exited (until Ctrl-C)")
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) > 0 {
				return cli.Usage("drain takes no arguments, got %q", args)
			}
			if *cancelDrain && *wait {
				return cli.Usage("drain: --cancel and --wait do not go together")
			}
			// Fail early on a crawl that does not exist rather than create
			// a lone drain znode for it.
			if _, err := c.openQueue(ctx); err != nil {
				return err
			}
			if *cancelDrain {
				return c.cancelDrain(ctx)
			}
			if err := c.requestDrain(ctx); err != nil {
				return err
			}
			if *wait {
				return c.waitWorkersGone(ctx)
			}
			return nil
		}
	},
}

func (c *ctl) requestDrain(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	store := coord.Store(c.client, c.root, coord.DrainNode)
	note, _, err := store.Read(cctx)
	switch {
	case err == nil:
		fmt.Fprintf(c.stdout(), "drain already requested (%s): workers finish their in-flight URLs and exit\n", note)
		return nil
	case !errors.Is(err, coord.ErrNotFound):
		return fmt.Errorf("read drain marker %s: %w", store, err)
	}
	host, _ := os.Hostname()
	data := fmt.Sprintf("drain requested by crawlctl at %s (host %s, pid %d)", time.Now().UTC().Format(time.RFC3339), host, os.Getpid())
	if _, err := store.Write(cctx, []byte(data), -1); err != nil {
		return fmt.Errorf("create drain marker %s: %w", store, err)
	}
	fmt.Fprintf(c.stdout(), "drain requested (%s): workers finish their in-flight URLs and exit; undo with 'crawlctl drain --cancel'\n", store)
	return nil
}

// cancelDrain deletes R/drain.
func (c *ctl) cancelDrain(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	_, err := coord.Store(c.client, c.root, coord.DrainNode).Delete(cctx, nil)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		fmt.Fprintln(c.stdout(), "no drain was requested: nothing to cancel")
		return nil
	case err != nil:
		return fmt.Errorf("cancel the drain request: %w", err)
	}
	fmt.Fprintln(c.stdout(), "drain cancelled: workers started from now on crawl normally (workers that already exited stay stopped)")
	return nil
}

// waitWorkersGone polls R/workers until it is empty or ctx ends, then waits
// (bounded by --timeout) until the processes of the workers that ran on this
// host (same hostname in their status node) have exited too: a worker's
// status node goes with its ZooKeeper session, a moment before its process
// ends. Workers on other hosts are reported as having left the crawl.
func (c *ctl) waitWorkersGone(ctx context.Context) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	last := -1
	seen := map[string]worker.Status{}
	for {
		cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
		ids, statuses, err := coord.Members(cctx, c.client, c.root)
		cancel()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("list workers: %w", err)
		}
		if err == nil {
			for _, id := range ids {
				var st worker.Status
				if json.Unmarshal(statuses[id], &st) == nil {
					seen[id] = st
				}
			}
			if len(ids) == 0 {
				return c.reportExited(ctx, seen)
			}
			if len(ids) != last {
				fmt.Fprintf(c.stdout(), "waiting for %d worker(s) to exit: %v\n", len(ids), ids)
				last = len(ids)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting: %d worker(s) still running: %w", last, ctx.Err())
		case <-t.C:
		}
	}
}

// reportExited waits for the local processes among the workers seen and
// says what is known: local workers exited, remote ones left the crawl.
func (c *ctl) reportExited(ctx context.Context, seen map[string]worker.Status) error {
	host, _ := os.Hostname()
	var local []int
	remote := 0
	for _, st := range seen {
		switch {
		case st.Host == host && st.PID > 0 && st.PID != os.Getpid():
			local = append(local, st.PID)
		case st.Host != host:
			remote++
		}
	}
	wctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	if left := waitPIDsGone(wctx, local); len(left) > 0 {
		return fmt.Errorf("every worker left the crawl, but process(es) %v on this host still run after --timeout %v", left, c.g.timeout)
	}
	if remote > 0 {
		fmt.Fprintf(c.stdout(), "every worker has left the crawl (%d on this host exited; %d on other hosts left ZooKeeper and exit right after)\n", len(local), remote)
		return nil
	}
	fmt.Fprintln(c.stdout(), "every worker has exited")
	return nil
}

// waitPIDsGone polls kill(pid, 0) (POSIX: existence check, no signal sent)
// until none of pids exists or ctx ends, and returns those still running.
func waitPIDsGone(ctx context.Context, pids []int) []int {
	for {
		var left []int
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(50 * time.Millisecond):
		}
		pids = left
	}
}
