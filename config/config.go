// Package config holds a crawl's live settings: the JSON document stored in
// the crawl's config znode (R/config, see docs/design.md), its defaults, and
// its strict validation.
//
// Every worker watches the znode and applies each new version live; an
// invalid document is rejected with an error naming the key and the reason,
// and the worker keeps the last good config. Units are part of the key names
// (per_host_rate_per_s, fetch_timeout_ms, max_body_bytes).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/zkcrawl/zkcrawl/dedup"
)

// Scope modes for Config.Scope. A link is judged against the host of the
// page it was found on, so by induction a crawl never leaves its seeds'
// hosts (ScopeSameHost) or registrable domains (ScopeSameDomain).
const (
	ScopeSameHost   = "same_host"
	ScopeSameDomain = "same_domain"
	ScopeAny        = "any"
)

// Host budget actions for Config.HostBudgetAction: what happens to a
// host's remaining URLs once it reached MaxPagesPerHost (docs/design.md,
// "Per-host budgets").
const (
	// HostBudgetKeep keeps them in the backlog, unmoved (held), and keeps
	// accepting the host's new links within the quotas.
	HostBudgetKeep = "keep"
	// HostBudgetDrop drops them and the host's new links, counted under
	// drop reason host_budget.
	HostBudgetDrop = "drop"
)

