package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"
)

// robots.txt limits and defaults.
const (
	// DefaultRobotsTTL is how long a fetched robots.txt (or a 4xx "allow
	// all") is cached per origin. RFC 9309 section 2.4 says crawlers should
	// not use a cached copy for more than 24 hours.
	DefaultRobotsTTL = time.Hour
	// DefaultRobotsErrorTTL is how long an unreachable robots.txt (5xx, 429,
	// network failure: complete disallow) is cached before it is tried again.
	DefaultRobotsErrorTTL = time.Minute
	// DefaultMaxCrawlDelay caps the Crawl-delay a robots.txt may impose, so a
	// site cannot stall a worker's slot for hours.
	DefaultMaxCrawlDelay = 30 * time.Second
	// DefaultRobotsCacheEntries bounds the number of origins cached.
	DefaultRobotsCacheEntries = 100_000
	// DefaultRobotsCacheBytes bounds the estimated heap the cached, parsed
	// robots.txt files keep: 64 MiB, about 100 files at the caps
	// (MaxRobotsBytes, MaxRobotsRules) or thousands of ordinary ones.
	DefaultRobotsCacheBytes = 64 << 20
	// MaxRobotsBytes is how much of a robots.txt is read and parsed: 500 KiB,
	// the minimum RFC 9309 section 2.5 requires crawlers to parse.
	MaxRobotsBytes = 500 << 10
	// maxRobotsRedirects: RFC 9309 section 2.3.1.2, follow at least five
	// consecutive redirects.
	maxRobotsRedirects = 5
)

// RobotsOptions configures NewRobots; zero fields take the defaults above.
type RobotsOptions struct {
	// TTL of a fetched robots.txt or of a 4xx answer. Default DefaultRobotsTTL.
	TTL time.Duration
	// ErrorTTL of an unreachable robots.txt. Default DefaultRobotsErrorTTL.
	ErrorTTL time.Duration
	// MaxCrawlDelay caps CrawlDelay's answer. Default DefaultMaxCrawlDelay.
	MaxCrawlDelay time.Duration
	// MaxEntries bounds the cache (origins). Default DefaultRobotsCacheEntries.
	MaxEntries int
	// MaxBytes bounds the cache by the estimated bytes its parsed files keep;
	// the least recently used origins are dropped first. Default
	// DefaultRobotsCacheBytes.
	MaxBytes int
	// Logger for debug and warning lines. Default slog.Default().
	Logger *slog.Logger
	// Gate, when set, admits every request Robots makes, each redirect
	// hop its own: before requesting target (robotsURL, or a redirect's
	// resolved Location while loading robotsURL) Robots calls it, and it
	// must block until a request to target's host may start (zkcrawl's
	// worker takes a Politeness slot under the crawl's host key of
	// target). Robots calls release once the response is read and, on
	// the last hop, once the outcome is cached, so release may read it
	// (CachedCrawlDelay) and set the Crawl-delay before the slot frees;
	// reached is when the request is taken to have reached the server
	// (Result.Reached; the zero time if no response came), for
	// Politeness.Reached.
	// An error (the caller's ctx ended while waiting, or the gate may
	// not let the caller send now) ends the load uncached: it says
	// nothing of the host. Nil: no gate.
	Gate func(ctx context.Context, robotsURL, target string) (release func(reached time.Time), err error)
	// Fetched, when set, is called with every robots.txt response Robots
	// receives, each redirect hop its own (res.URL is the URL requested,
	// res.Redirect the next hop), whatever its status, before the
	// outcome is decided; a request that got no response is not passed.
	// res holds the raw request and response (at most MaxRobotsBytes of
	// body) for WARC records. It runs on the loading goroutine while the
	// request's Gate slot is held, so it must not block for long; res is
	// the Result Robots goes on reading, so it must not modify it. Nil:
	// not called.
	Fetched func(res *Result)
}

