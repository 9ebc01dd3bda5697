// Command zkserver runs a local Apache ZooKeeper for development and the
// demo: a standalone server or an n-node ensemble on 127.0.0.1, started
// from the Debian-installed ZooKeeper by package testenv. It prints the
// connect string ("127.0.0.1:2181" or "h:p,h:p,h:p") on stdout and runs
// until SIGINT or SIGTERM, then stops the servers (SIGTERM, then SIGKILL
// after 10 s).
//
// Usage:
//
//	zkserver [--dir DIR] [--port 2181] [--tick 2000ms] [--ensemble N]
//
// Every flag can also come from an environment variable ZKCRAWL_<FLAG>
// (ZKCRAWL_DIR, ZKCRAWL_PORT, ZKCRAWL_TICK, ZKCRAWL_ENSEMBLE); a flag on
// the command line wins over the variable.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// envPrefix prefixes the environment variable of every flag.
const envPrefix = "ZKCRAWL_"

func main() {
	os.Exit(run(os.Args[1:]))
}

// options are the parsed flags.
type options struct {
	dir      string
	port     int
	tick     time.Duration
	ensemble int
}

func run(args []string) int {
	opts, err := parseFlags(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkserver: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, opts, logger); err != nil {
		logger.Error("zkserver failed", "err", err)
		return 1
	}
	return 0
}

// parseFlags parses args, filling flags not given on the command line from
// ZKCRAWL_<FLAG> environment variables.
func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("zkserver", pflag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "directory for config, log and data (kept on exit); default a temp dir removed on exit")
	fs.IntVar(&o.port, "port", 2181, "client port on 127.0.0.1 (0 = a free port); ensemble member i gets port+i")
	fs.DurationVar(&o.tick, "tick", 2000*time.Millisecond, "ZooKeeper tickTime; session timeouts may range from 2 to 20 ticks")
	fs.IntVar(&o.ensemble, "ensemble", 1, "number of servers; 1 runs a standalone server")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: zkserver [flags]\n\nRuns a local ZooKeeper and prints its connect string.\n"+
			"Each flag may also be set by the environment variable %s<FLAG>, e.g. %sPORT.\n\n", envPrefix, envPrefix)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var envErr error
	fs.VisitAll(func(f *pflag.Flag) {
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := os.LookupEnv(name)
		if !ok || f.Changed || envErr != nil {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = fmt.Errorf("environment variable %s=%q: %w", name, v, err)
		}
	})
	if envErr != nil {
		return o, envErr
	}
	if o.ensemble < 1 {
		return o, fmt.Errorf("--ensemble=%d: need at least 1 server", o.ensemble)
	}
	if o.port < 0 || o.port+o.ensemble-1 > 65535 {
		return o, fmt.Errorf("--port=%d: must be 0 or a port with room for %d servers", o.port, o.ensemble)
	}
	if o.tick < time.Millisecond {
		return o, fmt.Errorf("--tick=%v: must be at least 1ms", o.tick)
	}
	return o, nil
}

// serve starts the server(s), prints the connect string and blocks until
// ctx ends (or a standalone server exits), then stops them.
func serve(ctx context.Context, o options, logger *slog.Logger) error {
	cfg := testenv.ZKConfig{
		Dir:        o.dir,
		ClientPort: o.port,
		TickTime:   o.tick,
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