// Config is one version of the crawl settings. The JSON keys are the names a
// user writes in R/config, in a --config file and with `crawlctl config set`.
type Config struct {
	// UserAgent is sent with every request and used for robots.txt group
	// matching (RFC 9309 section 2.2.1 matches on its product token).
	UserAgent string `json:"user_agent"`
	// PerHostRatePerS is the cluster-wide request rate to one host, in
	// requests per second; 0 means unlimited. A stricter robots.txt
	// Crawl-delay wins. With burst 1 and one request in flight the
	// interval is counted from one request's arrival at the server to the
	// next one's start (fetch.Politeness.Reached).
	PerHostRatePerS float64 `json:"per_host_rate_per_s"`
	// PerHostBurst is the token-bucket burst per host (requests), >= 1.
	PerHostBurst int `json:"per_host_burst"`
	// PerHostMaxInFlight caps concurrent requests to one host, >= 1.
	PerHostMaxInFlight int `json:"per_host_max_in_flight"`
	// WorkerConcurrency is the smallest request budget a worker uses when
	// MaxInFlight is 0 (automatic): it never allows fewer than this many
	// requests in flight. It does not cap them (MaxInFlight does): items
	// that wait for their politeness key's turn hold a claim, not a request
	// slot, so a worker keeps as many requests in flight as its hosts'
	// rates and latencies need (docs/design.md, "In-flight budget").
	WorkerConcurrency int `json:"worker_concurrency"`
	// MaxInFlight caps the requests one worker has in flight at once (a
	// request holds a slot from when its key's politeness admits it until
	// its response is read); 0 (the default) means automatic: the larger
	// of WorkerConcurrency and what the worker's file descriptor limit and
	// memory allow (worker.RequestBudget). A worker holds at most
	// ClaimsPerRequest x this many claims.
	MaxInFlight int `json:"max_in_flight"`
	// MaxDepth is the largest hop count from a seed that is still fetched;
	// -1 means unlimited (only sensible with include/exclude rules).
	MaxDepth int `json:"max_depth"`
	// Scope is one of ScopeSameHost (default), ScopeSameDomain, ScopeAny.
	Scope string `json:"scope"`
	// Include, when non-empty, admits only URLs matching one of these
	// regular expressions (RE2 syntax, over the normalized URL).
	Include []string `json:"include"`
	// Exclude drops URLs matching any of these regular expressions; exclude
	// wins over include.
	Exclude []string `json:"exclude"`
	// MaxPages stops the crawl from enqueuing more once this many pages were
	// fetched cluster-wide (approximate: see docs/design.md); 0 = no cap.
	MaxPages int64 `json:"max_pages"`
	// MaxPagesPerHost caps the pages per host key over the whole crawl:
	// the URLs a shard group's owner moves to the ready window (each is
	// fetched, or becomes a dead letter, once), counted durably in the
	// group's cursor; 0 = no cap. At the cap, HostBudgetAction applies.
	MaxPagesPerHost int64 `json:"max_pages_per_host"`
	// HostBudgetAction is HostBudgetKeep (default) or HostBudgetDrop.
	HostBudgetAction string `json:"host_budget_action"`
	// FetchTimeoutMS bounds one fetch, connect to last body byte, in ms.
	FetchTimeoutMS int `json:"fetch_timeout_ms"`
	// MaxBodyBytes caps the stored body; longer bodies are truncated and
	// recorded with WARC-Truncated: length (WARC 1.1 section 5.13).
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// ObeyRobots makes workers honour robots.txt (RFC 9309); default true.
	ObeyRobots bool `json:"obey_robots"`
	// MaxAttempts is how many times a URL is tried before it goes to the
	// dead-letter parent R/failed.
	MaxAttempts int `json:"max_attempts"`
	// RetryBackoffMS is the delay before the first retry in ms; it doubles
	// with each further attempt.
	RetryBackoffMS int `json:"retry_backoff_ms"`
	// Paused stops every worker from claiming new items; in-flight fetches
	// finish.
	Paused bool `json:"paused"`
	// AllowPrivateNetworks lets workers connect to loopback, private and
	// link-local addresses (SSRF guard off). Tests and the demo set it.
	AllowPrivateNetworks bool `json:"allow_private_networks"`
	// MaxQueuedPerHost caps the URLs queued (ready plus backlog) for one
	// host key; links over it are dropped and counted (docs/design.md,
	// "Quotas"). 0 = no cap.
	MaxQueuedPerHost int64 `json:"max_queued_per_host"`
	// MaxQueuedTotal caps the URLs queued in the whole crawl, enforced per
	// shard group as MaxQueuedTotal/groups; 0 = no cap.
	MaxQueuedTotal int64 `json:"max_queued_total"`
	// MaxFrontierBytes caps the bytes of queued records and seen-set
	// fingerprints the crawl keeps in ZooKeeper, enforced per shard group as
	// MaxFrontierBytes/groups (raw record bytes are counted, before
	// compression); links over it are dropped and counted.
	MaxFrontierBytes int64 `json:"max_frontier_bytes"`
	// MaxURLLength is the longest normalized URL, in bytes, that is
	// enqueued; longer links are dropped and counted.
	MaxURLLength int `json:"max_url_length"`
	// MaxDeadLetters caps the dead letters kept in R/failed; past it a URL
	// that fails for good is only logged in the crawl log (and counted),
	// so a site of dead links cannot fill ZooKeeper. 0 = no cap.
	MaxDeadLetters int64 `json:"max_dead_letters"`
	// PageRequisites makes workers fetch and store every page's embedded
	// resources (images incl. srcset, scripts, style sheets and the url()s
	// and @imports in them, imported sheets' too at any depth, icons,
	// preloads, manifests, media, object and embed) at the page's depth
	// (Heritrix's "E" hop; max_depth counts links only), each URL once;
	// default true.
	PageRequisites bool `json:"page_requisites"`
	// RequisitesScope is the scope mode requisites are judged by, against
	// the page that embeds them: ScopeSameHost, ScopeSameDomain or ScopeAny
	// (default, so a page's CDN assets are captured). Include and Exclude
	// apply as for links.
	RequisitesScope string `json:"requisites_scope"`
	// Sitemaps makes workers fetch, for each seed, the Sitemap: URLs of its
	// host's robots.txt and /sitemap.xml, and enqueue the URLs they list at
	// the seed's depth + 1 (sitemap protocol 0.9); default true.
	Sitemaps bool `json:"sitemaps"`
	// Recrawl makes the crawl continuous: every URL fetched is scheduled
	// to be fetched again (docs/design.md, "Recrawl"), conditionally
	// (If-None-Match, If-Modified-Since), and an unchanged page is stored
	// as a revisit record. Default false: a one-pass crawl.
	Recrawl bool `json:"recrawl"`
	// DelayFactor, when > 0, makes the wait before a host's next request at
	// least DelayFactor times the duration of its last fetch (Heritrix's
	// delayFactor), capped at MaxDelayMS; 0 (default) turns it off.
	DelayFactor float64 `json:"delay_factor"`
	// MaxDelayMS caps the wait DelayFactor asks for, in milliseconds.
	MaxDelayMS int `json:"max_delay_ms"`

	// Retry-After and 429/503 backoff (fetch.Politeness.Answered).
	//
	// MaxRetryAfterS caps, in seconds, how long a 429 or 503 answer holds
	// its politeness key: a Retry-After (RFC 9110 section 10.2.3) longer
	// than it is cut to it, and the backoff of a key that answers 429 or
	// 503 again and again grows to it at most. 0 turns both off (Retry-After
	// ignored). Default 3600, at most 86400.
	MaxRetryAfterS int `json:"max_retry_after_s"`
	// PolitenessKey is what one politeness budget (rate, in-flight cap,
	// per-host quotas, shard ownership) covers: PolitenessHost,
	// PolitenessDomain or PolitenessIP (docs/design.md, "Politeness keys").
	// It is fixed when the crawl is created (the seeder reads it from its
	// --config file); "" (default, omitted from the document) means "as
	// the crawl was created". A live config naming another kind than the
	// crawl's is refused by workers and crawlctl (frontier.Layout).
	PolitenessKey string `json:"politeness_key,omitempty"`
	// DedupIndex is the redis URL of the crawl's cluster-wide payload-digest
	// index (dedup.CheckURL's forms, e.g. "redis://10.0.0.5:6379/0"): a
	// 2xx payload already stored under another URL, by any worker, is
	// written as an identical-payload-digest revisit record of that
	// response (docs/design.md, "Digest index"). "" (default) turns it off.
	DedupIndex string `json:"dedup_index"`
	// DedupMinBytes is the smallest payload, in bytes as transferred, that
	// is looked up and entered in DedupIndex: below it an entry costs more
	// than the revisit saves. Default 1024.
	DedupMinBytes int64 `json:"dedup_min_bytes"`
	// RecrawlIntervalMinS and RecrawlIntervalMaxS bound a URL's recrawl
	// interval, in seconds (defaults 3,600 and 2,592,000), unless a rule of
	// RecrawlRules matches it.
	RecrawlIntervalMinS int64 `json:"recrawl_interval_min_s"`
	RecrawlIntervalMaxS int64 `json:"recrawl_interval_max_s"`
	// RecrawlRules override the bounds per URL: the first rule whose Match
	// (RE2, over the normalized URL) matches gives them.
	RecrawlRules []RecrawlRule `json:"recrawl_rules"`
	// RecrawlNewFirst makes a host's new URLs go to the fetchers before
	// its due recrawls when both wait (default true).
	RecrawlNewFirst bool `json:"recrawl_new_first"`

	// HTTP/2.

	// HTTP2 makes https fetches offer HTTP/2 by ALPN (RFC 7301) before
	// HTTP/1.1, so servers that refuse HTTP/1.1 are crawled; their records
	// are the HTTP/1.1 form of the exchange with "WARC-Protocol: h2"
	// (docs/design.md, "HTTP/2"). Default true; false: HTTP/1.1 only,
	// every record byte-exact. No cleartext HTTP/2 (h2c).
	HTTP2 bool `json:"http2"`
	// RecrawlDueBefore, RFC 3339, makes every scheduled URL captured
	// before it (and matching RecrawlDueMatch, when set) due at once:
	// `crawlctl recrawl --now` sets it; "" (default, omitted) none.
	RecrawlDueBefore string `json:"recrawl_due_before,omitempty"`
	// RecrawlDueMatch, RE2 over the normalized URL, narrows
	// RecrawlDueBefore; "" matches every URL.
	RecrawlDueMatch string `json:"recrawl_due_match,omitempty"`

	// Fetching through proxies (docs/design.md, "Proxies").

	// Proxy is the proxy every fetch goes through unless a rule of
	// ProxyRules matches: an http://, https:// or socks5:// URL with a
	// host and optionally user:password (sent as Proxy-Authorization
	// Basic, or as SOCKS5 username/password, RFC 1929); "" (default) or
	// "direct" for none. The password is never logged nor shown.
	Proxy string `json:"proxy"`
	// ProxyRules route fetches per URL: the first rule whose Match (RE2,
	// over the URL fetched) matches gives the proxy ("" or "direct": no
	// proxy); a URL no rule matches goes through Proxy.
	ProxyRules []ProxyRule `json:"proxy_rules"`

	// Cookies (docs/design.md, "Cookies").
	//
	// Cookies gives each politeness key one RFC 6265 cookie jar in the
	// worker that owns its shard group: the Set-Cookie fields of its
	// responses are sent back on its later requests, pages and sitemaps
	// (robots.txt fetches carry none). Default true.
	Cookies bool `json:"cookies"`
	// CookiesSeed are cookies every key's jar starts with, for pages
	// behind a login (CookieSeed); at most MaxCookieSeeds entries. Their
	// values never appear in logs or status. Ignored while Cookies is
	// false.
	CookiesSeed CookieSeeds `json:"cookies_seed"`
	// Content rules (docs/design.md, "Content rules"): what is read of a
	// response, by its media type, and where links are looked for.
	//
	// AcceptMIME, when non-empty, lets only 2xx responses whose media
	// type matches one of these MIMEPatterns be read past their header;
	// RejectMIME stops those matching any of its patterns (reject wins).
	// A stopped response is logged with fetch.CodeMIMERejected and not
	// stored. A missing Content-Type counts as application/octet-stream.
	// Page requisites, sitemaps and robots.txt are exempt.
	AcceptMIME []string `json:"accept_mime"`
	RejectMIME []string `json:"reject_mime"`
	// MaxBodyBytesRules: the first rule whose MIME matches a response's
	// media type caps its body instead of MaxBodyBytes.
	MaxBodyBytesRules []BodyRule `json:"max_body_bytes_rules"`
	// ExtractJSLinks makes workers take, from 2xx JavaScript responses,
	// the string literals that look like URLs (fetch.ExtractJSLinks,
	// Heritrix's ExtractorJS), as speculative links (hop "X"); default
	// false.
	ExtractJSLinks bool `json:"extract_js_links"`
	// ExtractPDFLinks makes workers take, from complete 2xx PDF responses
	// of at most fetch.MaxPDFParseBytes that are not requisites, the URIs of link annotations
	// (fetch.ExtractPDFLinks, Heritrix's ExtractorPDF), as links (hop
	// "L", one depth); default false.
	ExtractPDFLinks bool `json:"extract_pdf_links"`

	// Render says which HTML pages are rendered in a headless browser
	// after their fetch (RenderNever, RenderAlways, RenderAuto; default
	// never); RenderRules override it per URL (render.go).
	Render      string       `json:"render"`
	RenderRules []RenderRule `json:"render_rules"`
	// RenderConcurrency is the browser pages one worker renders at once.
	RenderConcurrency int `json:"render_concurrency"`
	// RenderMemoryMB is the browser's memory budget per worker in MiB (the
	// proportional set size of its process tree): over it, one page at a
	// time.
	RenderMemoryMB int `json:"render_memory_mb"`
	// RenderTimeoutMS bounds one page's whole render, its subrequests
	// included, in milliseconds.
	RenderTimeoutMS int `json:"render_timeout_ms"`
	// RenderScreenshot stores a PNG of each rendered page's viewport as a
	// WARC resource record (WARC-Target-URI urn:screenshot:<page URL>).
	RenderScreenshot bool `json:"render_screenshot"`
}

