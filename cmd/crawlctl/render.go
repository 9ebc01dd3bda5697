package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
)

// shardsPerLine is how many "shard depth" pairs one line of the queue
// section holds.
const shardsPerLine = 6

// renderStatus writes the human-readable status: the summary (state,
// config, pages/s, totals), then the workers, the queue and the claims.
func renderStatus(w io.Writer, d *statusDoc) {
	fmt.Fprintf(w, "crawl %s (%s) at %s\n", d.Crawl, d.Root, d.Time.Local().Format(time.DateTime))
	fmt.Fprintf(w, "state:    %s\n", stateLine(d))
	renderConfig(w, d)
	rate := "n/a"
	if d.PagesPerS != nil {
		rate = fmt.Sprintf("%.1f", *d.PagesPerS)
		if n := rated(d.Workers); n < len(d.Workers) {
			rate += fmt.Sprintf(" (%d of %d workers measured so far)", n, len(d.Workers))
		}
	}
	fmt.Fprintf(w, "pages/s:  %s\n", rate)
	renderTotals(w, d)
	renderWorkers(w, d)
	renderQueue(w, d)
	renderClaims(w, d)
}

// stateLine returns the upper-case state with what it means for the
// operator.
func stateLine(d *statusDoc) string {
	state := strings.ToUpper(d.State)
	switch {
	case d.Done:
		state += " (queue empty and no claims held)"
	case d.Draining && len(d.Workers) == 0:
		state += " (drained: every worker has left; new workers refuse to start until 'crawlctl drain --cancel')"
	case d.Draining:
		state += " (workers finish their in-flight URLs and exit; 'crawlctl drain --cancel' to undo)"
	case d.Paused:
		state += " (workers claim nothing new; 'crawlctl resume' to continue)"
	case d.State == "stopped":
		state += " (URLs are queued but no worker is running)"
	}
	if d.Done && d.Draining {
		state += ", drain pending ('crawlctl drain --cancel' to lift it)"
	}
	return state
}

// keyMeaning says what one politeness budget covers under each key kind.
var keyMeaning = map[string]string{
	frontier.KeyHost:   "one budget per host:port",
	frontier.KeyDomain: "one budget per registrable domain",
	frontier.KeyIP:     "one budget per server address",
}

// renderConfig writes the config line and the workers not on its version.
func renderConfig(w io.Writer, d *statusDoc) {
	switch {
	case d.Config.Version < 0:
		fmt.Fprintf(w, "config:   MISSING (%s)\n", d.Config.Error)
	case !d.Config.Valid:
		fmt.Fprintf(w, "config:   version %d is INVALID, workers keep their last valid one: %s\n", d.Config.Version, d.Config.Error)
	default:
		fmt.Fprintf(w, "config:   version %d\n", d.Config.Version)
	}
	if n := len(d.Config.WorkersBehind); n > 0 {
		fmt.Fprintf(w, "          %d of %d workers not on version %d: %s\n", n, len(d.Workers), d.Config.Version, strings.Join(d.Config.WorkersBehind, ", "))
	}
	if d.PolitenessKey != "" {
		fmt.Fprintf(w, "key:      politeness key %s (%s; fixed when the crawl was created)\n", d.PolitenessKey, keyMeaning[d.PolitenessKey])
	}
}

