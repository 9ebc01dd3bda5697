package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/cli"
)

var configGetCommand = &command{
	name: "config get",
	about: `Prints the crawl's config document exactly as stored in its znode
(/zkcrawl/NAME/config) on stdout, and its version (the znode's data version)
on stderr, so stdout can be saved and edited for 'config set --file'. Keys
missing from the document take their defaults. If the stored document is
invalid, a warning on stderr says why: the workers then keep the last valid
version they saw.`,
	examples: `  crawlctl --crawl docs config get
  crawlctl --crawl docs config get > docs.json   # edit, then: config set --file docs.json`,
	setup: func(fs *pflag.FlagSet) runFunc {
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) > 0 {
				return cli.Usage("config get takes no arguments, got %q", args)
			}
			data, version, err := c.readConfig(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stderr(), "# config version %d of %s\n", version, coord.Store(c.client, c.root, coord.ConfigNode))
			if _, err := config.Parse(data); err != nil {
				fmt.Fprintf(c.stderr(), "# warning: this version is invalid and the workers ignore it: %v\n", err)
			}
			out := bytes.TrimRight(data, "\n")
			_, err = fmt.Fprintf(c.stdout(), "%s\n", out)
			return err
		}
	},
}

var configSetCommand = &command{
	name: "config set",
	args: "key=value [key=value ...] | --file F.json",
	about: `Changes the crawl's live config. Every worker applies the new version within
a moment (see 'crawlctl status': each worker shows the version it applied).

With key=value arguments, the stored document is read, the keys are changed
and the result is validated as a whole; a value that is valid JSON (a number,
true/false, an array like ["a","b"], a quoted "string") is used as that JSON,
anything else is taken as a string (so scope=same_domain works unquoted).
key=null resets a key to its default. With --file, the file (or - for stdin)
replaces the whole document; keys it leaves out take their defaults.

Unknown keys and invalid values are rejected, naming the key, and nothing is
written. The write is a compare-and-set on the version that was read: if
someone else changed the config in between, nothing is overwritten and
crawlctl exits 1; run it again.

Keys (see README, "Config"):
` + wrap(strings.Join(knownKeys(), ", "), 76, "  "),
	examples: `  crawlctl --crawl docs config set per_host_rate_per_s=2 worker_concurrency=64
  crawlctl --crawl docs config set scope=same_domain 'exclude=["\\.pdf$"]'
  crawlctl --crawl docs config set max_pages=null          # back to the default
  crawlctl --crawl docs config set --file docs.json`,
	setup: func(fs *pflag.FlagSet) runFunc {
		file := fs.String("file", "", "replace the whole config with this JSON file (- for stdin)")
		return func(ctx context.Context, c *ctl, args []string) error {
			if *file != "" {
				if len(args) > 0 {
					return cli.Usage("config set: give either --file or key=value arguments, not both")
				}
				doc, err := c.readFile(*file)
				if err != nil {
					return err
				}
				if _, err := config.Parse(doc); err != nil {
					return fmt.Errorf("--file %s rejected, nothing written: %w", *file, err)
				}
				_, err = c.updateConfig(ctx, nil, func([]byte) ([]byte, error) { return doc, nil })
				return err
			}
			if len(args) == 0 {
				return cli.Usage("config set needs key=value arguments or --file F.json")
			}
			changes, err := parseAssignments(args)
			if err != nil {
				return err
			}
			keys := make([]string, len(changes))
			for i, ch := range changes {
				keys[i] = ch.key
			}
			_, err = c.updateConfig(ctx, keys, func(cur []byte) ([]byte, error) { return applyAssignments(cur, changes) })
			return err
		}
	},
}

var pauseCommand = &command{
	name: "pause",
	about: `Pauses the crawl: sets the config key paused=true (a compare-and-set like
'config set'). Every worker stops claiming new URLs as soon as it sees the
new version; fetches already in flight finish. Nothing is lost: the queue
stays as it is until 'crawlctl resume'.`,
	examples: `  crawlctl --crawl docs pause
  crawlctl --crawl docs status   # state PAUSED, pages/s drops to 0`,
	setup: func(fs *pflag.FlagSet) runFunc { return setPaused(true) },
}