// RecrawlRule is one entry of Config.RecrawlRules: URLs matching Match get
// recrawl intervals within [MinS, MaxS] seconds.
type RecrawlRule struct {
	Match string `json:"match"`
	MinS  int64  `json:"min_s"`
	MaxS  int64  `json:"max_s"`
}

// MaxRecrawlIntervalS is the longest recrawl interval a config may set
// (2^31 s, what a frontier record holds).
const MaxRecrawlIntervalS = 1 << 31

// MaxRecrawlRules bounds Config.RecrawlRules.
const MaxRecrawlRules = 1000

// Politeness key kinds for Config.PolitenessKey (frontier.KeyHost,
// KeyDomain and KeyIP are these names).
const (
	// PolitenessHost: one budget per host (host:port, default port left out).
	PolitenessHost = "host"
	// PolitenessDomain: one budget per registrable domain (Public Suffix List).
	PolitenessDomain = "domain"
	// PolitenessIP: one budget per resolved address of the host name, so
	// virtual hosts on one server share it.
	PolitenessIP = "ip"
)

// DefaultUserAgent is the user_agent of a crawl that sets none. Its
// product token "zkcrawl" is matched against robots.txt groups (RFC 9309
// section 2.2.1); its comment asks the operator for a contact URL, which a
// crawl of other people's sites should give (workers warn while it is left
// as the default on a crawl that does not set allow_private_networks).
const DefaultUserAgent = "zkcrawl/0.1 (+https://github.com/zkcrawl/zkcrawl; operator contact URL not set)"

