// Command crawlctl is zkcrawl's operator tool: it shows a crawl's status,
// reads and changes its live config, pauses and resumes it, requeues dead
// letters and drains the workers. It talks only to ZooKeeper (the znode
// layout of docs/design.md); workers pick every change up through their
// watches.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

const toolUsage = "crawlctl --zk HOST:PORT[,...] --crawl NAME <command> [args]"

const toolAbout = `Operator tool for a zkcrawl crawl. It reads and writes the crawl's znodes in
ZooKeeper (root /zkcrawl/NAME); the workers see every change within a moment
through their watches, so nothing needs restarting.

Commands:
  status           workers, queue depth, claims in flight, failed count,
                   pages per second, config version, paused/draining/done
  config get       print the config JSON stored in ZooKeeper
  config set       change config keys (key=value ...) or replace it (--file)
  pause            stop every worker from claiming new URLs (config paused=true)
  resume           let the workers claim again (config paused=false)
  recrawl --now    make scheduled recrawls due at once (--match REGEX: some)
  requeue-failed   move dead letters (URLs that failed every attempt) back
                   to the queue with their attempts reset
  drain            ask every worker to finish its in-flight URLs and exit
  list             the crawls under /zkcrawl (no --crawl needed)
  delete NAME      delete a crawl's znodes (refused while workers are live)
  serve            a live web dashboard with the same controls
  report DIR...    Heritrix-style crawl reports from the workers' crawl logs
  package          write the crawl's WARC files, index and page list as
                   one WACZ file for ReplayWeb.page, or check one
                   (--verify); needs the workers' folders, not ZooKeeper
  help [COMMAND]   show this help or a command's help

Global flags go before or after the command. Run 'crawlctl COMMAND --help'
(e.g. 'crawlctl config set --help') for a command's own flags and examples.

Exit status: 0 success, 1 error (including a rejected config or a
concurrent config change), 2 bad usage.`

const toolExamples = `  crawlctl --zk 127.0.0.1:2181 --crawl docs status
  crawlctl --zk 127.0.0.1:2181 --crawl docs status --watch
  export ZKCRAWL_ZK=zk1:2181,zk2:2181,zk3:2181 ZKCRAWL_CRAWL=news
  crawlctl config set per_host_rate_per_s=0.5 worker_concurrency=64
  crawlctl pause
  crawlctl requeue-failed --all
  crawlctl drain --wait
  crawlctl --crawl news package --out news.wacz /data/w1 /data/w2`

func main() { cli.Main("crawlctl", run) }

func run(ctx context.Context, args []string) error {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, env: os.LookupEnv}
	return a.run(ctx, args)
}

// app is one crawlctl invocation's environment, so tests can run commands
// in-process with their own streams and environment.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) (string, bool)
	// beforeWrite, when set, runs between a config read and its
	// compare-and-set write; tests use it to race a concurrent change.
	beforeWrite func()
	// isTTY, when set, replaces isTerminal (tests pose as a terminal).
	isTTY func(io.Writer) bool
}

// terminal reports whether w is a terminal (status --watch redraws there).
func (a *app) terminal(w io.Writer) bool {
	if a.isTTY != nil {
		return a.isTTY(w)
	}
	return isTerminal(w)
}

// globals are the flags every command takes.
type globals struct {
	zk        string
	crawl     string
	timeout   time.Duration
	newLogger func(io.Writer) (*slog.Logger, error)
	zkAuth    func() (coord.Config, error)
}

func addGlobals(fs *pflag.FlagSet) *globals {
	g := &globals{}
	fs.StringVar(&g.zk, "zk", "127.0.0.1:2181", "ZooKeeper connect string host:port[,host:port...][/chroot]")
	fs.StringVar(&g.crawl, "crawl", "", "crawl name (required), as given to seeder; its znodes live under /zkcrawl/NAME")
	fs.DurationVar(&g.timeout, "timeout", 5*time.Second, "give up when ZooKeeper does not answer within this time")
	g.zkAuth = cli.ZKFlags(fs)
	g.newLogger = cli.LogFlags(fs)
	// An operator tool prints its results on stdout; ZooKeeper session
	// chatter at info level would only clutter the terminal.
	if f := fs.Lookup("log-level"); f != nil {
		_ = f.Value.Set("warn")
		f.DefValue = "warn"
	}
	return g
}

// runFunc runs a command once its flags are parsed; args are the positional
// arguments after the command name.
type runFunc func(ctx context.Context, c *ctl, args []string) error

// command describes one crawlctl command for dispatch and --help.
type command struct {
	name     string // "status", "config set"
	args     string // usage after the name, e.g. "[--watch] [--json]"
	about    string
	examples string
	// setup defines the command's flags on fs and returns its runner.
	setup func(fs *pflag.FlagSet) runFunc
	// noCrawl commands (list, delete) work without --crawl.
	noCrawl bool
}

// commands is every crawlctl command, set in init: serve runs the others,
// which would make a package-level initializer refer to itself.
var commands []*command

func init() {
	commands = []*command{statusCommand, configGetCommand, configSetCommand, pauseCommand, resumeCommand, recrawlCommand, requeueCommand, drainCommand, listCommand, deleteCommand, serveCommand, reportCommand, packageCommand}
}

func findCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (a *app) toolFlags() (*pflag.FlagSet, *globals) {
	fs := cli.NewFlagSet("crawlctl", toolUsage, toolAbout, toolExamples)
	fs.SetOutput(a.stderr)
	return fs, addGlobals(fs)
}