var resumeCommand = &command{
	name: "resume",
	about: `Resumes a paused crawl: sets the config key paused=false (a compare-and-set
like 'config set'). Every worker starts claiming again as soon as it sees the
new version.`,
	examples: `  crawlctl --crawl docs resume`,
	setup:    func(fs *pflag.FlagSet) runFunc { return setPaused(false) },
}

func setPaused(paused bool) runFunc {
	return func(ctx context.Context, c *ctl, args []string) error {
		if len(args) > 0 {
			return cli.Usage("unexpected arguments %q", args)
		}
		v, _ := json.Marshal(paused)
		changes := []assignment{{key: "paused", value: v}}
		changed, err := c.updateConfig(ctx, []string{"paused"}, func(cur []byte) ([]byte, error) { return applyAssignments(cur, changes) })
		switch {
		case err != nil:
			return err
		case !changed && paused:
			fmt.Fprintln(c.stdout(), "the crawl was already paused")
		case !changed:
			fmt.Fprintln(c.stdout(), "the crawl was not paused")
		case paused:
			fmt.Fprintln(c.stdout(), "paused: workers claim nothing new once they apply this version; in-flight fetches finish ('crawlctl status' shows each worker's version)")
		default:
			fmt.Fprintln(c.stdout(), "resumed: workers claim again once they apply this version")
		}
		return nil
	}
}

// readConfig reads R/config. Errors: the crawl has no config znode.
func (c *ctl) readConfig(ctx context.Context) ([]byte, int32, error) {
	client, err := c.connect(ctx)
	if err != nil {
		return nil, 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	data, version, err := coord.Store(client, c.root, coord.ConfigNode).Read(cctx)
	if err != nil {
		return nil, 0, c.crawlErr(err)
	}
	return data, version, nil
}

func (c *ctl) readFile(name string) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(c.app.stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", name, err)
	}
	return data, nil
}