// DefaultFetchTimeoutMS is the fetch_timeout_ms of a crawl that sets none,
// and the fetch client's default (fetch.DefaultTimeout): one whole fetch,
// connect to last body byte, in ms.
const DefaultFetchTimeoutMS = 30000

// DefaultMaxBodyBytes is the max_body_bytes of a crawl that sets none, and
// the fetch client's default (fetch.DefaultMaxBodyBytes): 10 MiB of body
// per response, as transferred.
const DefaultMaxBodyBytes int64 = 10 << 20

// UserAgentHint is the one-line advice given when a public crawl runs with
// DefaultUserAgent.
const UserAgentHint = "user_agent is the default: name your crawler and give your contact URL, e.g. crawlctl config set 'user_agent=\"examplebot/1.0 (+https://example.org/bot)\"'"

// NeedsContactUA reports whether c crawls public sites (allow_private_networks
// false) with DefaultUserAgent.
func (c Config) NeedsContactUA() bool {
	return c.UserAgent == DefaultUserAgent && !c.AllowPrivateNetworks
}

// MaxMaxInFlight is the largest max_in_flight a config may set: requests
// in flight per worker, each holding a connection (a file descriptor) and
// up to max_body_bytes of body.
const MaxMaxInFlight = 65536

// ClaimsPerRequest is how many claims a worker may hold per slot of its
// request budget (max_in_flight, or the automatic one): an item waiting
// for its politeness key's turn holds a claim but no request slot, and on
// a wide web at 1 request/s per host and 150 ms per response each request
// in flight has about six such items waiting behind it. A claim costs the
// worker about 10 KB (the item and its goroutine) and ZooKeeper one
// ephemeral claim node.
const ClaimsPerRequest = 8