// Robots answers robots.txt questions (RFC 9309) with a cache per origin
// (scheme://host:port). robots.txt is fetched with the crawl's own Fetcher, so
// the SSRF guard, user agent and timeouts apply, and parsed by parseRobots
// (robots_rules.go; capped at MaxRobotsRules rules and MaxRobotsAgents
// User-agent lines, matched in linear time). The cache is a least recently
// used list (github.com/hashicorp/golang-lru/v2/simplelru) capped by entries
// and by bytes. Concurrent questions about an origin not yet cached share one
// fetch (golang.org/x/sync/singleflight).
//
// Outcomes of fetching /robots.txt (RFC 9309 section 2.3.1):
//   - 2xx: the rules are parsed (the first MaxRobotsBytes only).
//   - 3xx: up to 5 redirects are followed, to any host; more, or a 3xx
//     without Location, counts as "unavailable".
//   - 4xx except 429 ("unavailable"): everything is allowed.
//   - 5xx, 429, or a network failure ("unreachable"): everything is
//     disallowed, and the origin is tried again after ErrorTTL. 429 is
//     treated as a server error, as Google does: the site asks us to slow
//     down, which a full allow would not honour.
//
// robots.txt requests go through RobotsOptions.Gate (politeness) when
// set; there is at most one load per origin per TTL.
type Robots struct {
	f    *Fetcher
	opts RobotsOptions
	sf   singleflight.Group

	mu    sync.Mutex
	cache *simplelru.LRU[string, *robotsEntry]
	bytes int // sum of the cached entries' size
}

// robotsEntry is one cached robots.txt outcome.
type robotsEntry struct {
	data    *robotsRules // rules; nil when unreachable
	err     error        // why robots.txt is unreachable (complete disallow)
	expires time.Time
}

// size estimates the heap e keeps, for the cache's byte cap.
func (e *robotsEntry) size() int {
	if e.data != nil {
		return e.data.size
	}
	return robotsBaseBytes
}