// updateConfig is the read-modify-write of R/config: read data and
// version, edit, validate with config.Parse, write the normalized document
// with a compare-and-set on the version read (ZooKeeper recipes:
// configuration service; coord.ConfigStore.Write). It prints old -> new for
// the keys named in show (every changed key when show is nil) and the new
// version. A document whose values are unchanged is not written (changed
// is false).
func (c *ctl) updateConfig(ctx context.Context, show []string, edit func(cur []byte) ([]byte, error)) (changed bool, err error) {
	data, version, err := c.readConfig(ctx)
	if err != nil {
		return false, err
	}
	doc, err := edit(data)
	if err != nil {
		return false, err
	}
	cfg, err := config.Parse(doc)
	if err != nil {
		return false, fmt.Errorf("config rejected, nothing written: %w", err)
	}
	if cfg.PolitenessKey != "" {
		if _, err := c.openQueue(ctx); err != nil {
			return false, err
		}
		if err := c.front.Layout().CheckKey(cfg.PolitenessKey); err != nil {
			return false, fmt.Errorf("config rejected, nothing written: %w", err)
		}
	}
	newDoc := cfg.Encode()
	oldVals := configValues(data)
	newVals := configValues(newDoc)
	if show == nil {
		for _, k := range knownKeys() {
			if oldVals[k] != newVals[k] {
				show = append(show, k)
			}
		}
	}
	if _, err := config.Parse(data); err == nil && maps.Equal(oldVals, newVals) {
		fmt.Fprintf(c.stdout(), "config unchanged (version %d): nothing written\n", version)
		return false, nil
	}
	if c.app.beforeWrite != nil {
		c.app.beforeWrite()
	}
	client, err := c.connect(ctx)
	if err != nil {
		return false, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	store := coord.Store(client, c.root, coord.ConfigNode)
	newVersion, err := store.Write(cctx, newDoc, version)
	if errors.Is(err, coord.ErrVersionConflict) {
		now := "unknown"
		if _, v, rerr := store.Read(cctx); rerr == nil {
			now = fmt.Sprint(v)
		}
		return false, fmt.Errorf("someone else changed the config meanwhile (it was version %d when read, it is now version %s): nothing was overwritten; check it with 'crawlctl config get' and run the command again: %w", version, now, err)
	}
	if err != nil {
		return false, fmt.Errorf("write config %s: %w", store, err)
	}
	for _, k := range show {
		note := ""
		if oldVals[k] == newVals[k] {
			note = " (unchanged)"
		}
		fmt.Fprintf(c.stdout(), "%s: %s -> %s%s\n", k, shownValue(k, oldVals[k]), shownValue(k, newVals[k]), note)
	}
	fmt.Fprintf(c.stdout(), "config version %d -> %d\n", version, newVersion)
	return true, nil
}

// assignment is one key=value argument of config set.
type assignment struct {
	key   string
	value json.RawMessage // nil means "reset to the default"
}

// parseAssignments parses key=value arguments. A value that is valid JSON is
// taken as JSON, anything else as a JSON string; "null" resets the key.
// Errors: a malformed argument or a repeated key (usage errors), unknown
// keys (all named at once).
func parseAssignments(args []string) ([]assignment, error) {
	known := knownKeys()
	var out []assignment
	var unknown []string
	seen := map[string]bool{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, cli.Usage("config set: argument %q: want key=value", a)
		}
		if seen[k] {
			return nil, cli.Usage("config set: key %q given twice", k)
		}
		seen[k] = true
		if !slices.Contains(known, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
			continue
		}
		var raw json.RawMessage
		switch t := strings.TrimSpace(v); {
		case t == "null":
		case json.Valid([]byte(t)):
			raw = json.RawMessage(t)
		default:
			raw, _ = json.Marshal(v)
		}
		out = append(out, assignment{key: k, value: raw})
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: unknown key %s; nothing written (known keys: %s)", config.ErrInvalid, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// applyAssignments sets the keys in the JSON object cur. Errors: cur is not
// a JSON object.
func applyAssignments(cur []byte, changes []assignment) ([]byte, error) {
	doc := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(cur)) > 0 {
		if err := json.Unmarshal(cur, &doc); err != nil || doc == nil {
			if err == nil {
				err = errors.New("null")
			}
			return nil, fmt.Errorf("the stored config is not a JSON object (%v), so keys cannot be changed in it; nothing written: replace it whole with 'crawlctl config set --file F.json'", err)
		}
	}
	for _, ch := range changes {
		if ch.value == nil {
			delete(doc, ch.key)
		} else {
			doc[ch.key] = ch.value
		}
	}
	return json.Marshal(doc)
}

// knownKeys returns the config document's keys, sorted.
func knownKeys() []string {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(config.Default().Encode(), &m)
	for _, k := range []string{"politeness_key", "recrawl_due_before", "recrawl_due_match"} {
		m[k] = nil // omitted while empty, but a key all the same
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configValues returns each key's effective value in doc as compact JSON:
// the parsed config (defaults filled in) when doc is valid, else the raw
// values it holds ("?" where unreadable).
func configValues(doc []byte) map[string]string {
	src := doc
	if cfg, err := config.Parse(doc); err == nil {
		src = cfg.Encode()
	}
	raw := map[string]json.RawMessage{}
	_ = json.Unmarshal(src, &raw)
	out := map[string]string{}
	for _, k := range knownKeys() {
		v, ok := raw[k]
		if !ok {
			out[k] = "(unset)"
			continue
		}
		var b bytes.Buffer
		if json.Compact(&b, v) != nil {
			out[k] = "?"
			continue
		}
		out[k] = b.String()
	}
	return out
}

// shownValue returns the value v of key k as config set prints it: as it
// is, but for cookies_seed, whose cookie values are secrets, printed
// redacted (config.RedactSeeds; "(set)" when it does not parse).
func shownValue(k, v string) string {
	if k != "cookies_seed" {
		return v
	}
	var seeds []config.CookieSeed
	if err := json.Unmarshal([]byte(v), &seeds); err != nil {
		if v == "(unset)" {
			return v
		}
		return "(set)"
	}
	b, _ := json.Marshal(config.RedactSeeds(seeds))
	return string(b)
}

// isNotFound reports a missing znode or an uncreated crawl.
func isNotFound(err error) bool {
	return errors.Is(err, coord.ErrNotFound) || errors.Is(err, coord.ErrNotInitialized)
}

// wrap breaks text into lines of at most width columns at spaces, each
// starting with indent.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line)
	return b.String()
}
