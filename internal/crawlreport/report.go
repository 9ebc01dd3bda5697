// Package crawlreport aggregates zkcrawl crawl logs (storage.LogEntry JSON
// lines, one per fetch attempt) into the end-of-crawl reports Heritrix
// writes: crawl summary (crawl-report.txt), seeds (seeds-report.txt), hosts
// (hosts-report.txt), MIME types (mimetype-report.txt) and status codes
// (responsecode-report.txt).
//
// It reads any number of crawl.log files as streams, merged by time stamp,
// in bounded memory: every table holds at most a fixed number of rows (the
// Max* constants) and folds the rest into an "other" row, so the totals
// stay exact while a row that was ever folded away may undercount. A URL
// counts once, with its last attempt's figures: a retried URL shows once.
package crawlreport

import "time"

// Bounds of the tables. Memory is O(MaxHosts + MaxMIMETypes +
// MaxStatusCodes + MaxSeeds*chain + MaxPending) rows, whatever the size of
// the logs.
const (
	// MaxHosts is the most host rows kept; the hosts with the fewest URLs
	// are folded into Report.OtherHosts (Space-Saving eviction: any host
	// with more than 1/MaxHosts of the URLs is always listed).
	MaxHosts = 10_000
	// MaxMIMETypes is the most MIME type rows kept (the rest: "(other)").
	MaxMIMETypes = 1_000
	// MaxStatusCodes is the most status code rows kept (the rest: other).
	MaxStatusCodes = 1_000
	// MaxSeeds is the most seed rows listed; later seeds are counted in
	// Summary.Seeds but not listed (Report.SeedsOmitted).
	MaxSeeds = 10_000
	// MaxPending is the most URLs whose latest attempt failed with a
	// retryable code that are remembered, waiting for a later attempt.
	// Past it, an arbitrary one is counted as final (Summary.Approximate
	// counts them); a later attempt of it then counts the URL again.
	MaxPending = 1 << 20
	// MaxSkipped is the most bad lines listed in Report.Skipped; all are
	// counted in Summary.SkippedLines.
	MaxSkipped = 100
	// MaxLineBytes is the longest crawl-log line read; longer ones are
	// skipped as bad lines.
	MaxLineBytes = 1 << 20
)

// OtherKey is the key of the row that holds what the bounded tables fold
// away.
const OtherKey = "(other)"

// Report is the five reports of one crawl, JSON-encodable (crawlctl report
// --json).
type Report struct {
	// Crawl is the crawl name given to Read ("" when none).
	Crawl string `json:"crawl"`
	// Files are the crawl.log files read, in the order given.
	Files   []string `json:"files"`
	Summary Summary  `json:"summary"`
	// Seeds are the seeds (depth-0 lines with an empty via) in the order
	// first seen, at most MaxSeeds.
	Seeds []SeedRow `json:"seeds"`
	// SeedsOmitted counts the seeds past MaxSeeds.
	SeedsOmitted int64 `json:"seeds_omitted,omitempty"`
	// Hosts are the host rows, most URLs first, at most MaxHosts.
	Hosts []HostRow `json:"hosts"`
	// OtherHosts sums the hosts folded away (Host OtherKey); nil if none.
	OtherHosts *HostRow `json:"other_hosts,omitempty"`
	// MIMETypes are the MIME type rows, most URLs first.
	MIMETypes []MIMERow `json:"mime_types"`
	// StatusCodes are the status code rows, most URLs first.
	StatusCodes []StatusRow `json:"status_codes"`
	// Skipped lists the first MaxSkipped bad lines.
	Skipped []BadLine `json:"skipped,omitempty"`
}

