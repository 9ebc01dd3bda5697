package crawlreport

import (
	"hash/maphash"
	"net/url"
	"strconv"
	"strings"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/storage"
)

// final is what the reports keep of a URL's last attempt.
type final struct {
	host, mime string
	status     int
	bytes      int64
	robots     bool // status is fetch.CodeRobotsPrecluded
	dead       bool // status is retryable (fetch.Retryable)
}

// aggregator folds time-ordered lines into the reports. A line with a
// final (non-retryable) status counts its URL at once; a retryable failure
// waits in pending (by a 64-bit hash of the URL) until a later attempt of
// the URL replaces it, or until the end, where it counts as a dead letter.
type aggregator struct {
	hosts, mimes, codes *table
	seeds               *seedTracker
	pending             map[uint64]final
	maxPending          int // MaxPending; tests lower it
	seed                maphash.Seed
	sum                 Summary
}

func newAggregator() *aggregator {
	return &aggregator{
		hosts: newTable(MaxHosts), mimes: newTable(MaxMIMETypes), codes: newTable(MaxStatusCodes),
		seeds: newSeedTracker(), pending: map[uint64]final{}, maxPending: MaxPending, seed: maphash.MakeSeed(),
	}
}

// line takes the next line in time order.
func (a *aggregator) line(e *storage.LogEntry) {
	a.sum.Lines++
	if a.sum.Start.IsZero() || e.TS.Before(a.sum.Start) {
		a.sum.Start = e.TS
	}
	if e.TS.After(a.sum.End) {
		a.sum.End = e.TS
	}
	a.seeds.observe(e)
	f := final{host: HostOf(e.URL), mime: e.MIME, status: e.Status, bytes: e.Bytes,
		robots: e.Status == fetch.CodeRobotsPrecluded, dead: fetch.Retryable(e.Status)}
	k := maphash.String(a.seed, e.URL)
	delete(a.pending, k)
	if !f.dead {
		a.count(f)
		return
	}
	if len(a.pending) >= a.maxPending {
		for pk, pf := range a.pending {
			delete(a.pending, pk)
			a.count(pf)
			a.sum.Approximate++
			break
		}
	}
	a.pending[k] = f
}

// count adds one URL's final figures to every table and the summary.
func (a *aggregator) count(f final) {
	a.sum.URLs++
	a.sum.Bytes += f.bytes
	switch {
	case f.status > 0:
		a.sum.Crawled++
	case f.robots:
		a.sum.RobotsPrecluded++
	default:
		a.sum.Failed++
	}
	if f.dead {
		a.sum.DeadLetters++
	}
	a.hosts.add(f.host, f)
	a.mimes.add(f.mime, f)
	a.codes.add(strconv.Itoa(f.status), f)
}

// HostOf returns u's host[:port] in lower case, the key of the hosts
// report, or "(no host)" when u has none or does not parse.
func HostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(no host)"
	}
	return strings.ToLower(p.Host)
}

// report counts the pending URLs as dead letters and builds the Report.
func (a *aggregator) report() *Report {
	for _, f := range a.pending {
		a.count(f)
	}
	clear(a.pending)
	s := a.sum
	s.Retries = s.Lines - s.URLs
	if !s.Start.IsZero() {
		s.DurationS = s.End.Sub(s.Start).Seconds()
	}
	if s.DurationS > 0 {
		s.URLsPerS = float64(s.URLs) / s.DurationS
		s.BytesPerS = float64(s.Bytes) / s.DurationS
	}
	s.Hosts = int64(len(a.hosts.rows)) + a.hosts.evicted
	s.Start, s.End = s.Start.UTC(), s.End.UTC()
	r := &Report{Summary: s, Seeds: []SeedRow{}, Hosts: []HostRow{}, MIMETypes: []MIMERow{}, StatusCodes: []StatusRow{}}
	for _, sr := range a.seeds.rows {
		r.Seeds = append(r.Seeds, *sr)
		if sr.Crawled {
			r.Summary.SeedsCrawled++
		}
	}
	r.SeedsOmitted = a.seeds.omitted
	r.Summary.Seeds = int64(len(a.seeds.rows)) + a.seeds.omitted
	for _, row := range a.hosts.sorted() {
		r.Hosts = append(r.Hosts, hostRow(row.key, row.counts))
	}
	if a.hosts.evicted > 0 {
		o := hostRow(OtherKey, a.hosts.other)
		r.OtherHosts = &o
	}
	for _, row := range a.mimes.sorted() {
		r.MIMETypes = append(r.MIMETypes, MIMERow{MIME: row.key, URLs: row.urls, Bytes: row.bytes})
	}
	if a.mimes.evicted > 0 {
		r.MIMETypes = append(r.MIMETypes, MIMERow{MIME: OtherKey, URLs: a.mimes.other.urls, Bytes: a.mimes.other.bytes})
	}
	for _, row := range a.codes.sorted() {
		code, _ := strconv.Atoi(row.key)
		r.StatusCodes = append(r.StatusCodes, StatusRow{Status: code, Name: fetch.CodeName(code), URLs: row.urls})
	}
	if a.codes.evicted > 0 {
		r.StatusCodes = append(r.StatusCodes, StatusRow{Name: OtherKey, URLs: a.codes.other.urls, Other: true})
	}
	return r
}

func hostRow(host string, c counts) HostRow {
	return HostRow{Host: host, URLs: c.urls, Bytes: c.bytes, S2xx: c.s2xx, S3xx: c.s3xx, S4xx: c.s4xx, S5xx: c.s5xx,
		Other: c.other, Failed: c.failed, Robots: c.robots, DeadLetters: c.dead}
}
