package crawlreport

import (
	"strings"

	"github.com/zkcrawl/zkcrawl/storage"
)

// maxChain bounds the redirect hops followed per seed (zkcrawl follows
// fewer: fetch's redirect limit).
const maxChain = 20

// seedTracker builds the seeds report: seeds are depth-0 lines with an
// empty via; a line whose hops are all redirects ("R", "RR", ...) and whose
// via is a seed or a URL of its chain extends that seed's chain. It holds
// at most MaxSeeds rows and MaxSeeds*maxChain chain URLs.
type seedTracker struct {
	rows    []*SeedRow
	bySeed  map[string]*SeedRow
	chain   map[string]*SeedRow // URL in a seed's redirect chain (the seed included) -> the seed's row
	hops    map[*SeedRow]int    // chain hops followed per seed
	omitted int64
}

func newSeedTracker() *seedTracker {
	return &seedTracker{bySeed: map[string]*SeedRow{}, chain: map[string]*SeedRow{}, hops: map[*SeedRow]int{}}
}

// observe takes one line, in time order.
func (s *seedTracker) observe(e *storage.LogEntry) {
	if e.Depth == 0 && e.Via == "" {
		r := s.bySeed[e.URL]
		if r == nil {
			if len(s.rows) >= MaxSeeds {
				if e.Attempt <= 1 {
					s.omitted++
				}
				return
			}
			r = &SeedRow{Seed: e.URL}
			s.rows = append(s.rows, r)
			s.bySeed[e.URL] = r
			s.chain[e.URL] = r
		}
		r.Status, r.Crawled = e.Status, e.Status > 0
		return
	}
	if e.Hops == "" || strings.Trim(e.Hops, "R") != "" {
		return
	}
	r := s.chain[e.Via]
	if r == nil {
		return
	}
	if e.Via == r.Seed {
		r.Redirect = e.URL
	}
	r.Final, r.FinalStatus = e.URL, e.Status
	if _, ok := s.chain[e.URL]; !ok && s.hops[r] < maxChain {
		s.chain[e.URL] = r
		s.hops[r]++
	}
}
