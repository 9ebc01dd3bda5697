package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

// --help for the tool and per command, and usage errors (exit status 2)
// that need no ZooKeeper.
func TestHelpAndUsage(t *testing.T) {
	ctx := context.Background()
	r := runCtl(ctx, nil, nil, "--help")
	if !errors.Is(r.err, pflag.ErrHelp) || !strings.Contains(r.stderr, "Commands:") || !strings.Contains(r.stderr, "requeue-failed") {
		t.Errorf("--help: %v", r)
	}
	r = runCtl(ctx, nil, nil, "help")
	if r.err != nil || !strings.Contains(r.stdout, "Exit status") {
		t.Errorf("help: %v", r)
	}
	for cmd, want := range map[string]string{
		"status": "--rate-window", "config get": "version", "config set": "compare-and-set",
		"pause": "paused=true", "resume": "paused=false", "requeue-failed": "--all", "drain": "--cancel",
	} {
		args := append(strings.Fields(cmd), "--help")
		r := runCtl(ctx, nil, nil, args...)
		if !errors.Is(r.err, pflag.ErrHelp) || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--zk") {
			t.Errorf("%s --help: want %q and the global flags: %v", cmd, want, r)
		}
		r = runCtl(ctx, nil, nil, append([]string{"help"}, strings.Fields(cmd)...)...)
		if r.err != nil || !strings.Contains(r.stdout, want) {
			t.Errorf("help %s: %v", cmd, r)
		}
	}

	for _, args := range [][]string{
		{},                                // no command
		{"--crawl", "c", "frobnicate"},    // unknown command
		{"status"},                        // no --crawl
		{"--crawl", "bad/name", "status"}, // bad crawl name
		{"--crawl", "c", "config"},        // no subcommand
		{"--crawl", "c", "config", "put"}, // unknown subcommand
		{"--crawl", "c", "config", "set"}, // nothing to set
		{"--crawl", "c", "config", "set", "worker_concurrency"}, // no '='
		{"--crawl", "c", "config", "set", "--file", "x.json", "a=1"},
		{"--crawl", "c", "config", "set", "paused=true", "paused=false"},
		{"--crawl", "c", "status", "--nosuchflag"},
		{"--crawl", "c", "status", "extra"},
		{"--crawl", "c", "requeue-failed"},
		{"--crawl", "c", "requeue-failed", "--all", "s000-u-0000000001"},
		{"--crawl", "c", "drain", "--cancel", "--wait"},
	} {
		if r := runCtl(ctx, nil, nil, args...); !cli.IsUsage(r.err) {
			t.Errorf("crawlctl %q: want a usage error (exit 2), got %v", args, r)
		}
	}
}

// Unknown keys are rejected before anything is read or written, all named
// at once; flags may come from the environment (here the crawl name and a
// ZooKeeper address nothing listens on, which is never dialled).
func TestConfigSetUnknownKeysFromEnv(t *testing.T) {
	env := map[string]string{"ZKCRAWL_CRAWL": "c", "ZKCRAWL_ZK": "127.0.0.1:1"}
	r := runCtl(context.Background(), env, nil, "config", "set", "bogus=1", "worker_concurrency=2", "frob=x")
	if r.err == nil || cli.IsUsage(r.err) || !errors.Is(r.err, config.ErrInvalid) {
		t.Fatalf("want a config error (exit 1): %v", r)
	}
	for _, k := range []string{`"bogus"`, `"frob"`} {
		if !strings.Contains(r.err.Error(), k) {
			t.Errorf("error does not name %s: %v", k, r.err)
		}
	}
	if strings.Contains(r.err.Error(), `"worker_concurrency"`) && !strings.Contains(r.err.Error(), "known keys") {
		t.Errorf("error names a known key as unknown: %v", r.err)
	}
}
