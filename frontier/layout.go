package frontier

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
)

// MaxSpread bounds Layout.Spread.
const MaxSpread = 64

// Layout maps URLs to queue shards. A host's URLs go to one shard group
// (FNV-1a of the host key, Shard(Host(u))), so one worker owns the whole
// host and enforces its politeness; inside the group they spread over
// Spread shards by a hash of the whole URL, so a big site does not grow one
// queue parent past ZooKeeper's comfortable child count (~10,000; a
// getChildren reply must fit in jute.maxbuffer, 1 MiB by default). Groups
// are the unit of ownership (rendezvous hashing in package coord). The
// layout is fixed when a crawl is created and stored as JSON in the crawl's
// root znode.
type Layout struct {
	// Version is the frontier layout version (CurrentLayout for crawls
	// created by this code; 0 in a literal means CurrentLayout).
	Version int `json:"layout"`
	// Shards is the number of queue parents, a multiple of Spread.
	Shards int `json:"shards"`
	// Spread is the number of shards one host's URLs spread over (1..64).
	Spread int `json:"host_spread"`
}

// CurrentLayout is the frontier layout this code reads and writes:
// docs/design.md, "Frontier layout 2" (inbox, backlog batches, seen chunks,
// bounded ready window). Layout 1 (a JSON znode per queued URL and a seen
// marker znode per URL) is refused with ErrOldLayout.
const CurrentLayout = 2

// ErrOldLayout is returned for a crawl created with another frontier layout
// than CurrentLayout.
var ErrOldLayout = errors.New("crawl uses another frontier layout")

// DefaultLayout is the layout of a new crawl: 64 shard groups of one shard
// each. With layout 2 a host never has more than 2 x per_host_max_in_flight
// + 1 ready items, so spreading one host over several shards is no longer
// needed for ZooKeeper's child-count limit.
var DefaultLayout = Layout{Version: CurrentLayout, Shards: 64, Spread: 1}

// Validate reports a layout that cannot be used, naming the field.
func (l Layout) Validate() error {
	switch {
	case l.Version != 0 && l.Version != CurrentLayout:
		return fmt.Errorf("frontier: layout version %d: %w (this zkcrawl reads layout %d)", l.Version, ErrOldLayout, CurrentLayout)
	case l.Spread < 1 || l.Spread > MaxSpread:
		return fmt.Errorf("frontier: layout: host spread %d is outside 1..%d", l.Spread, MaxSpread)
	case l.Shards < l.Spread || l.Shards%l.Spread != 0:
		return fmt.Errorf("frontier: layout: %d shards is not a positive multiple of the host spread %d", l.Shards, l.Spread)
	}
	return nil
}

// Groups returns the number of shard groups, Shards/Spread.
func (l Layout) Groups() int { return l.Shards / l.Spread }

// Shard returns the queue shard of a normalized URL: its host's group,
// plus FNV-1a of the URL modulo Spread.
func (l Layout) Shard(normURL string) int {
	g := Shard(Host(normURL), l.Groups())
	if l.Spread == 1 {
		return g
	}
	h := fnv.New64a()
	h.Write([]byte(normURL))
	return g*l.Spread + int(h.Sum64()%uint64(l.Spread))
}

// GroupShards returns the shards of group g.
func (l Layout) GroupShards(g int) []int {
	out := make([]int, l.Spread)
	for i := range out {
		out[i] = g*l.Spread + i
	}
	return out
}

// Encode returns the layout as stored in the crawl's root znode.
func (l Layout) Encode() []byte {
	b, _ := json.Marshal(l.withDefaults())
	return b
}

// Group returns the shard group of a normalized URL (its host's group).
func (l Layout) Group(normURL string) int { return Shard(Host(normURL), l.Groups()) }

// withDefaults fills in the version of a literal Layout.
func (l Layout) withDefaults() Layout {
	if l.Version == 0 {
		l.Version = CurrentLayout
	}
	return l
}

// DecodeLayout parses a crawl root's data. A crawl of another layout
// version (empty data or no "layout" key: layout 1) is ErrOldLayout, with a
// message naming both versions.
func DecodeLayout(data []byte, shards int) (Layout, error) {
	l := Layout{Shards: shards, Spread: 1, Version: 1}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &l); err != nil {
			return Layout{}, fmt.Errorf("frontier: crawl root data %q is not a layout: %w", data, err)
		}
	}
	if l.Version != CurrentLayout {
		return Layout{}, fmt.Errorf("%w: created with frontier layout %d (one znode per queued and per seen URL), this zkcrawl reads layout %d: finish it with the zkcrawl that created it, or seed a new crawl name ('crawlctl delete NAME' removes the old one)", ErrOldLayout, l.Version, CurrentLayout)
	}
	if l.Shards != shards {
		return Layout{}, fmt.Errorf("frontier: layout says %d shards, the queue has %d", l.Shards, shards)
	}
	return l, l.Validate()
}