// Default returns the settings used for every key a document leaves out.
func Default() Config {
	return Config{
		UserAgent:          DefaultUserAgent,
		PerHostRatePerS:    1,
		PerHostBurst:       1,
		PerHostMaxInFlight: 1,
		WorkerConcurrency:  32,
		MaxDepth:           20,
		Scope:              ScopeSameHost,
		HostBudgetAction:   HostBudgetKeep,
		FetchTimeoutMS:     DefaultFetchTimeoutMS,
		MaxBodyBytes:       DefaultMaxBodyBytes,
		ObeyRobots:         true,
		MaxAttempts:        3,
		RetryBackoffMS:     5000,
		MaxQueuedPerHost:   100_000,
		MaxFrontierBytes:   1 << 30,
		MaxURLLength:       2048,
		MaxDeadLetters:     10_000,
		PageRequisites:     true,
		RequisitesScope:    ScopeAny,
		Sitemaps:           true,
		MaxDelayMS:         30000,
		MaxRetryAfterS:     3600,
		DedupMinBytes:      1024,

		RecrawlIntervalMinS: 3600,
		RecrawlIntervalMaxS: 2592000,
		RecrawlNewFirst:     true,

		Cookies: true,
		HTTP2:   true,

		Render:            RenderNever,
		RenderConcurrency: 2,
		RenderMemoryMB:    1024,
		RenderTimeoutMS:   30000,
	}
}

// ErrInvalid is wrapped by every validation error, so callers can tell a bad
// document (keep the last good config) from an I/O error.
var ErrInvalid = errors.New("invalid crawl config")

// maxDocBytes bounds a config document; a znode holds at most 1 MiB anyway.
const maxDocBytes = 256 << 10

// Parse decodes a JSON document over Default: keys it leaves out keep their
// default values. It rejects unknown keys, wrong types, trailing data and out
// of range values with an error wrapping ErrInvalid that names the key.
func Parse(data []byte) (Config, error) {
	return Merge(Default(), data)
}

