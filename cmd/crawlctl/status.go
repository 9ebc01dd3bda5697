package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/worker"
)

// maxClaimsShown is how many of the oldest claims status lists.
const maxClaimsShown = 20

var statusCommand = &command{
	name: "status",
	args: "[--watch] [--json] [--interval 1s]",
	about: `Shows the state of the crawl, read from ZooKeeper:

  - the state: DONE (nothing new and nothing due: queue empty and no
    claim held anywhere; URLs held by max_pages_per_host with
    host_budget_action keep and recrawl schedule entries not yet due may be
    left), DRAINING
    (drain requested), PAUSED (config paused=true), STOPPED (URLs queued
    but no live worker) or RUNNING
  - the config version in the znode, whether it is valid, and which workers
    have not applied it yet (marked *); the politeness key (host, domain or
    ip: what one per-host budget covers), fixed when the crawl was created
  - every live worker: id, host, pid, config version applied, pages
    finished, failed fetch attempts, fetches in flight, age of its last
    heartbeat and its config error, if it rejected a config
  - pages per second for the whole cluster, from the page counters the
    workers publish with every heartbeat: without --watch, status samples
    them for up to --rate-window (until every worker published a new
    heartbeat); "n/a" when no worker has two samples yet
  - the queue depth of every non-empty shard and the total, the claims in
    flight (the 20 oldest with holder and age, and the count) and the
    number of dead letters (URLs that failed every attempt; see
    requeue-failed), and the hosts at max_pages_per_host with the URLs
    held for them
  - with recrawl (config recrawl): the URLs scheduled, due now, due within
    the hour and the next due time

--watch redraws the screen about once every --interval like top, until
Ctrl-C; when stdout is not a terminal it appends one plain snapshot per
refresh instead (no screen-control codes). --json prints one JSON document instead (with --watch, one per line
per refresh).`,
	examples: `  crawlctl --crawl docs status
  crawlctl --crawl docs status --watch
  crawlctl --crawl docs status --json | jq '.workers[] | {id, pages}'
  crawlctl --crawl docs status --rate-window 0   # answer at once, pages/s n/a`,
	setup: func(fs *pflag.FlagSet) runFunc {
		watch := fs.Bool("watch", false, "redraw about once every --interval until Ctrl-C")
		asJSON := fs.Bool("json", false, "print JSON (with --watch: one document per line per refresh)")
		interval := fs.Duration("interval", time.Second, "with --watch: time between refreshes")
		window := fs.Duration("rate-window", 3*time.Second, "without --watch: how long to sample the workers' page counters for pages/s (0: do not sample)")
		return func(ctx context.Context, c *ctl, args []string) error {
			if len(args) > 0 {
				return cli.Usage("status takes no arguments, got %q", args)
			}
			if *interval < 100*time.Millisecond {
				return cli.Usage("--interval %v: must be at least 100ms", *interval)
			}
			if *window < 0 {
				return cli.Usage("--rate-window %v: must not be negative", *window)
			}
			if _, err := c.openQueue(ctx); err != nil {
				return err
			}
			if *watch {
				c.watching = true
				return c.watchStatus(ctx, *interval, *asJSON)
			}
			rates := newRateTracker()
			if *window > 0 {
				c.sampleRates(ctx, rates, *window)
			}
			snap, err := c.snapshot(ctx, rates)
			if err != nil {
				return err
			}
			return c.printStatus(snap, *asJSON, false)
		}
	},
}

// statusDoc is the status of a crawl, the document of status --json.
type statusDoc struct {
	Crawl string    `json:"crawl"`
	Root  string    `json:"root"`
	Time  time.Time `json:"time"`
	// State is the first that holds of "done", "draining", "paused",
	// "stopped" (work queued but no live worker) and "running".
	State     string   `json:"state"`
	Paused    bool     `json:"paused"`
	Draining  bool     `json:"draining"`
	DrainNote string   `json:"drain_note,omitempty"`
	Done      bool     `json:"done"`
	PagesPerS *float64 `json:"pages_per_s"` // null: not measured ("n/a")
	// PolitenessKey is what one politeness budget covers (host, domain or
	// ip), fixed when the crawl was created (docs/design.md, "Politeness
	// keys").
	PolitenessKey string      `json:"politeness_key"`
	Config        configDoc   `json:"config"`
	Workers       []workerDoc `json:"workers"`
	Queue         queueDoc    `json:"queue"`
	Claims        claimsDoc   `json:"claims"`
	Failed        int         `json:"failed"`
	// Totals is crawl-wide: every worker run's pages, bytes, errors and
	// dead letters (R/totals, rewritten by each worker every few seconds
	// and when it stops); the text output shows it when the crawl is done.
	Totals totalsDoc `json:"totals"`
}