// renderWorkers writes the workers section: a table of the workers, their
// storage errors and what the '*' of the CONFIG column means.
func renderWorkers(w io.Writer, d *statusDoc) {
	fmt.Fprintf(w, "\nworkers:  %d live\n", len(d.Workers))
	if len(d.Workers) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tHOST\tPID\tCONFIG\tPAGES\tPAGES/S\tERRORS\tIN-FLIGHT\tHEARTBEAT\tCONFIG ERROR")
	for _, wk := range d.Workers {
		if wk.StatusError != "" {
			fmt.Fprintf(tw, "  %s\t?\t?\t?*\t?\t?\t?\t?\t?\t%s\n", wk.ID, wk.StatusError)
			continue
		}
		cv := fmt.Sprint(wk.ConfigVersion)
		if !wk.OnConfig {
			cv += "*"
		}
		pr := "n/a"
		if wk.PagesPerS != nil {
			pr = fmt.Sprintf("%.1f", *wk.PagesPerS)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%d\t%s\t%d\t%d\t%s ago\t%s\n",
			wk.ID, wk.Host, wk.PID, cv, wk.Pages, pr, wk.Errors, wk.InFlight, age(wk.HeartbeatAgeS), dash(wk.ConfigError))
	}
	tw.Flush()
	for _, wk := range d.Workers {
		switch {
		case wk.Standby:
			fmt.Fprintf(w, "  ! %s (standby, owns no shard): %s\n", wk.ID, wk.StorageError)
		case wk.StorageError != "":
			fmt.Fprintf(w, "  ! %s: %s\n", wk.ID, wk.StorageError)
		}
	}
	switch {
	case len(d.Config.WorkersBehind) == 0:
	case d.Config.Valid:
		fmt.Fprintf(w, "  * not on the znode's config version %d yet\n", d.Config.Version)
	default:
		fmt.Fprintf(w, "  * still on its last valid config: the znode's version %d is invalid\n", d.Config.Version)
	}
}

// renderQueue writes the queue section: the ready items, the depth of
// every non-empty shard (shardsPerLine a line), the frontier's backlog and
// the links the live workers dropped.
func renderQueue(w io.Writer, d *statusDoc) {
	q := d.Queue
	fmt.Fprintf(w, "\nqueue:    %d ready to fetch (%d of them claimed) in %d of %d shards; %d failed (dead letters)\n",
		q.Queued, q.Claimed, len(q.Depths), q.Shards, d.Failed)
	for i, s := range q.Depths {
		if i%shardsPerLine == 0 {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprint(w, " ")
		}
		fmt.Fprintf(w, " %s %-7d", s.Shard, s.Queued)
	}
	if len(q.Depths) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "frontier: %d in the backlog, %d posts waiting to be drained, %d fetched URLs in seen chunks\n", q.Backlog, q.Posts, q.Seen)
	if q.HostsAtBudget > 0 || q.Held > 0 {
		fmt.Fprintf(w, "          host budget: %d hosts at max_pages_per_host, %d of the backlog's URLs held for them\n", q.HostsAtBudget, q.Held)
	}
	if q.Scheduled > 0 && q.NextDue != nil {
		fmt.Fprintf(w, "          recrawl: %d scheduled, %d due now, %d due within the hour, next due %s\n",
			q.Scheduled, q.DueNow, q.DueHour, q.NextDue.Format(time.RFC3339))
	}
	if len(q.Dropped) == 0 {
		return
	}
	var parts []string
	note := ""
	for _, r := range slices.Sorted(maps.Keys(q.Dropped)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, q.Dropped[r]))
		if r != "duplicate" && r != "bad_record" {
			note = " (a quota is reached: the crawl goes on with what it holds)"
		}
	}
	fmt.Fprintf(w, "          links dropped by live workers: %s%s\n", strings.Join(parts, ", "), note)
}

// renderClaims writes the claims section: their count and a table of the
// oldest.
func renderClaims(w io.Writer, d *statusDoc) {
	fmt.Fprintf(w, "\nclaims:   %d in flight", d.Claims.Count)
	if d.Claims.Count > len(d.Claims.Oldest) {
		fmt.Fprintf(w, " (the %d oldest shown)", len(d.Claims.Oldest))
	}
	fmt.Fprintln(w)
	if len(d.Claims.Oldest) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  SHARD/ITEM\tHOLDER\tAGE")
		for _, c := range d.Claims.Oldest {
			fmt.Fprintf(tw, "  %s/%s\t%s\t%s\n", c.Shard, c.Item, dash(c.Owner), age(c.AgeS))
		}
		tw.Flush()
	}
}

func rated(ws []workerDoc) int {
	n := 0
	for _, w := range ws {
		if w.PagesPerS != nil {
			n++
		}
	}
	return n
}

// age formats seconds like "0.4s", "12s", "3m05s".
func age(s float64) string {
	switch {
	case s < 0:
		return "0s"
	case s < 10:
		return fmt.Sprintf("%.1fs", s)
	case s < 3600:
		d := time.Duration(s) * time.Second
		if d < time.Minute {
			return fmt.Sprintf("%ds", int(s))
		}
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(s)%60)
	}
	return time.Duration(s * float64(time.Second)).Round(time.Minute).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