// Merge decodes a JSON document over base, with the same strictness as Parse.
// An empty document returns base after validating it.
func Merge(base Config, data []byte) (Config, error) {
	if len(data) > maxDocBytes {
		return Config{}, fmt.Errorf("%w: document is %d bytes, the limit is %d", ErrInvalid, len(data), maxDocBytes)
	}
	c := base
	if len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Config{}, fmt.Errorf("%w: %s", ErrInvalid, describeJSONError(err))
		}
		if _, err := dec.Token(); err != io.EOF {
			return Config{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("key %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "not valid JSON: the document ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown key " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return err.Error()
}

// Validate checks every key's range and compiles the regular expressions.
// The error wraps ErrInvalid and names the first offending key.
func (c Config) Validate() error {
	bad := func(key string, format string, args ...any) error {
		return fmt.Errorf("%w: key %q: %s", ErrInvalid, key, fmt.Sprintf(format, args...))
	}
	switch {
	case strings.TrimSpace(c.UserAgent) == "" || len(c.UserAgent) > 512 || strings.ContainsAny(c.UserAgent, "\r\n"):
		return bad("user_agent", "must be 1..512 characters on one line")
	case c.PerHostRatePerS < 0 || c.PerHostRatePerS > 10000:
		return bad("per_host_rate_per_s", "%v is outside 0..10000 (0 = unlimited)", c.PerHostRatePerS)
	case c.PerHostBurst < 1 || c.PerHostBurst > 1000:
		return bad("per_host_burst", "%d is outside 1..1000", c.PerHostBurst)
	case c.PerHostMaxInFlight < 1 || c.PerHostMaxInFlight > 1000:
		return bad("per_host_max_in_flight", "%d is outside 1..1000", c.PerHostMaxInFlight)
	case c.WorkerConcurrency < 1 || c.WorkerConcurrency > 4096:
		return bad("worker_concurrency", "%d is outside 1..4096", c.WorkerConcurrency)
	case c.MaxInFlight < 0 || c.MaxInFlight > MaxMaxInFlight:
		return bad("max_in_flight", "%d is outside 0..%d (0 = automatic)", c.MaxInFlight, MaxMaxInFlight)
	case c.MaxDepth < -1 || c.MaxDepth > 10000:
		return bad("max_depth", "%d is outside -1..10000 (-1 = unlimited)", c.MaxDepth)
	case c.Scope != ScopeSameHost && c.Scope != ScopeSameDomain && c.Scope != ScopeAny:
		return bad("scope", "%q is not one of %s, %s, %s", c.Scope, ScopeSameHost, ScopeSameDomain, ScopeAny)
	case c.MaxPages < 0:
		return bad("max_pages", "%d is negative (0 = no cap)", c.MaxPages)
	case c.MaxPagesPerHost < 0 || c.MaxPagesPerHost > 1e12:
		return bad("max_pages_per_host", "%d is outside 0..1000000000000 (0 = no cap)", c.MaxPagesPerHost)
	case c.HostBudgetAction != HostBudgetKeep && c.HostBudgetAction != HostBudgetDrop:
		return bad("host_budget_action", "%q is not one of %s, %s", c.HostBudgetAction, HostBudgetKeep, HostBudgetDrop)
	case c.FetchTimeoutMS < 100 || c.FetchTimeoutMS > 600000:
		return bad("fetch_timeout_ms", "%d is outside 100..600000", c.FetchTimeoutMS)
	case c.MaxBodyBytes < MinMaxBodyBytes || c.MaxBodyBytes > MaxMaxBodyBytes:
		return bad("max_body_bytes", "%d is outside 1024..1073741824", c.MaxBodyBytes)
	case c.MaxAttempts < 1 || c.MaxAttempts > 100:
		return bad("max_attempts", "%d is outside 1..100", c.MaxAttempts)
	case c.RetryBackoffMS < 0 || c.RetryBackoffMS > 86400000:
		return bad("retry_backoff_ms", "%d is outside 0..86400000", c.RetryBackoffMS)
	case c.MaxQueuedPerHost < 0 || c.MaxQueuedPerHost > 1e9:
		return bad("max_queued_per_host", "%d is outside 0..1000000000 (0 = no cap)", c.MaxQueuedPerHost)
	case c.MaxQueuedTotal < 0 || c.MaxQueuedTotal > 1e12:
		return bad("max_queued_total", "%d is outside 0..1000000000000 (0 = no cap)", c.MaxQueuedTotal)
	case c.MaxFrontierBytes < 1<<20 || c.MaxFrontierBytes > 1<<40:
		return bad("max_frontier_bytes", "%d is outside 1048576..1099511627776 (1 MiB..1 TiB)", c.MaxFrontierBytes)
	case c.MaxURLLength < 64 || c.MaxURLLength > 2048: // 2048 = frontier.MaxURLLength, what Normalize accepts
		return bad("max_url_length", "%d is outside 64..2048", c.MaxURLLength)
	case c.MaxDeadLetters < 0 || c.MaxDeadLetters > 1e9:
		return bad("max_dead_letters", "%d is outside 0..1000000000 (0 = no cap)", c.MaxDeadLetters)
	case c.RequisitesScope != ScopeSameHost && c.RequisitesScope != ScopeSameDomain && c.RequisitesScope != ScopeAny:
		return bad("requisites_scope", "%q is not one of %s, %s, %s", c.RequisitesScope, ScopeSameHost, ScopeSameDomain, ScopeAny)
	case !(c.DelayFactor >= 0 && c.DelayFactor <= 100):
		return bad("delay_factor", "%v is outside 0..100 (0 = off)", c.DelayFactor)
	case c.MaxDelayMS < 0 || c.MaxDelayMS > 3600000:
		return bad("max_delay_ms", "%d is outside 0..3600000", c.MaxDelayMS)
	case c.MaxRetryAfterS < 0 || c.MaxRetryAfterS > 86400:
		return bad("max_retry_after_s", "%d is outside 0..86400 (seconds; 0 = Retry-After and backoff off)", c.MaxRetryAfterS)
	case c.DedupMinBytes < 0 || c.DedupMinBytes > 1<<30:
		return bad("dedup_min_bytes", "%d is outside 0..1073741824", c.DedupMinBytes)
	case c.DedupIndex != "" && dedup.CheckURL(c.DedupIndex) != nil:
		return bad("dedup_index", "%v (want \"\" for off, or redis://HOST:PORT/DB)", dedup.CheckURL(c.DedupIndex))
	case c.PolitenessKey != "" && c.PolitenessKey != PolitenessHost && c.PolitenessKey != PolitenessDomain && c.PolitenessKey != PolitenessIP:
		return bad("politeness_key", "%q is not one of %s, %s, %s", c.PolitenessKey, PolitenessHost, PolitenessDomain, PolitenessIP)
	}
	if err := c.validateRecrawl(bad); err != nil {
		return err
	}
	if err := c.validateProxy(bad); err != nil {
		return err
	}
	if err := c.validateCookies(bad); err != nil {
		return err
	}
	if err := c.validateContent(bad); err != nil {
		return err
	}
	if err := c.validateRender(bad); err != nil {
		return err
	}
	for key, list := range map[string][]string{"include": c.Include, "exclude": c.Exclude} {
		for i, p := range list {
			if _, err := regexp.Compile(p); err != nil {
				return bad(key, "pattern %d %q: %v", i, p, err)
			}
		}
	}
	return nil
}

// Redacted returns c with the values of its seed cookies replaced
// (CookieSeed.Redacted): the form to print or log.
func (c Config) Redacted() Config {
	c.CookiesSeed = RedactSeeds(c.CookiesSeed)
	return c
}

// FetchTimeout is FetchTimeoutMS as a duration.
func (c Config) FetchTimeout() time.Duration {
	return time.Duration(c.FetchTimeoutMS) * time.Millisecond
}

// RetryDelay is the wait before attempt number attempt+1 (attempt >= 1):
// RetryBackoffMS doubled per earlier attempt, capped at one hour.
func (c Config) RetryDelay(attempt int) time.Duration {
	d := time.Duration(c.RetryBackoffMS) * time.Millisecond
	for i := 1; i < attempt && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// Encode returns the document as indented JSON, the form written to R/config.
// Empty lists (include, exclude, recrawl_rules, proxy_rules, cookies_seed,
// accept_mime, reject_mime, max_body_bytes_rules, render_rules) are written as [] (never
// null). Seed cookie values are written as they are: the znode is where
// they live (Redacted is the form to show).
func (c Config) Encode() []byte {
	if c.Include == nil {
		c.Include = []string{}
	}
	if c.Exclude == nil {
		c.Exclude = []string{}
	}
	if c.RecrawlRules == nil {
		c.RecrawlRules = []RecrawlRule{}
	}
	if c.ProxyRules == nil {
		c.ProxyRules = []ProxyRule{}
	}
	if c.CookiesSeed == nil {
		c.CookiesSeed = CookieSeeds{}
	}
	if c.AcceptMIME == nil {
		c.AcceptMIME = []string{}
	}
	if c.RejectMIME == nil {
		c.RejectMIME = []string{}
	}
	if c.RenderRules == nil {
		c.RenderRules = []RenderRule{}
	}
	if c.MaxBodyBytesRules == nil {
		c.MaxBodyBytesRules = []BodyRule{}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		panic(err) // Config has only plain fields: cannot fail.
	}
	return b
}
