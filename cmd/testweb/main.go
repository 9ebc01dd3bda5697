// Command testweb serves the deterministic synthetic web of package testenv
// on loopback for demos and shell-driven end-to-end tests.
//
//	testweb [--hosts 5] [--pages 50] [--links 8] [--cross 0.2] [--seed 1]
//	        [--features] [--crawl-delay 0s] [--slow-delay 2s] [--large-bytes N]
//	        [--robots-disallow /private/,...] [--robots-status 3=500,...]
//	        [--truth-file F [--ground-truth-depth N] [--scope same_host]
//	        [--obey-robots=true]]
//
// It starts the web, writes the ground truth to --truth-file if given (one
// "status<TAB>depth<TAB>url" line per URL, sorted by URL; status 0 means
// "must not be fetched"), then prints the seed URLs one per line on stdout
// and runs until SIGINT or SIGTERM. Every flag can also come from the
// environment as ZKCRAWL_<FLAG> (internal/cli); a flag on the command line
// wins.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/testenv"
)

const about = `Serves the deterministic synthetic web of package testenv on loopback (one
127.0.0.1 port per virtual host) for demos and shell-driven end-to-end tests.
It writes the ground truth to --truth-file if given (one
"status<TAB>depth<TAB>url" line per URL, sorted; status 0 means "must not be
fetched"), prints the seed URLs one per line on stdout, and runs until SIGINT
or SIGTERM.`

const examples = `  testweb --hosts 10 --pages 100 > seeds.txt &
  testweb --features --truth-file truth.tsv --ground-truth-depth 6 > seeds.txt &`

func main() {
	cli.Main("testweb", func(ctx context.Context, args []string) error {
		return run(ctx, args, os.LookupEnv, os.Stdout, os.Stderr)
	})
}

// run parses args (and ZKCRAWL_* variables through lookupEnv), serves the
// web until ctx ends, and returns the first error.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("testweb", "testweb [--hosts 5] [--pages 50] [--features] [--truth-file F] [flags]", about, examples)
	fs.SetOutput(stderr)
	var cfg testenv.WebConfig
	fs.IntVar(&cfg.Hosts, "hosts", 5, "number of virtual hosts (one loopback port each)")
	fs.IntVar(&cfg.PagesPerHost, "pages", 50, "pages /p/<n> per host")
	fs.IntVar(&cfg.LinksPerPage, "links", 8, "random links per page, besides the chain link")
	fs.Float64Var(&cfg.CrossHostShare, "cross", 0.2, "share (0..1) of random links to another host")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the link graph")
	fs.BoolVar(&cfg.Features, "features", false, "serve the special pages (redirects, traps, errors, non-HTML...)")
	fs.DurationVar(&cfg.CrawlDelay, "crawl-delay", 0, "Crawl-delay written to robots.txt when > 0")
	fs.DurationVar(&cfg.SlowDelay, "slow-delay", testenv.WebDefaultSlowDelay, "delay of /slow.html")
	fs.IntVar(&cfg.LargeBytes, "large-bytes", testenv.WebDefaultLargeBytes, "size in bytes of /large.html")
	fs.StringSliceVar(&cfg.RobotsDisallow, "robots-disallow", nil, "Disallow path prefixes for every host's robots.txt")
	robotsStatus := fs.StringToInt("robots-status", nil, "robots.txt status per host index, e.g. 3=500,4=404")
	truthFile := fs.String("truth-file", "", "write the ground truth to this file")
	truthDepth := fs.Int("ground-truth-depth", -1, "MaxDepth of the ground truth (-1: no limit; needs --truth-file)")
	scope := fs.String("scope", testenv.WebScopeSameHost, "scope of the ground truth: same_host, same_domain or any")
	obeyRobots := fs.Bool("obey-robots", true, "the ground truth obeys robots.txt")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, lookupEnv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usage("unexpected arguments %q", fs.Args())
	}
	log, err := newLogger(stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	cfg.Logger = log
	if len(*robotsStatus) > 0 {
		cfg.RobotsStatus = map[int]int{}
		for k, v := range *robotsStatus {
			h, err := strconv.Atoi(k)
			if err != nil {
				return cli.Usage("--robots-status: host index %q: %v", k, err)
			}
			cfg.RobotsStatus[h] = v
		}
	}
	if fs.Changed("ground-truth-depth") && *truthFile == "" {
		return cli.Usage("--ground-truth-depth needs --truth-file")
	}

	web, err := testenv.StartWeb(ctx, cfg)
	if err != nil {
		return err
	}
	defer web.Close()
	if *truthFile != "" {
		truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: *truthDepth, Scope: *scope, ObeyRobots: *obeyRobots})
		if err != nil {
			return err
		}
		if err := writeTruth(*truthFile, truth); err != nil {
			return err
		}
		log.Info("ground truth written", "file", *truthFile, "urls", len(truth), "max_depth", *truthDepth, "scope", *scope)
	}
	out := bufio.NewWriter(stdout)
	for _, s := range web.Seeds() {
		fmt.Fprintln(out, s)
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write seeds: %w", err)
	}
	log.Info("serving until SIGINT or SIGTERM", "hosts", len(web.Hosts()), "pages", web.Pages())
	<-ctx.Done()
	return web.Close()
}

// writeTruth writes "status\tdepth\turl" lines sorted by URL, atomically
// (temporary file then rename), so a script never reads half a file.
func writeTruth(path string, truth map[string]testenv.WebExpect) error {
	urls := make([]string, 0, len(truth))
	for u := range truth {
		urls = append(urls, u)
	}
	slices.Sort(urls)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("--truth-file %q: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--truth-file %q: %w", path, err)
	}
	w := bufio.NewWriter(tmp)
	for _, u := range urls {
		e := truth[u]
		fmt.Fprintf(w, "%d\t%d\t%s\n", e.Status, e.Depth, u)
	}
	if err := errors.Join(w.Flush(), tmp.Close()); err != nil {
		return fmt.Errorf("--truth-file %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--truth-file %q: %w", path, err)
	}
	return nil
}
