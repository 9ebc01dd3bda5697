package worker

import (
	"context"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// Drop reasons the worker counts itself, as counted in status and
// zkcrawl_links_dropped_total (those of the groups' owner are
// frontier.Drop*).
const (
	dropURLLength = frontier.DropURLLength
	// dropDeadLetter counts URLs that failed for good while R/failed held
	// max_dead_letters: logged in the crawl log only.
	dropDeadLetter = "dead_letter_cap"
)

// groupOwner is the seam to the owner of this worker's shard groups
// (*frontier.Owner): Run runs one owned group while ctx lives, the claim
// loop tells it which ready items were finished here (Finished), a
// handoff that the previous owner's items there are gone (Resync), and
// status and gauges read its Totals.
type groupOwner interface {
	Run(ctx context.Context, sess *coord.Session, g int)
	Finished(g, shard int, name string)
	Resync(g int)
	Totals() frontier.OwnerTotals
}

// newOwner returns the owner of the shard groups this worker owns
// (frontier.Owner), with the config in force, the drop counters and the
// worker's log; it is installed as the frontier's local owner.
func (w *Worker) newOwner() *frontier.Owner {
	return frontier.NewOwner(w.front, frontier.OwnerOptions{
		Log:    w.log,
		Config: func() config.Config { return w.current().cfg },
		Dropped: func(reason string, n int) {
			w.counters.drop(reason, n)
			w.metrics.dropped(reason, n)
		},
	})
}
