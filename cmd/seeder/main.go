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
)

const about = `Creates the crawl NAME in ZooKeeper (root /zkcrawl/NAME) if it does not exist,
writes its config (defaults, overridden by --config FILE), then validates and
normalizes every seed URL and enqueues each exactly once. Seeds come from the
arguments and from --seeds FILE (or - for stdin): one URL per line, blank lines
and lines starting with # ignored. Running it again with the same seeds
enqueues nothing new. A bad seed line is reported with its line number and
reason and does not stop the others.

--revisit-from OLD posts the recrawl schedule entries of the crawl OLD (each
fetched URL with its last capture, docs/design.md "Recrawl") into NAME, due
at once, so that NAME's first pass over them is a recrawl; seeds are then
optional. An OLD that does not exist or has another layout is refused, nothing
written.`

const examples = `  seeder --zk 127.0.0.1:2181 --crawl docs https://example.org/
  seeder --zk zk1:2181,zk2:2181,zk3:2181 --crawl news --config news.json --seeds seeds.txt
  ZKCRAWL_ZK=127.0.0.1:2181 ZKCRAWL_CRAWL=docs seeder - < seeds.txt
  seeder --crawl docs --revisit-cdxj old-crawl.cdxj   # the crawl's config sets dedup_index`

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

// seedJob is what one seeder run was asked to do, its flags checked.
type seedJob struct {
	fs        *pflag.FlagSet // parsed; its arguments are seeds
	zkServers string
	zkCfg     coord.Config  // --zk-auth, --zk-tls-ca
	timeout   time.Duration // bound on the ZooKeeper setup before seeding
	crawl     string
	root      string // the crawl's root znode, /zkcrawl/NAME
	layout    frontier.Layout
	keyAsked  string // politeness key named by --politeness-key or --config; "" when neither
	cfgDoc    []byte // --config FILE's document, validated; nil without --config
	seedsFile string // --seeds: a path, "-" for stdin, "" for none
	// revisitFrom names the old crawl whose schedule entries are posted
	// (--revisit-from); "" none.
	revisitFrom string
	every       time.Duration
	log         *slog.Logger
	cdxj        []string // --revisit-cdxj files (revisitcdxj.go)
}

// seed runs the seeder with args, env for flag defaults from the
// environment (ZKCRAWL_*), stdin for --seeds -, the summary line on stdout
// and logs, rejected lines and notes on stderr.
func seed(ctx context.Context, args []string, env func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	job, err := parseSeedFlags(args, env, stderr)
	if err != nil {
		return err
	}
	input, closeInput, err := openSeeds(job.seedsFile, stdin)
	if err != nil {
		return err
	}
	defer closeInput()
	if input == nil && job.fs.NArg() == 0 && len(job.cdxj) == 0 && job.revisitFrom == "" {
		return cli.Usage("no seeds: give URLs as arguments or --seeds FILE")
	}

	cctx, cancel := context.WithTimeout(ctx, job.timeout)
	defer cancel()
	zkCfg := job.zkCfg
	zkCfg.Logger = job.log
	client, err := coord.Connect(cctx, job.zkServers, zkCfg)
	if err != nil {
		return cli.ZKConnectError(job.zkServers, job.timeout, err)
	}
	defer client.Close()
	index, err := job.cdxjIndex(cctx, client)
	if err != nil {
		return err
	}
	var old *frontier.Frontier
	if job.revisitFrom != "" {
		if old, err = openRevisitFrom(cctx, client, job.revisitFrom, job.crawl); err != nil {
			if index != nil {
				index.Close()
			}
			return err
		}
	}
	front, err := job.prepareCrawl(cctx, client, stderr)
	if err != nil {
		if index != nil {
			index.Close()
		}
		return err
	}
	if err := job.importRevisitCDXJ(ctx, index, stdout, stderr); err != nil || (input == nil && job.fs.NArg() == 0 && old == nil) {
		return err
	}
	if old != nil {
		n, err := revisitFrom(ctx, client, old, front, job.root)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "crawl %s: %d schedule entries from crawl %s, due at once\n", job.crawl, n, job.revisitFrom)
		if input == nil && job.fs.NArg() == 0 {
			return nil
		}
	}

	sum, err := job.enqueueSeeds(ctx, front, input, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "crawl %s: %d enqueued, %d duplicates, %d rejected\n", job.crawl, sum.Enqueued, sum.Duplicates, sum.Rejected)
	if sum.Enqueued+sum.Duplicates == 0 {
		if sum.Rejected > 0 {
			return fmt.Errorf("no valid seed: all %d rejected (see the lines above)", sum.Rejected)
		}
		return fmt.Errorf("no seeds: --seeds %s holds no URL (only blank or # lines)", job.seedsFile)
	}
	return nil
}

