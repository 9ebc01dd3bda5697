// Command seeder creates a crawl in ZooKeeper, writes its config and
// enqueues its seed URLs, each exactly once. See docs/design.md.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/worker"
)

const about = `Creates the crawl NAME in ZooKeeper (root /zkcrawl/NAME) if it does not exist,
writes its config (defaults, overridden by --config FILE), then validates and
normalizes every seed URL and enqueues each exactly once. Seeds come from the
arguments and from --seeds FILE (or - for stdin): one URL per line, blank lines
and lines starting with # ignored. Running it again with the same seeds
enqueues nothing new. A bad seed line is reported with its line number and
reason and does not stop the others.`

const examples = `  seeder --zk 127.0.0.1:2181 --crawl docs https://example.org/
  seeder --zk zk1:2181,zk2:2181,zk3:2181 --crawl news --config news.json --seeds seeds.txt
  ZKCRAWL_ZK=127.0.0.1:2181 ZKCRAWL_CRAWL=docs seeder - < seeds.txt`

func main() { cli.Main("seeder", run) }

// batchSize is how many seeds one Enqueue call posts (one post per shard
// group, written concurrently).
const batchSize = 20000

func run(ctx context.Context, args []string) error {
	return seed(ctx, args, os.LookupEnv, os.Stdin, os.Stdout, os.Stderr)
}

// summary counts what one seeder run did.
type summary struct {
	Enqueued, Duplicates, Rejected int
}