// Summary is the crawl report: totals over every URL.
type Summary struct {
	// Start and End are the earliest and latest line time stamps (zero
	// when no line was read); DurationS is End-Start in seconds.
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	DurationS float64   `json:"duration_s"`
	// Lines counts the valid lines (fetch attempts); SkippedLines the bad
	// ones.
	Lines        int64 `json:"lines"`
	SkippedLines int64 `json:"skipped_lines"`
	// URLs counts distinct URLs (each with its last attempt's status);
	// Retries is Lines-URLs.
	URLs    int64 `json:"urls"`
	Retries int64 `json:"retries"`
	// Crawled counts URLs whose last status is an HTTP status (> 0),
	// Heritrix's "URIs crawled successfully"; Failed those with a negative
	// code other than robots-precluded; RobotsPrecluded those robots.txt
	// disallowed (Heritrix's "disregarded").
	Crawled         int64 `json:"crawled"`
	Failed          int64 `json:"failed"`
	RobotsPrecluded int64 `json:"robots_precluded"`
	// DeadLetters counts URLs whose last attempt failed with a retryable
	// code (fetch.Retryable: 5xx, 429, 408, network errors) and that no
	// later attempt in the logs answered: the crawl's dead letters, or
	// URLs still queued for a retry.
	DeadLetters int64 `json:"dead_letters"`
	// Bytes sums the payload bytes of each URL's last attempt.
	Bytes int64 `json:"bytes"`
	// Seeds counts distinct seeds; SeedsCrawled those whose last status is
	// an HTTP status.
	Seeds        int64 `json:"seeds"`
	SeedsCrawled int64 `json:"seeds_crawled"`
	// Hosts counts the host rows kept plus the hosts folded away (a host
	// folded away and seen again counts twice, so it is an upper bound
	// once OtherHosts exists).
	Hosts int64 `json:"hosts"`
	// URLsPerS and BytesPerS are URLs and Bytes over DurationS (0 when the
	// duration is 0).
	URLsPerS  float64 `json:"urls_per_s"`
	BytesPerS float64 `json:"bytes_per_s"`
	// Approximate counts the URLs counted final early because MaxPending
	// was reached (0: every figure is exact).
	Approximate int64 `json:"approximate,omitempty"`
}

// HostRow is one line of the hosts report. Host is the URL's host:port as
// logged (lower case; the port only when the URL has one), the unit of
// zkcrawl's default politeness key.
type HostRow struct {
	Host  string `json:"host"`
	URLs  int64  `json:"urls"`
	Bytes int64  `json:"bytes"`
	// S2xx..S5xx count URLs by HTTP status class (1xx and other positive
	// codes go to Other); Failed counts negative codes except
	// robots-precluded.
	S2xx   int64 `json:"2xx"`
	S3xx   int64 `json:"3xx"`
	S4xx   int64 `json:"4xx"`
	S5xx   int64 `json:"5xx"`
	Other  int64 `json:"other_http,omitempty"`
	Failed int64 `json:"failed"`
	// Robots counts URLs robots.txt precluded.
	Robots int64 `json:"robots"`
	// DeadLetters counts URLs as Summary.DeadLetters does.
	DeadLetters int64 `json:"dead_letters"`
	// ZKDeadLetters is the host's dead letters in ZooKeeper (R/failed)
	// when the report read them; nil otherwise.
	ZKDeadLetters *int64 `json:"zk_dead_letters,omitempty"`
}

// MIMERow is one line of the MIME types report ("" is shown as
// "(none)": no Content-Type, or no response).
type MIMERow struct {
	MIME  string `json:"mime"`
	URLs  int64  `json:"urls"`
	Bytes int64  `json:"bytes"`
}

// StatusRow is one line of the status codes report: an HTTP status or a
// negative fetch code (fetch.Code*), with its fetch.CodeName.
type StatusRow struct {
	Status int    `json:"status"`
	Name   string `json:"name"`
	URLs   int64  `json:"urls"`
	// Other is set on the row that sums the codes folded away.
	Other bool `json:"other,omitempty"`
}

// SeedRow is one line of the seeds report.
type SeedRow struct {
	Seed string `json:"seed"`
	// Status is the seed's last attempt's status; Crawled is Status > 0.
	Status  int  `json:"status"`
	Crawled bool `json:"crawled"`
	// Redirect is the URL the seed redirected to (its first hop), "" if
	// none was logged; Final is the end of the redirect chain as far as
	// the logs show and FinalStatus its status.
	Redirect    string `json:"redirect,omitempty"`
	Final       string `json:"final,omitempty"`
	FinalStatus int    `json:"final_status,omitempty"`
}

// BadLine is a crawl-log line that could not be used, skipped.
type BadLine struct {
	File   string `json:"file"`
	Line   int64  `json:"line"`
	Reason string `json:"reason"`
}