// parseSeedFlags parses and checks the seeder's flags, and reads and
// validates the --config document. Bad usage is a cli.Usage error.
func parseSeedFlags(args []string, env func(string) (string, bool), stderr io.Writer) (*seedJob, error) {
	fs := cli.NewFlagSet("seeder", "seeder --zk HOST:PORT[,...] --crawl NAME [--config FILE.json] [--seeds FILE|-] [--revisit-from OLD] [URL...]", about, examples)
	fs.SetOutput(stderr)
	zkServers := fs.String("zk", "127.0.0.1:2181", "ZooKeeper connect string host:port[,host:port...][/chroot]")
	crawl := fs.String("crawl", "", "crawl name (required); its znodes live under /zkcrawl/NAME")
	cfgFile := fs.String("config", "", "JSON file with crawl settings overriding the defaults (see README, \"Config\")")
	seedsFile := fs.String("seeds", "", "file with one seed URL per line, or - for stdin")
	shards := fs.Int("shards", frontier.DefaultLayout.Shards, "number of ready-queue shards (znode parents), fixed when the crawl is created")
	spread := fs.Int("host-spread", frontier.DefaultLayout.Spread, "shards one host's ready items spread over (1..64; divides --shards); shard groups = shards / host-spread are the unit of ownership, fixed at creation")
	polKey := fs.String("politeness-key", frontier.KeyHost, "what one politeness budget (rate, in-flight cap, per-host quotas) covers and so what chooses a URL's owner: host, domain (registrable domain, Public Suffix List) or ip (the host name's address: virtual hosts on one server share it); fixed at creation (also the key politeness_key of --config)")
	revisit := fs.String("revisit-from", "", "post the recrawl schedule entries of this old crawl (URLs with their last capture) into the new one, due at once")
	every := fs.Duration("progress-interval", 5*time.Second, "log seeding progress (lines read, enqueued, duplicates, rejected, lines/s) this often on large inputs; 0: never")
	timeout := fs.Duration("timeout", 30*time.Second, "give up when ZooKeeper does not answer within this time")
	cdxj := fs.StringSlice("revisit-cdxj", nil, "CDXJ index FILE(s) of earlier captures (pywb/warcio.js form; repeat the flag or separate with commas) whose status-200 responses are entered in the crawl's digest index (config dedup_index, required), so their payloads are written as revisits")
	zkAuth := cli.ZKFlags(fs)
	newLogger := cli.LogFlags(fs)
	if err := cli.Parse(fs, args, env); err != nil {
		return nil, err
	}
	job := &seedJob{fs: fs, zkServers: *zkServers, timeout: *timeout, crawl: *crawl,
		layout: frontier.Layout{Shards: *shards, Spread: *spread}, seedsFile: *seedsFile, every: *every, cdxj: *cdxj,
		revisitFrom: *revisit}
	var err error
	if job.zkCfg, err = zkAuth(); err != nil {
		return nil, err
	}
	if job.log, err = newLogger(stderr); err != nil {
		return nil, cli.Usage("%v", err)
	}
	if err := cli.CheckZK(*zkServers); err != nil {
		return nil, err
	}
	for _, f := range *cdxj {
		if _, err := os.Stat(f); err != nil {
			return nil, cli.Usage("--revisit-cdxj: %v", err)
		}
	}
	if *timeout <= 0 {
		return nil, cli.Usage("--timeout %v: must be positive", *timeout)
	}
	if job.root, err = coord.Root(*crawl); err != nil {
		return nil, cli.Usage("--crawl: %v", err)
	}
	if *cfgFile != "" {
		if job.cfgDoc, err = os.ReadFile(*cfgFile); err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		cfg, err := config.Parse(job.cfgDoc)
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", *cfgFile, err)
		}
		job.keyAsked = cfg.PolitenessKey
	}
	if fs.Changed("politeness-key") {
		if job.keyAsked != "" && job.keyAsked != *polKey {
			return nil, cli.Usage("--politeness-key %s: --config %s says politeness_key %q", *polKey, *cfgFile, job.keyAsked)
		}
		job.keyAsked = *polKey
	}
	if err := frontier.ValidateKey(job.keyAsked); err != nil {
		return nil, cli.Usage("--politeness-key: %v", err)
	}
	job.layout.PolitenessKey = job.keyAsked
	return job, nil
}