// NewRobots returns a Robots that fetches with f.
func NewRobots(f *Fetcher, opts RobotsOptions) *Robots {
	if opts.TTL <= 0 {
		opts.TTL = DefaultRobotsTTL
	}
	if opts.ErrorTTL <= 0 {
		opts.ErrorTTL = DefaultRobotsErrorTTL
	}
	if opts.MaxCrawlDelay <= 0 {
		opts.MaxCrawlDelay = DefaultMaxCrawlDelay
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultRobotsCacheEntries
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultRobotsCacheBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Robots{f: f, opts: opts}
	// NewLRU fails only for a size <= 0, excluded above.
	r.cache, _ = simplelru.NewLRU(opts.MaxEntries, func(_ string, e *robotsEntry) { r.bytes -= e.size() })
	return r
}

// Allowed reports whether robots.txt of rawURL's origin lets userAgent fetch
// rawURL (RFC 9309 section 2.2.2: the longest matching rule wins, Allow on a
// tie, matched against the path and query, '*' and a final '$' as wildcards).
// The groups are those naming the product token of userAgent ("zkcrawl/0.1
// (+...)" -> "zkcrawl", section 2.2.1, case-insensitive), else those of "*";
// an empty userAgent uses the Fetcher's. /robots.txt itself is always
// allowed. Cost: at most one linear scan of the path per rule, and at most
// MaxRobotsRules rules.
//
// A disallowed URL gives (false, nil); callers log CodeRobotsPrecluded. If
// robots.txt is unreachable the answer is (false, *Error) with Code
// CodeRobotsPrerequisiteFailed (retryable); a URL that is not absolute http(s)
// gives (false, *Error) with CodeUnfetchableURI. If ctx ends while
// waiting for the fetch, the error wraps ctx.Err(); the fetch itself goes on
// for other callers and the cache.
func (r *Robots) Allowed(ctx context.Context, rawURL, userAgent string) (bool, error) {
	u, err := parseHTTPURL(rawURL)
	if err != nil {
		return false, err
	}
	if u.EscapedPath() == "/robots.txt" {
		return true, nil
	}
	e, err := r.entry(ctx, u)
	if err != nil {
		return false, err
	}
	if e.err != nil {
		return false, &Error{Code: CodeRobotsPrerequisiteFailed, URL: rawURL, Err: e.err}
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return e.data.allowed(normalizeRobotsPath(path), r.productToken(userAgent)), nil
}

// CrawlDelay returns the Crawl-delay robots.txt sets for userAgent's group
// on origin, capped at RobotsOptions.MaxCrawlDelay; 0 if there is none, if
// robots.txt is unreachable, or if ctx ends first. Crawl-delay is not part of
// RFC 9309; it is the de-facto extension (seconds between requests, the
// largest when several groups apply). origin is any absolute URL of the site
// ("https://example.com", a page URL) or a bare "host:port", taken as http.
// robotsOrigin is the origin whose robots.txt that is, as robots.txt is
// scoped (RFC 9309 section 2.3): "scheme://host:port", lower case, the
// default port filled in ("https://example.com:443"); "" when origin does
// not parse as an http(s) URL.
func (r *Robots) CrawlDelay(ctx context.Context, origin, userAgent string) (d time.Duration, robotsOrigin string) {
	if !strings.Contains(origin, "://") {
		origin = "http://" + origin
	}
	u, err := parseHTTPURL(origin)
	if err != nil {
		return 0, ""
	}
	robotsOrigin = originKey(u)
	e, err := r.entry(ctx, u)
	if err != nil {
		return 0, robotsOrigin
	}
	return r.entryCrawlDelay(e, userAgent), robotsOrigin
}

// entryCrawlDelay is the Crawl-delay cache entry e sets for userAgent,
// capped at RobotsOptions.MaxCrawlDelay; 0 when there is none or e is an
// unreachable robots.txt.
func (r *Robots) entryCrawlDelay(e *robotsEntry, userAgent string) time.Duration {
	if e.err != nil {
		return 0
	}
	return max(min(e.data.crawlDelay(r.productToken(userAgent)), r.opts.MaxCrawlDelay), 0)
}

// Cached reports whether an unexpired robots.txt outcome for rawURL's origin
// is cached, so Allowed and CrawlDelay will not fetch. False for a URL that
// is not absolute http(s).
func (r *Robots) Cached(rawURL string) bool {
	u, err := parseHTTPURL(rawURL)
	if err != nil {
		return false
	}
	return r.cached(originKey(u)) != nil
}

// CachedCrawlDelay is CrawlDelay answered from the cache only: ok is false
// (and nothing is fetched) when no unexpired outcome for rawURL's origin
// is cached. For a Gate's release, which runs inside the load.
func (r *Robots) CachedCrawlDelay(rawURL, userAgent string) (d time.Duration, robotsOrigin string, ok bool) {
	u, err := parseHTTPURL(rawURL)
	if err != nil {
		return 0, "", false
	}
	robotsOrigin = originKey(u)
	e := r.cached(robotsOrigin)
	if e == nil {
		return 0, robotsOrigin, false
	}
	return r.entryCrawlDelay(e, userAgent), robotsOrigin, true
}

// parseHTTPURL parses an absolute http or https URL, or returns an *Error
// with CodeUnfetchableURI (checkHTTPURL).
func parseHTTPURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL) // lower-cases the scheme
	if err != nil {
		return nil, &Error{Code: CodeUnfetchableURI, URL: rawURL, Err: fmt.Errorf("invalid URL: %w", err)}
	}
	if err := checkHTTPURL(rawURL, u); err != nil {
		return nil, err
	}
	return u, nil
}

// productToken returns the robots.txt product token of a User-Agent value
// (see ProductToken). An empty ua uses the Fetcher's.
func (r *Robots) productToken(ua string) string {
	if strings.TrimSpace(ua) == "" {
		ua = r.f.Options().UserAgent
	}
	return ProductToken(ua)
}

// ProductToken returns the product token of a User-Agent value, as
// robots.txt groups and X-Robots-Tag user-agent prefixes match it: its first
// word up to "/", lower-cased, keeping only the letters, "_" and "-" RFC 9309
// section 2.2.1 allows ("zkcrawl/0.1 (+https://...)" gives "zkcrawl").
func ProductToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ \t;("); i >= 0 {
		ua = ua[:i]
	}
	var b strings.Builder
	for _, c := range ua {
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' {
			b.WriteRune(c)
		}
	}
	return strings.ToLower(b.String())
}