type configDoc struct {
	Version int32  `json:"version"` // -1: no config znode
	Valid   bool   `json:"valid"`
	Error   string `json:"error,omitempty"`
	// WorkersBehind lists the workers whose applied version differs.
	WorkersBehind []string `json:"workers_behind"`
}

type workerDoc struct {
	worker.Status
	HeartbeatAgeS float64  `json:"heartbeat_age_s"`
	OnConfig      bool     `json:"on_config_version"`
	PagesPerS     *float64 `json:"pages_per_s"`
	StatusError   string   `json:"status_error,omitempty"`
	// Standby: out of the worker list (owns no shard) because its output
	// writes fail; StorageError says why.
	Standby bool `json:"standby,omitempty"`
}

type queueDoc struct {
	// Queued counts the ready items (the ready window), claimed or not.
	Queued  int        `json:"queued"`
	Claimed int        `json:"claimed"`
	Shards  int        `json:"shards"`
	Depths  []shardDoc `json:"non_empty_shards"`
	// Backlog counts accepted URLs not yet moved to the ready window;
	// Posts the inbox posts not yet drained by their group's owner; Seen
	// the fingerprints of retired batches (docs/design.md "Frontier
	// layout 2").
	Backlog int `json:"backlog"`
	Posts   int `json:"posts"`
	Seen    int `json:"seen"`
	// HostsAtBudget counts the hosts whose pages reached
	// max_pages_per_host and Held the Backlog URLs kept for them
	// (host_budget_action keep; they do not keep the crawl from done), as
	// the groups' owners last wrote them in the cursors (docs/design.md
	// "Per-host budgets"); omitted when 0.
	HostsAtBudget int `json:"hosts_at_budget,omitempty"`
	Held          int `json:"held_by_budget,omitempty"`
	// Scheduled counts the Backlog URLs that are recrawl schedule
	// entries, DueNow and DueHour those due now and within the hour, and
	// NextDue the earliest due time (docs/design.md "Recrawl"), as the
	// groups' owners last wrote them; omitted when no entry exists.
	Scheduled int        `json:"scheduled,omitempty"`
	DueNow    int        `json:"due_now,omitempty"`
	DueHour   int        `json:"due_within_hour,omitempty"`
	NextDue   *time.Time `json:"next_due,omitempty"`
	// Dropped sums the live workers' dropped links by reason (quotas,
	// duplicates).
	Dropped map[string]int64 `json:"dropped"`
}

// pending is the frontier's count of what is left, whose Empty decides
// statusDoc.Done.
func (q queueDoc) pending() frontier.Pending {
	return frontier.Pending{Ready: q.Queued, Claimed: q.Claimed, Backlog: q.Backlog, Posts: q.Posts, Held: q.Held,
		Scheduled: q.Scheduled, DueNow: q.DueNow, DueHour: q.DueHour}
}

type shardDoc struct {
	Shard   string `json:"shard"`
	Queued  int    `json:"queued"`
	Claimed int    `json:"claimed"`
}

type claimsDoc struct {
	Count  int        `json:"count"`
	Oldest []claimDoc `json:"oldest"`
}

type claimDoc struct {
	Shard     string    `json:"shard"`
	Item      string    `json:"item"`
	Owner     string    `json:"owner"`
	Session   string    `json:"session"`
	ClaimedAt time.Time `json:"claimed_at"`
	AgeS      float64   `json:"age_s"`
}

// snapshot reads everything status shows, bounded by --timeout; it needs
// c.front (openQueue). The reads are not one atomic view: each part is
// current when read.
func (c *ctl) snapshot(ctx context.Context, rates *rateTracker) (*statusDoc, error) {
	cctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	client := c.client
	doc := &statusDoc{Crawl: c.g.crawl, Root: c.root, Time: time.Now().UTC()}
	doc.PolitenessKey = c.front.Layout().KeyKind()
	if err := c.statusConfig(cctx, client, doc); err != nil {
		return nil, err
	}
	if err := c.statusDrain(cctx, client, doc); err != nil {
		return nil, err
	}
	if err := c.statusWorkers(cctx, client, rates, doc); err != nil {
		return nil, err
	}
	if err := c.statusQueue(cctx, doc); err != nil {
		return nil, err
	}
	var err error
	if doc.Totals, err = c.readTotals(cctx, client); err != nil {
		return nil, err
	}
	doc.Done = doc.Queue.pending().Empty()
	doc.State = crawlState(doc)
	return doc, nil
}