// openSeeds opens the --seeds input: nil for "" (seeds from the arguments
// only), stdin for "-", else the file, which the returned func closes.
func openSeeds(name string, stdin io.Reader) (io.Reader, func(), error) {
	switch name {
	case "":
		return nil, func() {}, nil
	case "-":
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("--seeds: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// prepareCrawl creates the crawl if it does not exist, writes its config,
// loads the URLs an existing crawl already knows (so they count as
// duplicates) and notes on stderr what the operator should know: layout
// flags ignored, a missing contact URL in the User-Agent, a pending drain.
func (job *seedJob) prepareCrawl(cctx context.Context, client *coord.Client, stderr io.Writer) (*frontier.Frontier, error) {
	log, root := job.log, job.root
	front, created, err := frontier.Create(cctx, client, root, job.layout)
	if err != nil {
		return nil, fmt.Errorf("create crawl %q: %w", job.crawl, err)
	}
	if created {
		log.Info("crawl created", "crawl", job.crawl, "root", root, "shards", job.layout.Shards, "host_spread", job.layout.Spread,
			"politeness_key", job.layout.KeyKind())
	} else {
		warnFixedLayout(stderr, job.fs, job.crawl, front.Layout())
		if err := front.Layout().CheckKey(job.keyAsked); err != nil {
			return nil, fmt.Errorf("crawl %q exists: %w; nothing written", job.crawl, err)
		}
	}
	if err := writeConfig(cctx, client, root, job.cfgDoc, log); err != nil {
		return nil, err
	}
	if !created {
		n, err := front.LoadKnown(cctx)
		if err != nil {
			return nil, fmt.Errorf("read the seen-set of crawl %q: %w", job.crawl, err)
		}
		log.Info("crawl exists: seeds it already holds count as duplicates", "crawl", job.crawl, "known_urls", n)
	}
	if data, _, err := coord.Store(client, root, coord.ConfigNode).Read(cctx); err == nil {
		if cfg, err := config.Parse(data); err == nil && cfg.NeedsContactUA() {
			fmt.Fprintf(stderr, "note: %s\n", config.UserAgentHint)
		}
	}
	if note, _, err := coord.Store(client, root, coord.DrainNode).Read(cctx); err == nil {
		fmt.Fprintf(stderr, "note: crawl %s has a pending drain (%s): crawlers exit at once until 'crawlctl --crawl %s drain --cancel'\n", job.crawl, note, job.crawl)
	}
	return front, nil
}

// enqueueSeeds normalizes and enqueues the seeds of the arguments, then of
// input (nil: none), in batches of batchSize. A seed that does not
// normalize is reported on stderr and counted as rejected; the error is
// the first failed Enqueue or input read.
func (job *seedJob) enqueueSeeds(ctx context.Context, front *frontier.Frontier, input io.Reader, stderr io.Writer) (summary, error) {
	b := &seedBatcher{front: front, stderr: stderr, batch: make([]frontier.Item, 0, batchSize)}
	progress := job.progress(b)
	for i, a := range job.fs.Args() {
		if err := b.add(ctx, fmt.Sprintf("argument %d %q", i+1, a), a); err != nil {
			return b.sum, fmt.Errorf("enqueue seeds: %w", err)
		}
	}
	if input != nil {
		sc := bufio.NewScanner(input)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			progress(n)
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := b.add(ctx, fmt.Sprintf("%s line %d %q", job.seedsFile, n, line), line); err != nil {
				return b.sum, fmt.Errorf("enqueue seeds: %w", err)
			}
		}
		if err := sc.Err(); err != nil {
			return b.sum, fmt.Errorf("read seeds %s: %w", job.seedsFile, err)
		}
	}
	if err := b.flush(ctx); err != nil {
		return b.sum, fmt.Errorf("enqueue seeds: %w", err)
	}
	return b.sum, nil
}

// progress returns the func enqueueSeeds calls with the number of lines
// read so far: it logs a progress line at most once every job.every.
func (job *seedJob) progress(b *seedBatcher) func(lines int) {
	started, lastReport := time.Now(), time.Now()
	return func(lines int) {
		if job.every <= 0 || time.Since(lastReport) < job.every {
			return
		}
		lastReport = time.Now()
		job.log.Info("seeding", "lines", lines, "enqueued", b.sum.Enqueued, "duplicates", b.sum.Duplicates, "rejected", b.sum.Rejected,
			"lines_per_s", int(float64(lines)/time.Since(started).Seconds()))
	}
}

// seedBatcher collects normalized seeds and enqueues them batchSize at a
// time, counting the outcome in sum.
type seedBatcher struct {
	front  *frontier.Frontier
	stderr io.Writer // rejected seeds
	batch  []frontier.Item
	sum    summary
}

// add normalizes raw, from source (as the rejection line names it), and
// adds it to the batch, enqueueing the batch when it is full. A seed that
// does not normalize is reported and counted, not an error.
func (b *seedBatcher) add(ctx context.Context, source, raw string) error {
	u, err := frontier.Normalize(raw)
	if err != nil {
		b.sum.Rejected++
		fmt.Fprintf(b.stderr, "rejected %s: %v\n", source, err)
		return nil
	}
	b.batch = append(b.batch, frontier.Item{URL: u})
	if len(b.batch) == batchSize {
		return b.flush(ctx)
	}
	return nil
}

// flush enqueues the batch, if any, and empties it.
func (b *seedBatcher) flush(ctx context.Context) error {
	if len(b.batch) == 0 {
		return nil
	}
	res, err := b.front.Enqueue(ctx, b.batch)
	b.sum.Enqueued += res.Posted
	b.sum.Duplicates += res.Duplicates
	b.batch = b.batch[:0]
	return err
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
	store := coord.Store(client, root, coord.ConfigNode)
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
