package coord

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// CrawlsRoot is the znode under which every crawl's root lives (under the
// connect string's chroot, if any): R = /zkcrawl/<crawl name>.
const CrawlsRoot = "/zkcrawl"

// crawlName is what a crawl name may be (Root).
var crawlName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Root returns the root znode path of the crawl named name,
// "/zkcrawl/<name>". Errors (wrapping ErrInvalidArgument): the name is not
// 1..128 characters of [A-Za-z0-9._-] starting with a letter or digit.
func Root(name string) (string, error) {
	if !crawlName.MatchString(name) {
		return "", fmt.Errorf("crawl name %q: want 1..128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit: %w", name, ErrInvalidArgument)
	}
	return CrawlsRoot + "/" + name, nil
}

// The crawl's znode layout under its root R, in one place
// (docs/design.md, "Znode layout"). Callers outside coord name no path of
// the crawl: they use the recipes' verbs (Queue, Join, Members, Store,
// StandbyRoot) with the node names below and, for the frontier's store,
// Queue.Commit with paths under the areas package frontier names (inbox/,
// backlog/).
const (
	queueDir    = "queue"    // R/queue/<shard>/u-NNNNNNNNNN: ready items (persistent-sequential); R/queue's data: {"shards":N}
	claimsDir   = "claims"   // R/claims/<shard>/<item>: ephemeral claims
	failedDir   = "failed"   // R/failed/<shard>-<item>: dead letters
	sessionsDir = "sessions" // R/sessions/<session id>: ephemeral per-session fence markers
	itemPrefix  = "u-"       // item name prefix; ZooKeeper appends a 10-digit sequence number
	standbyDir  = "standby"  // R/standby/workers/<id>: members in standby (a membership root of its own)
)

// The crawl's nodes that callers read and write through Store(c, R, name
// ...): values opaque to coord (zkcrawl stores JSON).
const (
	// ConfigNode, R/config: the crawl settings, read, compare-and-set and
	// watched by workers, the seeder and crawlctl; its version is the
	// config version.
	ConfigNode = "config"
	// DrainNode, R/drain: exists while a drain is requested (its data is a
	// note naming who asked); Write requests one, Delete cancels it, Watch
	// follows it.
	DrainNode = "drain"
	// TotalsNode, R/totals: the crawl's running totals, one znode for every
	// worker and run, each adding its counts with a compare-and-set
	// (ConfigStore.Write at the read version). Its children R/totals/<id>
	// are older versions' per-worker totals (ConfigStore.Children).
	TotalsNode = "totals"
	// WorkersNode, R/workers/<id>: member id's ephemeral status node,
	// created and updated by Join and Member.Update; Store(c, R,
	// WorkersNode, id) reads it without joining.
	WorkersNode = "workers"
	// AssignmentNode, R/assignment: which member owns which shard group,
	// written by the members' balancer (the member of smallest id) with a
	// compare-and-set, watched by every member.
	AssignmentNode = "assignment"
)

// Store returns the store of the znode root/elem/... (root absolute, the
// chroot applied), e.g. Store(c, R, ConfigNode) for R/config, or Store(c,
// R) for the crawl root itself. An invalid path (root not absolute, or an
// elem that is not one znode name) makes every call of the store fail with
// ErrInvalidArgument.
func Store(c *Client, root string, elem ...string) *ConfigStore {
	p := root
	var err error
	for _, e := range elem {
		if err = validateName(e); err != nil {
			break
		}
		p += "/" + e
	}
	return newStore(c, p, err)
}

// StandbyRoot returns the membership root of the crawl rooted at root's
// standby workers, R/standby: Join and Members under it keep their nodes at
// R/standby/workers/<id>, out of the crawl's worker list.
func StandbyRoot(root string) string { return root + "/" + standbyDir }

// ShardName returns the znode name of shard i: "s000", "s001", ... (at least
// three digits).
func ShardName(i int) string {
	if i >= 0 && i < 1000 { // without fmt: a claim path per candidate item
		return string([]byte{'s', byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)})
	}
	return fmt.Sprintf("s%03d", i)
}

// itemSeq returns the sequence number of an item name ("u-0000000042" ->
// 42), or -1.
func itemSeq(name string) int64 {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// sortFIFO sorts item names by sequence number (ZooKeeper does not order
// getChildren results), ties (and names without one) by name. Each name's
// number is parsed once, not per comparison: a shard of 400 ready items
// is re-listed whenever it changes, and parsing in the comparison was 7%
// of a worker's CPU on a web of 5,000 rated hosts.
func sortFIFO(names []string) {
	type seqName struct {
		seq  int64
		name string
	}
	keyed := make([]seqName, len(names))
	for i, n := range names {
		keyed[i] = seqName{itemSeq(n), n}
	}
	slices.SortFunc(keyed, func(a, b seqName) int {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for i, k := range keyed {
		names[i] = k.name
	}
}

// parseSessionHex parses a session id in ZooKeeper's hex notation.
func parseSessionHex(s string) (int64, error) {
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	return int64(u), err
}

// sessionHex returns a session id in ZooKeeper's hex notation, e.g.
// "0x1000a2b3c4d0000".
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