// statusConfig fills doc.Config (version, validity) and doc.Paused from the
// config znode; a missing znode is version -1, not an error.
func (c *ctl) statusConfig(cctx context.Context, client *coord.Client, doc *statusDoc) error {
	cfgStore := coord.Store(client, c.root, coord.ConfigNode)
	data, version, err := cfgStore.Read(cctx)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		doc.Config = configDoc{Version: -1, Error: "no config znode " + cfgStore.String()}
	case err != nil:
		return fmt.Errorf("read config: %w", err)
	default:
		doc.Config.Version = version
		cfg, perr := config.Parse(data)
		if perr != nil {
			doc.Config.Error = perr.Error()
		} else {
			doc.Config.Valid = true
			doc.Paused = cfg.Paused
		}
	}
	return nil
}

// statusDrain fills doc.Draining and doc.DrainNote from the drain marker.
func (c *ctl) statusDrain(cctx context.Context, client *coord.Client, doc *statusDoc) error {
	note, dver, err := coord.Store(client, c.root, coord.DrainNode).Read(cctx)
	switch {
	case errors.Is(err, coord.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read drain marker: %w", err)
	case dver >= 0:
		doc.Draining, doc.DrainNote = true, string(note)
	}
	return nil
}

// statusWorkers fills doc.Workers (the live workers, then the standby ones),
// doc.Config.WorkersBehind and doc.PagesPerS (the sum of the measured
// workers' rates, nil when none is measured). It needs doc.Time and
// doc.Config.Version, and feeds rates with the statuses read.
func (c *ctl) statusWorkers(cctx context.Context, client *coord.Client, rates *rateTracker, doc *statusDoc) error {
	ids, statuses, err := coord.Members(cctx, client, c.root)
	if err != nil {
		return fmt.Errorf("list workers: %w", err)
	}
	rates.observe(ids, statuses)
	doc.Workers = []workerDoc{}
	doc.Config.WorkersBehind = []string{}
	var total float64
	rated := 0
	for _, id := range ids {
		wd := workerDoc{Status: worker.Status{ID: id}}
		if err := json.Unmarshal(statuses[id], &wd.Status); err != nil {
			wd.StatusError = fmt.Sprintf("unreadable status node: %v", err)
		} else {
			wd.HeartbeatAgeS = roundTo(max(0, doc.Time.Sub(wd.Heartbeat).Seconds()), 1)
		}
		wd.OnConfig = wd.StatusError == "" && wd.ConfigVersion == doc.Config.Version
		if !wd.OnConfig {
			doc.Config.WorkersBehind = append(doc.Config.WorkersBehind, id)
		}
		if r, ok := rates.rate(id); ok {
			r = roundTo(r, 1)
			wd.PagesPerS = &r
			total += r
			rated++
		}
		doc.Workers = append(doc.Workers, wd)
	}
	if rated > 0 {
		total = roundTo(total, 1)
		doc.PagesPerS = &total
	}
	standby, err := standbyWorkers(cctx, client, c.root, doc.Time)
	if err != nil {
		return err
	}
	doc.Workers = append(doc.Workers, standby...)
	return nil
}

// statusQueue fills doc.Queue, doc.Claims and doc.Failed from the queue's
// stats and the frontier's backlog, and sums the dropped links of
// doc.Workers (read first).
func (c *ctl) statusQueue(cctx context.Context, doc *statusDoc) error {
	q := c.front.Queue()
	st, err := q.Pending(cctx)
	if err != nil {
		return fmt.Errorf("read queue: %w", err)
	}
	held, err := q.Claims(cctx)
	if err != nil {
		return fmt.Errorf("read queue: %w", err)
	}
	doc.Queue = queueDoc{Queued: st.Queued, Claimed: len(held), Shards: q.Shards(), Depths: []shardDoc{}}
	claimed := make([]int, q.Shards())
	var claims []claimDoc
	for _, cl := range held {
		claimed[cl.Shard]++
		claims = append(claims, claimDoc{
			Shard: coord.ShardName(cl.Shard), Item: cl.Item, Owner: cl.Owner, Session: fmt.Sprintf("0x%x", uint64(cl.Session)),
			ClaimedAt: cl.ClaimedAt, AgeS: roundTo(max(0, cl.Age.Seconds()), 1),
		})
	}
	for s, queued := range st.Depths {
		if queued > 0 || claimed[s] > 0 {
			doc.Queue.Depths = append(doc.Queue.Depths, shardDoc{Shard: coord.ShardName(s), Queued: queued, Claimed: claimed[s]})
		}
	}
	sort.SliceStable(claims, func(i, j int) bool { return claims[i].ClaimedAt.Before(claims[j].ClaimedAt) })
	doc.Claims = claimsDoc{Count: len(claims), Oldest: claims[:min(len(claims), maxClaimsShown)]}
	doc.Failed = st.Failed
	groups, err := c.front.Backlog().Stats(cctx)
	if err != nil {
		return fmt.Errorf("read the frontier's backlog: %w", err)
	}
	for _, g := range groups {
		doc.Queue.Backlog += g.Backlog
		doc.Queue.Posts += g.Posts
		doc.Queue.Seen += g.Seen
		doc.Queue.Held += frontier.HeldBacklog(g)
		if _, atBudget, err := frontier.DecodeHostTotals(g.Annex); err == nil {
			doc.Queue.HostsAtBudget += int(atBudget)
		}
	}
	if p := frontier.BacklogPending(groups, 0); p.Scheduled > 0 {
		doc.Queue.Scheduled, doc.Queue.DueNow, doc.Queue.DueHour = p.Scheduled, p.DueNow, p.DueHour
		next := p.NextDue.UTC()
		doc.Queue.NextDue = &next
	}
	doc.Queue.Dropped = map[string]int64{}
	for _, wd := range doc.Workers {
		for reason, n := range wd.Dropped {
			doc.Queue.Dropped[reason] += n
		}
	}
	return nil
}

// crawlState returns statusDoc.State: the first that holds of "done",
// "draining", "paused", "stopped" (no live worker) and "running".
func crawlState(doc *statusDoc) string {
	switch {
	case doc.Done:
		return "done"
	case doc.Draining:
		return "draining"
	case doc.Paused:
		return "paused"
	case len(doc.Workers) == 0:
		return "stopped"
	}
	return "running"
}

// sampleRates reads the workers' status nodes until every worker published
// a second heartbeat (so its page rate is known) or window has passed.
func (c *ctl) sampleRates(ctx context.Context, rates *rateTracker, window time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		ids, statuses, err := coord.Members(wctx, c.client, c.root)
		if err == nil {
			rates.observe(ids, statuses)
			if len(ids) == 0 || rates.allRated(ids) {
				return
			}
		}
		select {
		case <-wctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchStatus redraws the status every interval until ctx ends (Ctrl-C),
// which is a normal exit. A failed refresh is shown and retried.
func (c *ctl) watchStatus(ctx context.Context, interval time.Duration, asJSON bool) error {
	rates := newRateTracker()
	redraw, clear := c.app.terminal(c.stdout()), ""
	if redraw {
		clear = clearScreen
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		snap, err := c.snapshot(ctx, rates)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil && asJSON:
			b, _ := json.Marshal(map[string]string{"time": time.Now().UTC().Format(time.RFC3339Nano), "error": err.Error()})
			fmt.Fprintf(c.stdout(), "%s\n", b)
		case err != nil:
			fmt.Fprintf(c.stdout(), "%s%s: refresh failed (retrying every %v): %v\n", clear, time.Now().Format(time.TimeOnly), interval, err)
		default:
			if err := c.printStatus(snap, asJSON, redraw); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// clearScreen moves the cursor home and clears the screen (ANSI / ECMA-48
// CUP and ED), the way top redraws.
const clearScreen = "\x1b[H\x1b[2J"

func (c *ctl) printStatus(doc *statusDoc, asJSON, redraw bool) error {
	var buf bytes.Buffer
	if asJSON {
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	} else {
		if redraw {
			buf.WriteString(clearScreen)
		}
		renderStatus(&buf, doc)
		if !redraw && c.watching {
			buf.WriteString("\n") // snapshots appended to a file or pipe
		}
	}
	_, err := c.stdout().Write(buf.Bytes())
	return err
}

// roundTo rounds v to the given number of decimal digits, for display.
func roundTo(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
