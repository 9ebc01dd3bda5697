package frontier

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/zkcrawl/zkcrawl/config"
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
	// PolitenessKey is what one politeness budget covers, and so what
	// chooses the shard group (Key): KeyHost, KeyDomain or KeyIP. "" means
	// KeyHost and is how a host crawl is stored (and every crawl created
	// before the key existed reads), so its root data is unchanged.
	PolitenessKey string `json:"politeness_key,omitempty"`
}

// Politeness key kinds for Layout.PolitenessKey (docs/design.md,
// "Politeness keys"): the names of config.PolitenessHost, PolitenessDomain
// and PolitenessIP, which the crawl config's politeness_key takes.
const (
	// KeyHost keys politeness by Host: the normalized authority, with the
	// port only when it is not the scheme's default.
	KeyHost = config.PolitenessHost
	// KeyDomain keys politeness by the registrable domain of the host name
	// (eTLD+1 of the Public Suffix List, golang.org/x/net/publicsuffix),
	// without the port; an IP literal or a name the list refuses (a public
	// suffix, a single label such as localhost) is its own key.
	KeyDomain = config.PolitenessDomain
	// KeyIP keys politeness by the host name's address (RFC 1034 name
	// resolution through Go's resolver, once per name per process, the
	// lowest address, IPv4 first), without the port, so many virtual hosts
	// on one server share one budget; an IP literal is its own key, and a
	// name whose lookup fails (or takes over 3 s) is keyed by its host.
	KeyIP = config.PolitenessIP
)

// ValidateKey reports whether kind is a politeness key kind: "" (KeyHost),
// KeyHost, KeyDomain or KeyIP. The error names the key politeness_key, the
// value and the kinds there are.
func ValidateKey(kind string) error {
	switch kind {
	case "", KeyHost, KeyDomain, KeyIP:
		return nil
	}
	return fmt.Errorf("politeness_key %q: not one of %s, %s, %s", kind, KeyHost, KeyDomain, KeyIP)
}

// KeyKind returns the layout's politeness key kind, KeyHost when unset.
func (l Layout) KeyKind() string {
	if l.PolitenessKey == "" {
		return KeyHost
	}
	return l.PolitenessKey
}

// CheckKey reports whether a crawl config's politeness_key (kind) agrees
// with the layout: "" (the default: as created) and the layout's own kind
// do. The kind is fixed when the crawl is created, because a URL's shard
// group, and so its seen-set, must not change; the error names the key,
// both kinds and that reason.
func (l Layout) CheckKey(kind string) error {
	if kind == "" || kind == l.KeyKind() {
		return nil
	}
	return fmt.Errorf("politeness_key %q: fixed when the crawl was created, this crawl uses %q (a URL's shard group and seen-set follow the key; seed a new crawl with seeder --politeness-key %s)", kind, l.KeyKind(), kind)
}

// Key returns the politeness key of a normalized URL, the one name of "a
// server's budget" for this crawl: it chooses the shard group (Group,
// Shard) and keys politeness, claim slots, ready windows and the per-host
// quotas (docs/design.md, "Politeness keys"). KeyHost: Host(normURL);
// KeyDomain: the registrable domain of Host(normURL) (Public Suffix List)
// without the port; KeyIP: the address of its host name, looked up once
// per name per process (may wait for DNS, at most 3 s, unless Prefetch
// looked it up), or Host(normURL) when the lookup failed. "" for a URL
// Host cannot parse.
func (l Layout) Key(normURL string) string {
	h := Host(normURL)
	if h == "" {
		return h
	}
	switch l.PolitenessKey {
	case KeyDomain:
		return registrableDomain(h)
	case KeyIP:
		return processIPKeys.key(h)
	}
	return h
}

// Prefetch makes the Key calls that follow for normURLs answer from the
// cache: under KeyIP it looks up, up to 16 at a time, the host names not
// looked up yet in this process, and returns when all are done (each
// lookup at most 3 s). For other kinds it does nothing.
func (l Layout) Prefetch(normURLs []string) {
	if l.PolitenessKey != KeyIP {
		return
	}
	hosts := make([]string, 0, len(normURLs))
	for _, u := range normURLs {
		if h := Host(u); h != "" {
			hosts = append(hosts, h)
		}
	}
	processIPKeys.prefetch(hosts)
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
// each. With layout 2 a host never has more than its ready window
// (ReadyWindow) of ready items, so spreading one host over several shards is no longer
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
	if err := ValidateKey(l.PolitenessKey); err != nil {
		return fmt.Errorf("frontier: layout: %w", err)
	}
	return nil
}

// Groups returns the number of shard groups, Shards/Spread.
func (l Layout) Groups() int { return l.Shards / l.Spread }

// Shard returns the queue shard of a normalized URL: its politeness key's
// group, plus FNV-1a of the URL modulo Spread (ShardIn).
func (l Layout) Shard(normURL string) int { return l.ShardIn(l.Group(normURL), normURL) }

// ShardIn returns the queue shard of a normalized URL within group g: g's
// first shard plus FNV-1a of the URL modulo Spread. A group's owner places
// the URLs it moves with it, without computing their key again (under
// politeness_key ip a second lookup could answer differently).
func (l Layout) ShardIn(g int, normURL string) int {
	if l.Spread == 1 {
		return g
	}
	h := fnv.New64a()
	h.Write([]byte(normURL))
	return g*l.Spread + int(h.Sum64()%uint64(l.Spread))
}

// GroupOf returns the group shard belongs to (GroupShards' inverse).
func (l Layout) GroupOf(shard int) int { return shard / l.Spread }

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

// Group returns the shard group of a normalized URL: FNV-1a of its
// politeness key (Key) modulo Groups. Under KeyHost this is the group of
// its host, as in every crawl created before politeness keys existed.
func (l Layout) Group(normURL string) int { return Shard(l.Key(normURL), l.Groups()) }

// withDefaults fills in the version of a literal Layout and stores KeyHost
// as "" (so a host crawl's root data is as before).
func (l Layout) withDefaults() Layout {
	if l.Version == 0 {
		l.Version = CurrentLayout
	}
	if l.PolitenessKey == KeyHost {
		l.PolitenessKey = ""
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
