package frontier

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
)

// MaxSpread bounds Layout.Spread.
const MaxSpread = 64

// Layout maps URLs to queue shards. A host's URLs go to one shard group
// (FNV-1a of the host authority, see Shard), so one worker owns the whole
// host and enforces its politeness; inside the group they spread over
// Spread shards by a hash of the whole URL, so a big site does not grow one
// queue parent past ZooKeeper's comfortable child count (~10,000; a
// getChildren reply must fit in jute.maxbuffer, 1 MiB by default). Groups
// are the unit of ownership (rendezvous hashing in package coord). The
// layout is fixed when a crawl is created and stored as JSON in the crawl's
// root znode.
type Layout struct {
	// Shards is the number of queue parents, a multiple of Spread.
	Shards int `json:"shards"`
	// Spread is the number of shards one host's URLs spread over (1..64).
	Spread int `json:"host_spread"`
}

// Validate reports a layout that cannot be used, naming the field.
func (l Layout) Validate() error {
	switch {
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
	b, _ := json.Marshal(l)
	return b
}

// DecodeLayout parses a crawl root's data. Empty data (a crawl created
// before layouts existed) means one shard per group: Layout{shards, 1}.
func DecodeLayout(data []byte, shards int) (Layout, error) {
	l := Layout{Shards: shards, Spread: 1}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &l); err != nil {
			return Layout{}, fmt.Errorf("frontier: crawl root data %q is not a layout: %w", data, err)
		}
	}
	if l.Shards != shards {
		return Layout{}, fmt.Errorf("frontier: layout says %d shards, the queue has %d", l.Shards, shards)
	}
	return l, l.Validate()
}
