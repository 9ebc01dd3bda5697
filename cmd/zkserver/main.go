// Command zkserver runs a local Apache ZooKeeper for development and the
// demo: a standalone server or an n-node ensemble on 127.0.0.1, started
// from the Debian-installed ZooKeeper by package testenv. It prints the
// connect string ("127.0.0.1:2181" or "h:p,h:p,h:p") on stdout and runs
// until SIGINT or SIGTERM, then stops the servers (SIGTERM, then SIGKILL
// after 10 s).
// Every flag can also come from an environment variable ZKCRAWL_<FLAG>; a
// flag on the command line wins. Run `zkserver --help` for the flags.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/testenv"
)

const about = `Runs a local Apache ZooKeeper for development and the demo: a standalone
server or an N-node ensemble on 127.0.0.1, from Debian's zookeeper package
(installed by make deps). It prints the connect string on stdout and runs
until SIGINT or SIGTERM, then stops the servers.`

const examples = `  zkserver                                  # standalone on 127.0.0.1:2181, data in a temp dir
  zkserver --port 0 --tick 200ms            # a free port; session timeouts 0.4 s..4 s (quick tests)
  zkserver --ensemble 3 --dir /tmp/zk3      # a 3-node quorum on ports 2181..2183, data kept
  zkserver --force-sync                     # fsync every write, as in production (benchmarks)`

func main() { cli.Main("zkserver", run) }

// options are the parsed flags.
type options struct {
	dir       string
	port      int
	tick      time.Duration
	ensemble  int
	forceSync bool
}

func run(ctx context.Context, args []string) error {
	opts, newLogger, err := parseFlags(args, os.LookupEnv)
	if err != nil {
		return err
	}
	logger, err := newLogger(os.Stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	return serve(ctx, opts, logger)
}

// parseFlags parses args, filling flags not given on the command line from
// ZKCRAWL_<FLAG> environment variables.
func parseFlags(args []string, env func(string) (string, bool)) (options, func(io.Writer) (*slog.Logger, error), error) {
	var o options
	fs := cli.NewFlagSet("zkserver", "zkserver [--dir DIR] [--port 2181] [--tick 2000ms] [--ensemble N] [--force-sync]", about, examples)
	fs.StringVar(&o.dir, "dir", "", "directory for config, log and data (kept on exit); default a temp dir removed on exit")
	fs.IntVar(&o.port, "port", 2181, "client port on 127.0.0.1 (0 = a free port); ensemble member i gets port+i")
	fs.DurationVar(&o.tick, "tick", 2000*time.Millisecond, "ZooKeeper tickTime; session timeouts may range from 2 to 20 ticks")
	fs.IntVar(&o.ensemble, "ensemble", 1, "number of servers; 1 runs a standalone server")
	fs.BoolVar(&o.forceSync, "force-sync", false, "fsync the transaction log before each write is acknowledged (forceSync=yes, as production ZooKeeper runs; benchmarks use it); off, a crash of the machine can lose acknowledged writes")
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, env); err != nil {
		return o, nil, err
	}
	switch {
	case fs.NArg() > 0:
		return o, nil, cli.Usage("unexpected arguments %q", fs.Args())
	case o.ensemble < 1:
		return o, nil, cli.Usage("--ensemble=%d: need at least 1 server", o.ensemble)
	case o.port < 0 || o.port+o.ensemble-1 > 65535:
		return o, nil, cli.Usage("--port=%d: must be 0 or a port with room for %d servers", o.port, o.ensemble)
	case o.tick < time.Millisecond:
		return o, nil, cli.Usage("--tick=%v: must be at least 1ms", o.tick)
	}
	return o, newLogger, nil
}

// serve starts the server(s), prints the connect string and blocks until
// ctx ends (or a standalone server exits), then stops them.
func serve(ctx context.Context, o options, logger *slog.Logger) error {
	cfg := testenv.ZKConfig{
		Dir:        o.dir,
		ClientPort: o.port,
		TickTime:   o.tick,
		ForceSync:  o.forceSync,
		Logger:     logger,
	}
	if o.ensemble == 1 {
		s, err := testenv.StartZooKeeper(ctx, cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		fmt.Println(s.Addr())
		logger.Info("zookeeper serving", "connect", s.Addr(), "dir", s.Dir(), "log", s.LogPath())
		if err := s.Wait(ctx); err == nil {
			return fmt.Errorf("zookeeper exited; log tail:\n%s", s.LogTail(20))
		}
		logger.Info("stopping zookeeper")
		return s.Stop()
	}
	e, err := testenv.StartEnsemble(ctx, o.ensemble, cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Println(e.ConnString())
	logger.Info("zookeeper ensemble serving", "connect", e.ConnString(), "dir", e.Dir())
	<-ctx.Done()
	logger.Info("stopping zookeeper ensemble")
	var firstErr error
	for _, s := range e.Servers() {
		if err := s.Stop(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}