// originKey returns the robots.txt cache key of u's origin (RFC 9309
// section 2.3: one robots.txt per scheme, host and port):
// "scheme://host:port" with a lower-case host and the scheme's default port
// filled in, so "http://Example.com/" and "http://example.com:80/" share an
// entry. u's scheme is http or https, lower case (parseHTTPURL).
func originKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// entry returns the cached robots.txt outcome for u's origin, fetching it
// (once for all concurrent callers) when missing or expired.
func (r *Robots) entry(ctx context.Context, u *url.URL) (*robotsEntry, error) {
	key := originKey(u)
	robotsURL := u.Scheme + "://" + u.Host + "/robots.txt"
	for {
		if e := r.cached(key); e != nil {
			return e, nil
		}
		// The fetch runs detached from this caller's cancellation: others
		// may share it, and its result is cached either way. Only the wait
		// at the Gate ends with the ctx of the caller that started the
		// load; the others then load again.
		gateCtx, fetchCtx := ctx, context.WithoutCancel(ctx)
		ch := r.sf.DoChan(key, func() (any, error) {
			if e := r.cached(key); e != nil {
				return e, nil
			}
			e, err := r.load(gateCtx, fetchCtx, robotsURL, key)
			if err != nil {
				return nil, err
			}
			return e, nil
		})
		select {
		case res := <-ch:
			if res.Err == nil {
				return res.Val.(*robotsEntry), nil
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("robots.txt of %s: %w", key, ctx.Err())
			}
			if errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, context.DeadlineExceeded) {
				continue // the caller that waited at the gate is gone
			}
			// The gate refused: a prerequisite failed, nothing cached.
			return nil, &Error{Code: CodeRobotsPrerequisiteFailed, URL: robotsURL, Err: res.Err}
		case <-ctx.Done():
			return nil, fmt.Errorf("robots.txt of %s: %w", key, ctx.Err())
		}
	}
}

// cached returns the unexpired cache entry for key, or nil.
func (r *Robots) cached(key string) *robotsEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.cache.Get(key); ok && time.Now().Before(e.expires) {
		return e
	}
	return nil
}

// store caches e under key, then drops the least recently used entries while
// the cache holds more than MaxBytes (MaxEntries is enforced by the LRU).
func (r *Robots) store(key string, e *robotsEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cache.Remove(key) // a replaced entry's size is subtracted by the eviction callback
	r.bytes += e.size()
	r.cache.Add(key, e)
	for r.bytes > r.opts.MaxBytes && r.cache.Len() > 1 {
		r.cache.RemoveOldest()
	}
}

// cacheBytes returns the estimated bytes the cache keeps.
func (r *Robots) cacheBytes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// load fetches robots.txt at robotsURL, following redirects, each request
// admitted by the Gate (waiting with gateCtx), turns the outcome into a
// cache entry (see the Robots doc for the rules) and caches it under key
// before the last request's gate release. Errors: only the Gate's refusal
// (a wait cut off by gateCtx, or the Gate's own error; nothing cached).
func (r *Robots) load(gateCtx, ctx context.Context, robotsURL, key string) (*robotsEntry, error) {
	var g gateHold
	e, err := r.loadGated(gateCtx, ctx, robotsURL, &g)
	if err == nil {
		r.store(key, e)
	}
	g.release()
	return e, err
}

// gateHold is the Gate slot of the robots.txt request made last: its
// release and when the request reached the server.
type gateHold struct {
	rel     func(reached time.Time)
	reached time.Time
}

// release frees the held slot, if any.
func (g *gateHold) release() {
	if g.rel != nil {
		g.rel(g.reached)
	}
	*g = gateHold{}
}