func (a *app) commandFlags(cmd *command) (*pflag.FlagSet, *globals, runFunc) {
	usage := "crawlctl --zk HOST:PORT[,...] --crawl NAME " + cmd.name
	if cmd.args != "" {
		usage += " " + cmd.args
	}
	fs := cli.NewFlagSet("crawlctl "+cmd.name, usage, cmd.about, cmd.examples)
	fs.SetOutput(a.stderr)
	fn := cmd.setup(fs)
	g := addGlobals(fs)
	return fs, g, fn
}

// run parses the global flags up to the command name, then parses the
// whole command line again with the command's own flag set (which holds the
// global flags too), so flags may come before or after the command.
func (a *app) run(ctx context.Context, args []string) error {
	top, _ := a.toolFlags()
	top.SetInterspersed(false)
	if err := cli.Parse(top, args, func(string) (string, bool) { return "", false }); err != nil {
		return err
	}
	rest := top.Args()
	if len(rest) == 0 {
		return cli.Usage("no command given")
	}
	name, n := rest[0], 1
	switch name {
	case "help":
		return a.help(rest[1:])
	case "config":
		if len(rest) < 2 || strings.HasPrefix(rest[1], "-") {
			if len(rest) >= 2 && (rest[1] == "--help" || rest[1] == "-h") {
				return a.help([]string{"config"})
			}
			return cli.Usage("config needs a subcommand: config get, or config set key=value ... | --file F.json")
		}
		name, n = "config "+rest[1], 2
	}
	cmd := findCommand(name)
	if cmd == nil {
		return cli.Usage("unknown command %q (commands: status, config get, config set, pause, resume, requeue-failed, drain, list, delete, serve, report, package, help)", name)
	}
	at := len(args) - len(rest)
	cmdArgs := append(append([]string{}, args[:at]...), args[at+n:]...)
	fs, g, fn := a.commandFlags(cmd)
	if err := cli.Parse(fs, cmdArgs, a.env); err != nil {
		return err
	}
	var root string
	switch {
	case cmd.noCrawl:
	case g.crawl == "":
		return cli.Usage("--crawl NAME is required (or set %s)", cli.EnvName("crawl"))
	default:
		var err error
		if root, err = coord.Root(g.crawl); err != nil {
			return cli.Usage("--crawl: %v", err)
		}
	}
	if g.timeout <= 0 {
		return cli.Usage("--timeout %v: must be positive", g.timeout)
	}
	if err := cli.CheckZK(g.zk); err != nil {
		return err
	}
	log, err := g.newLogger(a.stderr)
	if err != nil {
		return cli.Usage("%v", err)
	}
	c := &ctl{app: a, g: g, root: root, log: log}
	defer c.close()
	return fn(ctx, c, fs.Args())
}

// help prints the tool's help, or a command's with "help COMMAND".
func (a *app) help(args []string) error {
	name := strings.Join(args, " ")
	if name == "" {
		top, _ := a.toolFlags()
		top.SetOutput(a.stdout)
		top.Usage()
		return nil
	}
	if name == "config" {
		fmt.Fprintf(a.stdout, "config has two subcommands:\n  crawlctl config get            print the config JSON stored in ZooKeeper\n  crawlctl config set k=v ...    change keys, or --file F.json to replace it\nRun 'crawlctl help config get' or 'crawlctl help config set' for details.\n")
		return nil
	}
	cmd := findCommand(name)
	if cmd == nil {
		return cli.Usage("help: unknown command %q", name)
	}
	fs, _, _ := a.commandFlags(cmd)
	fs.SetOutput(a.stdout)
	fs.Usage()
	return nil
}

// ctl is what a running command needs: the parsed globals, the crawl root
// and a ZooKeeper client opened on first use.
type ctl struct {
	app    *app
	g      *globals
	root   string
	log    *slog.Logger
	client *coord.Client
	front  *frontier.Frontier // set by openQueue
	// watching is set by status --watch (snapshots are separated when not
	// redrawn on a terminal).
	watching bool
}

func (c *ctl) stdout() io.Writer { return c.app.stdout }
func (c *ctl) stderr() io.Writer { return c.app.stderr }

// connect opens the ZooKeeper session (once), bounded by --timeout.
func (c *ctl) connect(ctx context.Context) (*coord.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	zkCfg, err := c.g.zkAuth()
	if err != nil {
		return nil, err
	}
	zkCfg.Logger = c.log
	client, err := coord.Connect(cctx, c.g.zk, zkCfg)
	if err != nil {
		return nil, cli.ZKConnectError(c.g.zk, c.g.timeout, err)
	}
	c.client = client
	return client, nil
}

// openQueue connects and opens the crawl's frontier queue. Errors: the crawl
// was never created (run seeder first).
func (c *ctl) openQueue(ctx context.Context) (*coord.Queue, error) {
	client, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	f, err := frontier.Open(cctx, client, c.root)
	if err != nil {
		return nil, c.crawlErr(err)
	}
	c.front = f
	return f.Queue(), nil
}

// crawlErr explains a missing crawl.
func (c *ctl) crawlErr(err error) error {
	if err == nil {
		return nil
	}
	if isNotFound(err) {
		return fmt.Errorf("crawl %q not found at %s in ZooKeeper %s (create it with seeder first): %w", c.g.crawl, c.root, c.g.zk, err)
	}
	return fmt.Errorf("crawl %q: %w", c.g.crawl, err)
}

func (c *ctl) close() {
	if c.client != nil {
		c.client.Close()
	}
}