func seed(ctx context.Context, args []string, env func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("seeder", "seeder --zk HOST:PORT[,...] --crawl NAME [--config FILE.json] [--seeds FILE|-] [URL...]", about, examples)
	fs.SetOutput(stderr)
	zkServers := fs.String("zk", "127.0.0.1:2181", "ZooKeeper connect string host:port[,host:port...][/chroot]")
	crawl := fs.String("crawl", "", "crawl name (required); its znodes live under /zkcrawl/NAME")
	cfgFile := fs.String("config", "", "JSON file with crawl settings overriding the defaults (see README, \"Config\")")
	seedsFile := fs.String("seeds", "", "file with one seed URL per line, or - for stdin")
	shards := fs.Int("shards", frontier.DefaultLayout.Shards, "number of ready-queue shards (znode parents), fixed when the crawl is created")
	spread := fs.Int("host-spread", frontier.DefaultLayout.Spread, "shards one host's ready items spread over (1..64; divides --shards); shard groups = shards / host-spread are the unit of ownership, fixed at creation")
	every := fs.Duration("progress-interval", 5*time.Second, "log seeding progress (lines read, enqueued, duplicates, rejected, lines/s) this often on large inputs; 0: never")
	timeout := fs.Duration("timeout", 30*time.Second, "give up when ZooKeeper does not answer within this time")
	zkAuth := cli.ZKFlags(fs)
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, env); err != nil {
		return err
	}
	zkOpts, err := zkAuth()
	if err != nil {
		return err
	}
	log, err := newLogger(stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	if err := cli.CheckZK(*zkServers); err != nil {
		return err
	}
	if *timeout <= 0 {
		return cli.Usage("--timeout %v: must be positive", *timeout)
	}
	root, err := worker.Root(*crawl)
	if err != nil {
		return cli.Usage("--crawl: %v", err)
	}
	var cfgDoc []byte
	if *cfgFile != "" {
		cfgDoc, err = os.ReadFile(*cfgFile)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		if _, err := config.Parse(cfgDoc); err != nil {
			return fmt.Errorf("--config %s: %w", *cfgFile, err)
		}
	}
	var input io.Reader
	switch *seedsFile {
	case "":
	case "-":
		input = stdin
	default:
		f, err := os.Open(*seedsFile)
		if err != nil {
			return fmt.Errorf("--seeds: %w", err)
		}
		defer f.Close()
		input = f
	}
	if input == nil && fs.NArg() == 0 {
		return cli.Usage("no seeds: give URLs as arguments or --seeds FILE")
	}

	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client, err := coord.Connect(cctx, *zkServers, append(zkOpts, coord.WithLogger(log))...)
	if err != nil {
		return cli.ZKConnectError(*zkServers, *timeout, err)
	}
	defer client.Close()
	front, created, err := frontier.Create(cctx, client, root, frontier.Layout{Shards: *shards, Spread: *spread})
	if err != nil {
		return fmt.Errorf("create crawl %q: %w", *crawl, err)
	}
	if created {
		log.Info("crawl created", "crawl", *crawl, "root", root, "shards", *shards, "host_spread", *spread)
	} else {
		warnFixedLayout(stderr, fs, *crawl, front.Layout())
	}
	if err := writeConfig(cctx, client, root, cfgDoc, log); err != nil {
		return err
	}
	if !created {
		n, err := front.LoadKnown(cctx)
		if err != nil {
			return fmt.Errorf("read the seen-set of crawl %q: %w", *crawl, err)
		}
		log.Info("crawl exists: seeds it already holds count as duplicates", "crawl", *crawl, "known_urls", n)
	}
	if data, _, err := coord.Config(client, root).Read(cctx); err == nil {
		if cfg, err := config.Parse(data); err == nil && cfg.NeedsContactUA() {
			fmt.Fprintf(stderr, "note: %s\n", config.UserAgentHint)
		}
	}
	if note, _, err := coord.Drain(client, root).Read(cctx); err == nil {
		fmt.Fprintf(stderr, "note: crawl %s has a pending drain (%s): crawlers exit at once until 'crawlctl --crawl %s drain --cancel'\n", *crawl, note, *crawl)
	}

	var sum summary
	started, lastReport, lines := time.Now(), time.Now(), 0
	report := func() {
		if *every <= 0 || time.Since(lastReport) < *every {
			return
		}
		lastReport = time.Now()
		log.Info("seeding", "lines", lines, "enqueued", sum.Enqueued, "duplicates", sum.Duplicates, "rejected", sum.Rejected,
			"lines_per_s", int(float64(lines)/time.Since(started).Seconds()))
	}
	batch := make([]frontier.Item, 0, batchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := front.Enqueue(ctx, batch)
		sum.Enqueued += res.Posted
		sum.Duplicates += res.Duplicates
		batch = batch[:0]
		return err
	}
	add := func(source string, raw string) error {
		u, err := frontier.Normalize(raw)
		if err != nil {
			sum.Rejected++
			fmt.Fprintf(stderr, "rejected %s: %v\n", source, err)
			return nil
		}
		batch = append(batch, frontier.Item{URL: u})
		if len(batch) == batchSize {
			return flush()
		}
		return nil
	}
	for i, a := range fs.Args() {
		if err := add(fmt.Sprintf("argument %d %q", i+1, a), a); err != nil {
			return fmt.Errorf("enqueue seeds: %w", err)
		}
	}
	if input != nil {
		sc := bufio.NewScanner(input)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			lines = n
			report()
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := add(fmt.Sprintf("%s line %d %q", *seedsFile, n, line), line); err != nil {
				return fmt.Errorf("enqueue seeds: %w", err)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read seeds %s: %w", *seedsFile, err)
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("enqueue seeds: %w", err)
	}
	fmt.Fprintf(stdout, "crawl %s: %d enqueued, %d duplicates, %d rejected\n", *crawl, sum.Enqueued, sum.Duplicates, sum.Rejected)
	if sum.Enqueued+sum.Duplicates == 0 {
		if sum.Rejected > 0 {
			return fmt.Errorf("no valid seed: all %d rejected (see the lines above)", sum.Rejected)
		}
		return fmt.Errorf("no seeds: --seeds %s holds no URL (only blank or # lines)", *seedsFile)
	}
	return nil
}

// warnFixedLayout tells the operator that --shards / --host-spread, given
// for a crawl that already exists, were ignored: the layout is fixed when
// the crawl is created (docs/design.md "Znode layout").
func warnFixedLayout(stderr io.Writer, fs *pflag.FlagSet, crawl string, have frontier.Layout) {
	for _, f := range []struct {
		name string
		have int
	}{{"shards", have.Shards}, {"host-spread", have.Spread}} {
		flag := fs.Lookup(f.name)
		if flag != nil && flag.Changed && flag.Value.String() != fmt.Sprint(f.have) {
			fmt.Fprintf(stderr, "note: --%s %s ignored: crawl %s already exists with --%s %d, fixed when it was created\n",
				f.name, flag.Value.String(), crawl, f.name, f.have)
		}
	}
}

// writeConfig writes R/config: the given document (validated, merged over
// the defaults) replaces whatever is there; with no document, a missing
// config is created with the defaults and an existing one is left alone.
func writeConfig(ctx context.Context, client *coord.Client, root string, doc []byte, log *slog.Logger) error {
	store := coord.Config(client, root)
	_, version, err := store.Read(ctx)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		version = -1
	case err != nil:
		return fmt.Errorf("read config: %w", err)
	case doc == nil:
		return nil // keep the existing config
	}
	cfg, err := config.Parse(doc)
	if err != nil {
		return err
	}
	v, err := store.Write(ctx, cfg.Encode(), version)
	if err != nil {
		return fmt.Errorf("write config %s: %w", store, err)
	}
	log.Info("config written", "znode", store.String(), "version", v)
	return nil
}