// loadGated is load's request loop; g holds the gate slot of the request
// made last (none without a Gate), for load to release after caching.
func (r *Robots) loadGated(gateCtx, ctx context.Context, robotsURL string, g *gateHold) (*robotsEntry, error) {
	log := r.opts.Logger
	allowAll := func(why string) *robotsEntry {
		log.Debug("robots.txt unavailable: allow all", "url", robotsURL, "why", why)
		return &robotsEntry{data: parseRobots(nil), expires: time.Now().Add(r.opts.TTL)}
	}
	unreachable := func(err error) *robotsEntry {
		log.Debug("robots.txt unreachable: disallow all", "url", robotsURL, "err", err)
		return &robotsEntry{err: err, expires: time.Now().Add(r.opts.ErrorTTL)}
	}

	target := robotsURL
	for hop := 0; ; hop++ {
		if r.opts.Gate != nil {
			g.release() // the previous hop's slot
			rel, err := r.opts.Gate(gateCtx, robotsURL, target)
			if err != nil {
				// The gate's refusal (a wait cut off, a caller that may
				// not send now) says nothing of the host: nothing cached.
				return nil, fmt.Errorf("robots.txt %s: request to %s not admitted: %w", robotsURL, target, err)
			}
			g.rel = rel
		}
		res, err := r.f.fetch(ctx, target, MaxRobotsBytes, Conditions{}, false)
		if err != nil {
			return unreachable(fmt.Errorf("fetching %s: %w", target, err)), nil
		}
		g.reached = res.Reached
		if r.opts.Fetched != nil {
			r.opts.Fetched(res)
		}
		switch s := res.Status; {
		case s >= 200 && s <= 299:
			data, err := r.parse(target, res)
			if err != nil {
				return unreachable(err), nil
			}
			log.Debug("robots.txt fetched", "url", target, "bytes", len(res.Body))
			return &robotsEntry{data: data, expires: time.Now().Add(r.opts.TTL)}, nil
		case s >= 300 && s <= 399:
			if res.Redirect == "" {
				return allowAll(fmt.Sprintf("status %d without Location", s)), nil
			}
			if hop >= maxRobotsRedirects {
				return allowAll(fmt.Sprintf("more than %d redirects", maxRobotsRedirects)), nil
			}
			target = res.Redirect
		case s == 429 || (s >= 500 && s <= 599):
			return unreachable(fmt.Errorf("robots.txt %s: HTTP status %d", target, s)), nil
		case s >= 400 && s <= 499:
			return allowAll(fmt.Sprintf("status %d", s)), nil
		default:
			return unreachable(fmt.Errorf("robots.txt %s: unexpected HTTP status %d", target, s)), nil
		}
	}
}

// parse decodes and parses a 2xx robots.txt response. Only the first
// MaxRobotsBytes are used; a cut-off last line is dropped. A body that
// cannot be decoded is an error (the caller treats it as unreachable).
// Invalid lines are ignored (RFC 9309 section 2.2), and so are the rules
// over MaxRobotsRules, with a warning.
func (r *Robots) parse(target string, res *Result) (*robotsRules, error) {
	body, err := res.DecodedBody(MaxRobotsBytes)
	partial := res.Truncated || errors.Is(err, ErrDecodedTooLarge)
	if err != nil && !partial {
		return nil, fmt.Errorf("robots.txt %s: %w", target, err)
	}
	if partial {
		if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
			body = body[:i+1]
		}
	}
	rules := parseRobots(body)
	if rules.dropped > 0 {
		r.opts.Logger.Warn("robots.txt over the caps; ignored its later lines", "url", target,
			"ignored_lines", rules.dropped, "max_rules", MaxRobotsRules, "max_agents", MaxRobotsAgents)
	}
	return rules, nil
}

// splitLines splits on LF, CRLF and bare CR (RFC 9309 section 2.2 allows
// all three end-of-line forms).
func splitLines(b []byte) [][]byte {
	return bytes.FieldsFunc(b, func(r rune) bool { return r == '\n' || r == '\r' })
}

// Sitemaps returns the Sitemap: URLs listed in the robots.txt of rawURL's
// origin (RFC 9309 section 2.2.4 allows such "other records"; the sitemap
// protocol 0.9 defines them), as written, in file order; nil when robots.txt
// is missing (4xx), unreachable, or ctx ends first.
func (r *Robots) Sitemaps(ctx context.Context, rawURL string) []string {
	u, err := parseHTTPURL(rawURL)
	if err != nil {
		return nil
	}
	e, err := r.entry(ctx, u)
	if err != nil || e.err != nil || e.data == nil {
		return nil
	}
	return append([]string(nil), e.data.Sitemaps...)
}
