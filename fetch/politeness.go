package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultIdleTTL is how long a host's politeness state is kept after its last
// request when PolitenessOptions.IdleTTL is zero.
const DefaultIdleTTL = 10 * time.Minute

// PolitenessOptions configures NewPoliteness. The three limits can be changed
// later with SetLimits.
type PolitenessOptions struct {
	// RatePerSec is the request rate allowed per host, in requests per
	// second (0.5 = one request every 2 s). 0 means unlimited.
	RatePerSec float64
	// Burst is how many requests may start back to back after a host has
	// been idle (token bucket size). 0 means 1.
	Burst int
	// MaxInFlight caps concurrent requests per host. 0 means unlimited.
	MaxInFlight int
	// MaxRequests caps concurrent requests across all hosts of this
	// Politeness (a process's request budget, see Acquire); 0 means
	// unlimited. It can be changed later with SetMaxRequests.
	MaxRequests int
	// IdleTTL: a host's state (limiter, crawl delay) is dropped once it has
	// had no request for this long and its token bucket has refilled, so
	// memory stays bounded with millions of hosts. 0 means DefaultIdleTTL.
	IdleTTL time.Duration
	// Logger for debug lines. Default slog.Default().
	Logger *slog.Logger
}

// Politeness enforces per-host politeness: a token-bucket rate limit
// (golang.org/x/time/rate) per host, a robots.txt Crawl-delay that can only
// make that rate stricter, and a cap on concurrent requests per host. A host
// is named by the caller's host key, an opaque non-empty string: zkcrawl
// passes the crawl's politeness key of the URL (frontier.Layout.Key: the
// host, or its registrable domain; docs/design.md, "Politeness keys"), the
// same key its claim slots, quotas and shard groups use.
//
// The limits are per process. zkcrawl makes them cluster-wide by shard
// ownership: all URLs of a host fall in one shard and each shard is claimed
// by exactly one worker (rendezvous hashing over live workers, see
// docs/design.md), so each host is fetched from one Politeness only.
//
// Safe for concurrent use. Create with NewPoliteness.
type Politeness struct {
	logger  *slog.Logger
	idleTTL time.Duration

	mu          sync.Mutex
	rate        float64
	burst       int
	maxInFlight int
	hosts       map[string]*hostState
	lastSweep   time.Time
	// The request budget (MaxRequests): requests admitted and not yet
	// released, across hosts, and the channel closed when one is released
	// or the budget changes.
	maxRequests  int
	requests     int
	requestFreed chan struct{}
	// Adaptive delay (SetDelayFactor): 0 factor = off.
	delayFactor float64
	maxDelay    time.Duration
	// maxHold caps a Retry-After and the 429/503 backoff (SetMaxHold,
	// Answered); 0 = both off.
	maxHold time.Duration
}

// hostState is one host's politeness state; every field is guarded by
// Politeness.mu (the limiter has its own lock as well).
type hostState struct {
	lim        *rate.Limiter
	crawlDelay time.Duration // the largest of delays
	// delays holds the Crawl-delay each robots.txt source (origin) gave
	// for this key, at most maxDelaySources of them (SetCrawlDelay).
	delays   map[string]time.Duration
	inFlight int // requests holding a slot
	refs     int // Acquire calls waiting or holding a slot
	lastUsed time.Time
	// lastEnd and lastDur are the end and duration (Acquire to release) of
	// the host's last request, for the adaptive delay.
	lastEnd time.Time
	lastDur time.Duration
	// reached is when the request in flight reached the server (Reached),
	// zero if not recorded; used and cleared at its release.
	reached time.Time
	// Retry-After and 429/503 backoff (Answered): no request starts before
	// heldUntil, nor, while backoff > 0, less than backoff after the start
	// of the last one (lastStart).
	heldUntil time.Time
	backoff   time.Duration
	lastStart time.Time
	capNoted  bool // a Retry-After over the cap was reported (Answered)
	// slotFreed is closed (and replaced) when a slot frees or the in-flight
	// cap changes; limitsChanged when the rate, burst or crawl delay change.
	slotFreed     chan struct{}
	limitsChanged chan struct{}
}

// NewPoliteness returns a Politeness with opts. It fails if a limit is
// negative or not a number.
func NewPoliteness(opts PolitenessOptions) (*Politeness, error) {
	if err := checkLimits(opts.RatePerSec, opts.Burst, opts.MaxInFlight); err != nil {
		return nil, err
	}
	if opts.MaxRequests < 0 {
		return nil, fmt.Errorf("politeness: max requests %d: %w (want >= 0, 0 = unlimited)", opts.MaxRequests, ErrInvalidLimit)
	}
	if opts.IdleTTL < 0 {
		return nil, fmt.Errorf("politeness: IdleTTL %v: must not be negative", opts.IdleTTL)
	}
	if opts.IdleTTL == 0 {
		opts.IdleTTL = DefaultIdleTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Politeness{
		logger:       opts.Logger,
		idleTTL:      opts.IdleTTL,
		rate:         opts.RatePerSec,
		burst:        opts.Burst,
		maxInFlight:  opts.MaxInFlight,
		hosts:        make(map[string]*hostState),
		lastSweep:    time.Now(),
		maxRequests:  opts.MaxRequests,
		requestFreed: make(chan struct{}),
	}, nil
}

// ErrInvalidLimit is wrapped by errors for a negative or NaN politeness
// limit.
var ErrInvalidLimit = errors.New("invalid politeness limit")

// checkLimits validates the three live limits.
func checkLimits(ratePerSec float64, burst, maxInFlight int) error {
	switch {
	case math.IsNaN(ratePerSec) || ratePerSec < 0 || math.IsInf(ratePerSec, 0):
		return fmt.Errorf("politeness: rate %v requests/s: %w (want a finite number >= 0, 0 = unlimited)", ratePerSec, ErrInvalidLimit)
	case burst < 0:
		return fmt.Errorf("politeness: burst %d: %w (want >= 0)", burst, ErrInvalidLimit)
	case maxInFlight < 0:
		return fmt.Errorf("politeness: max in-flight %d: %w (want >= 0, 0 = unlimited)", maxInFlight, ErrInvalidLimit)
	}
	return nil
}

// effectiveLimit returns the limiter settings for a host: the configured
// rate and burst, unless the crawl delay is stricter, in which case one
// request per crawl delay with a burst of 1 (a Crawl-delay means "wait this
// long between requests"). Called with p.mu held.
func (p *Politeness) effectiveLimit(crawlDelay time.Duration) (rate.Limit, int) {
	lim, burst := rate.Inf, p.burst
	if p.rate > 0 {
		lim = rate.Limit(p.rate)
	}
	if crawlDelay > 0 {
		if cd := rate.Every(crawlDelay); cd < lim {
			lim, burst = cd, 1
		}
	}
	if burst < 1 {
		burst = 1
	}
	return lim, burst
}

// hostLocked returns host's state, creating it; it also evicts idle hosts
// now and then. Called with p.mu held.
func (p *Politeness) hostLocked(host string, now time.Time) *hostState {
	if now.Sub(p.lastSweep) >= p.idleTTL/2 {
		p.sweepLocked(now)
	}
	hs := p.hosts[host]
	if hs == nil {
		lim, burst := p.effectiveLimit(0)
		hs = &hostState{
			lim:           rate.NewLimiter(lim, burst),
			lastUsed:      now,
			slotFreed:     make(chan struct{}),
			limitsChanged: make(chan struct{}),
		}
		p.hosts[host] = hs
	}
	return hs
}

// sweepLocked drops hosts with no request waiting or running for idleTTL
// whose token bucket is full again, so a fresh limiter (full bucket) for a
// returning host allows exactly what the old one would have. A host held
// by a Retry-After or backoff (Answered) is kept until the hold has passed
// and it has been idle for its backoff as well. Called with p.mu held.
func (p *Politeness) sweepLocked(now time.Time) {
	p.lastSweep = now
	before := len(p.hosts)
	for host, hs := range p.hosts {
		if hs.refs == 0 && now.Sub(hs.lastUsed) >= max(p.idleTTL, hs.backoff) && !heldLocked(hs).After(now) &&
			(hs.lim.Limit() == rate.Inf || hs.lim.TokensAt(now) >= float64(hs.lim.Burst())) {
			delete(p.hosts, host)
		}
	}
	if evicted := before - len(p.hosts); evicted > 0 {
		p.logger.Debug("politeness: evicted idle hosts", "evicted", evicted, "hosts", len(p.hosts))
	}
}

// Acquire blocks until a request to host (the caller's host key) may start:
// first a free in-flight slot of host (MaxInFlight), then the adaptive delay
// (SetDelayFactor), then the host's hold (a Retry-After or 429/503 backoff,
// Answered), then a token of the host's rate limiter (rate, burst, crawl
// delay), and last a slot of the request budget shared by all hosts
// (MaxRequests). The token is only waited for, not taken, until the
// budget slot is held: then the token and the hold are checked and the
// token taken at once (admit), at the moment the request starts. So a
// request that waits for its host's rate holds no budget slot (the budget
// counts requests on the wire, not requests waiting), and one that waited
// for the budget after its token came starts as soon as it has a slot,
// with the interval counted from that start: never a shorter spacing, and
// no interval lost. A hold or a token taken meanwhile (another request of
// the host, a limit change) sends it back to wait, holding no budget slot.
// It returns release, which the caller must call exactly once when the
// request is done (extra calls are no-ops). Limit changes made while it
// waits (SetLimits, SetCrawlDelay, SetDelayFactor, SetMaxRequests) apply
// to it. It fails for an empty host, or when ctx ends, with an error
// naming the host and the phase and wrapping ctx.Err(); nothing is held
// then.
func (p *Politeness) Acquire(ctx context.Context, host string) (release func(), err error) {
	if host == "" {
		return nil, errors.New("politeness: empty host key")
	}
	p.mu.Lock()
	hs := p.hostLocked(host, time.Now())
	hs.refs++
	p.mu.Unlock()

	// The slot comes before the rate token, so tokens are only spent by
	// requests that start right away: the spacing between request starts
	// is the limiter's.
	if err := p.waitSlot(ctx, hs); err != nil {
		p.finish(hs, false)
		return nil, fmt.Errorf("politeness: waiting for an in-flight slot on %s: %w", host, err)
	}
	if err := p.waitAdaptive(ctx, hs); err != nil {
		p.finish(hs, true)
		return nil, fmt.Errorf("politeness: waiting for the adaptive delay of %s: %w", host, err)
	}
	for {
		if err := p.waitHold(ctx, hs); err != nil {
			p.finish(hs, true)
			return nil, fmt.Errorf("politeness: waiting for the Retry-After or backoff of %s: %w", host, err)
		}
		if err := p.waitToken(ctx, hs); err != nil {
			p.finish(hs, true)
			return nil, fmt.Errorf("politeness: waiting for the rate limit of %s: %w", host, err)
		}
		if !p.tryRequest() {
			if err := p.waitRequest(ctx); err != nil {
				p.finish(hs, true)
				return nil, fmt.Errorf("politeness: waiting for the request budget (%s admitted): %w", host, err)
			}
		}
		if p.admit(hs) {
			break
		}
		p.releaseRequest() // held or token gone meanwhile: wait again holding no budget slot
	}

	var once sync.Once
	started := time.Now()
	return func() {
		once.Do(func() {
			p.mu.Lock()
			hs.lastEnd = time.Now()
			hs.lastDur = hs.lastEnd.Sub(started)
			p.mu.Unlock()
			p.releaseRequest()
			p.finish(hs, true)
		})
	}, nil
}

// tryRequest takes a slot of the request budget if one is free and
// reports whether it did.
func (p *Politeness) tryRequest() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maxRequests > 0 && p.requests >= p.maxRequests {
		return false
	}
	p.requests++
	return true
}

// waitRequest takes a slot of the request budget, waiting for one to
// free. Errors: ctx's, with no slot taken.
func (p *Politeness) waitRequest(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.maxRequests <= 0 || p.requests < p.maxRequests {
			p.requests++
			p.mu.Unlock()
			return nil
		}
		wake := p.requestFreed
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// releaseRequest gives a slot of the request budget back and wakes its
// waiters.
func (p *Politeness) releaseRequest() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests--
	close(p.requestFreed)
	p.requestFreed = make(chan struct{})
}

// admit starts a request to hs if its hold has passed and its rate
// limiter has a token now, taking the token and noting the start for the
// backoff spacing, and reports whether it did; neither is changed when it
// does not (no waiting).
func (p *Politeness) admit(hs *hostState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if heldLocked(hs).After(now) {
		return false
	}
	if hs.lim.Limit() != rate.Inf && !hs.lim.AllowN(now, 1) {
		return false
	}
	hs.lastStart = now
	return true
}

// SetMaxRequests changes the request budget (MaxRequests: concurrent
// requests across all hosts, 0 = unlimited), live: waiters in Acquire see
// the new budget at once; requests already admitted keep their slots, so
// after a decrease the count falls to the new budget as they end. It fails,
// changing nothing, for a negative n.
func (p *Politeness) SetMaxRequests(n int) error {
	if n < 0 {
		return fmt.Errorf("politeness: max requests %d: %w (want >= 0, 0 = unlimited)", n, ErrInvalidLimit)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maxRequests == n {
		return nil
	}
	p.maxRequests = n
	close(p.requestFreed)
	p.requestFreed = make(chan struct{})
	return nil
}

// Requests returns how many requests hold a slot of the request budget
// now, and the budget (0 = unlimited), for metrics and tests.
func (p *Politeness) Requests() (inFlight, budget int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests, p.maxRequests
}

// waitSlot takes one of hs's in-flight slots (MaxInFlight), waiting for
// one to free. Errors: ctx's, with no slot taken.
func (p *Politeness) waitSlot(ctx context.Context, hs *hostState) error {
	for {
		p.mu.Lock()
		if p.maxInFlight <= 0 || hs.inFlight < p.maxInFlight {
			hs.inFlight++
			p.mu.Unlock()
			return nil
		}
		wake := hs.slotFreed
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitAdaptive waits until factor x the duration of hs's last request has
// passed since it ended (SetDelayFactor). A change of the factor wakes the
// waiter, which recomputes. Errors: ctx's.
func (p *Politeness) waitAdaptive(ctx context.Context, hs *hostState) error {
	return p.waitLeft(ctx, hs, func() time.Duration { return p.adaptiveWaitLocked(hs, time.Now()) })
}

// waitLeft waits until left, called with p.mu held, is no longer
// positive; a change of the key's limits (limitsChanged) wakes it to call
// left again. Errors: ctx's.
func (p *Politeness) waitLeft(ctx context.Context, hs *hostState, left func() time.Duration) error {
	for {
		p.mu.Lock()
		d := left()
		changed := hs.limitsChanged
		p.mu.Unlock()
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// waitToken waits until hs's rate limiter holds a token, without taking
// it (admit takes it once the request also has its budget slot). A limit
// change (limitsChanged) wakes it to compute again. Errors: ctx's.
func (p *Politeness) waitToken(ctx context.Context, hs *hostState) error {
	return p.waitLeft(ctx, hs, func() time.Duration { return tokenWaitLocked(hs.lim, time.Now()) })
}

// tokenWaitLocked returns how long until lim holds a whole token at now,
// 0 if it does (or has no limit). Called with p.mu held.
func tokenWaitLocked(lim *rate.Limiter, now time.Time) time.Duration {
	if lim.Limit() == rate.Inf {
		return 0
	}
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	// Rounded up to the microsecond, so the wake finds the token there.
	return time.Duration(math.Ceil(missing/float64(lim.Limit())*1e6)) * time.Microsecond
}

// adaptiveWaitLocked returns how long a request to hs must still wait for
// the adaptive delay at now: delayFactor x the last request's duration,
// capped at maxDelay, counted from the end of that request; 0 when off or
// passed. Called with p.mu held.
func (p *Politeness) adaptiveWaitLocked(hs *hostState, now time.Time) time.Duration {
	if p.delayFactor <= 0 || hs.lastEnd.IsZero() {
		return 0
	}
	wait := time.Duration(p.delayFactor * float64(hs.lastDur))
	if wait > p.maxDelay {
		wait = p.maxDelay
	}
	return hs.lastEnd.Add(wait).Sub(now)
}

// SetDelayFactor sets the adaptive delay, live: before a host's next
// request, wait at least factor x the duration of its last request (from
// Acquire to release: the fetch), counted from that request's end, but never
// more than max. This is Heritrix's delayFactor/maxDelayMs
// (DispositionProcessor): a server that answers slowly is asked less often.
// It adds to the rate limit and Crawl-delay (the longer wait wins). factor 0
// turns it off; max 0 with a positive factor waits nothing. Waiters in
// Acquire recompute at once. It fails, changing nothing, for a negative or
// non-finite factor or a negative max.
func (p *Politeness) SetDelayFactor(factor float64, max time.Duration) error {
	if math.IsNaN(factor) || math.IsInf(factor, 0) || factor < 0 {
		return fmt.Errorf("politeness: delay factor %v: %w (want a finite number >= 0, 0 = off)", factor, ErrInvalidLimit)
	}
	if max < 0 {
		return fmt.Errorf("politeness: max delay %v: %w (want >= 0)", max, ErrInvalidLimit)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.delayFactor == factor && p.maxDelay == max {
		return nil
	}
	p.delayFactor, p.maxDelay = factor, max
	for _, hs := range p.hosts {
		close(hs.limitsChanged)
		hs.limitsChanged = make(chan struct{})
	}
	return nil
}

// finish ends one Acquire: frees its slot if it held one and wakes slot
// waiters.
func (p *Politeness) finish(hs *hostState, heldSlot bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs.refs--
	hs.lastUsed = time.Now()
	if heldSlot {
		p.restartIntervalLocked(hs)
		hs.inFlight--
		if hs.refs > hs.inFlight { // someone waits for a slot
			close(hs.slotFreed)
			hs.slotFreed = make(chan struct{})
		}
	}
}

// SetLimits changes the per-host rate (requests/s, 0 = unlimited), burst
// (0 = 1) and in-flight cap (0 = unlimited) of every host, live: hosts
// already known, including callers blocked in Acquire, switch at once; a
// host's crawl delay still applies when it is stricter. It fails, changing
// nothing, if a value is negative or not finite.
func (p *Politeness) SetLimits(ratePerSec float64, burst int, maxInFlight int) error {
	if err := checkLimits(ratePerSec, burst, maxInFlight); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.burst, p.maxInFlight = ratePerSec, burst, maxInFlight
	for _, hs := range p.hosts {
		p.applyLocked(hs)
		close(hs.slotFreed)
		hs.slotFreed = make(chan struct{})
	}
	return nil
}

// maxDelaySources caps the robots.txt sources remembered per host key: a
// key shared by many hosts (politeness key domain or ip, wildcard
// subdomains) keeps the largest delays, never more entries.
const maxDelaySources = 64

// SetCrawlDelay records the robots.txt Crawl-delay d (0 or negative: none)
// that source, the origin whose robots.txt gave it (e.g.
// "https://a.example.com:443"), states for the host key host. A key can
// cover several origins (http and https of one host; every host of a
// registrable domain or an address under the domain and ip politeness
// keys): its Crawl-delay is the largest of its origins', so the strictest
// robots.txt holds for all of them (RFC 9309 leaves Crawl-delay
// unspecified; this is the conservative reading). At most maxDelaySources
// origins are remembered per key, the smallest delay forgotten first, so
// the largest is never lost. The delay only ever makes the key stricter:
// the interval between requests becomes max(1/rate, delay). It is
// forgotten when the key's state is evicted after IdleTTL, so callers set
// it before each Acquire (Robots caches it, so that is cheap).
func (p *Politeness) SetCrawlDelay(host, source string, d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.hostLocked(host, time.Now())
	if old, ok := hs.delays[source]; ok && old == d {
		return
	}
	if hs.delays == nil {
		hs.delays = map[string]time.Duration{}
	}
	hs.delays[source] = d
	if len(hs.delays) > maxDelaySources {
		smallest := ""
		for src, v := range hs.delays {
			if smallest == "" || v < hs.delays[smallest] {
				smallest = src
			}
		}
		delete(hs.delays, smallest)
	}
	var largest time.Duration
	for _, v := range hs.delays {
		largest = max(largest, v)
	}
	if hs.crawlDelay == largest {
		return
	}
	hs.crawlDelay = largest
	p.applyLocked(hs)
}

// applyLocked pushes the effective limit into hs's limiter and wakes its
// token waiters. Called with p.mu held.
func (p *Politeness) applyLocked(hs *hostState) {
	lim, burst := p.effectiveLimit(hs.crawlDelay)
	old := hs.lim.Limit()
	if old == lim && hs.lim.Burst() == burst {
		return
	}
	if old == rate.Inf || lim == rate.Inf {
		// x/time/rate's token arithmetic with an infinite limit can yield
		// NaN tokens (Inf * 0 s); start afresh instead. A full bucket is
		// the right state after an unlimited period.
		hs.lim = rate.NewLimiter(lim, burst)
	} else {
		now := time.Now()
		hs.lim.SetLimitAt(now, lim)
		hs.lim.SetBurstAt(now, burst)
	}
	close(hs.limitsChanged)
	hs.limitsChanged = make(chan struct{})
}

// Spend empties host's token bucket as of at, so that its next request
// waits one full interval from at: the effective one, max(1/rate, the
// Crawl-delay set so far), with a Crawl-delay set later applying from then
// on. For a request made elsewhere, e.g. by a worker that owned the host
// before (shard handoff): a fresh limiter would allow an immediate burst.
// It only ever makes the host stricter: no effect without a rate limit or
// Crawl-delay, while a request to host is in flight here, or when the
// host's bucket already holds no more tokens than a spent one would.
func (p *Politeness) Spend(host string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	hs := p.hostLocked(host, now)
	lim, burst := p.effectiveLimit(hs.crawlDelay)
	if lim == rate.Inf || hs.inFlight > 0 {
		return
	}
	fresh := rate.NewLimiter(lim, burst)
	fresh.AllowN(at, burst)
	if hs.lim.Limit() != rate.Inf && hs.lim.TokensAt(now) <= fresh.TokensAt(now) {
		return
	}
	hs.lim = fresh
	close(hs.limitsChanged)
	hs.limitsChanged = make(chan struct{})
}

// Hosts returns how many hosts currently have politeness state (for metrics
// and tests).
func (p *Politeness) Hosts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.hosts)
}

// Limits returns the current per-host rate (requests/s), burst and
// in-flight cap, as last set.
func (p *Politeness) Limits() (ratePerSec float64, burst int, maxInFlight int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate, p.burst, p.maxInFlight
}

// restartIntervalLocked makes the next request to a strictly polite host
// (burst 1, one request in flight) wait a full interval from the moment the
// request just finished REACHED the server (as Reached recorded it:
// fetch.Result.Reached), not from the moment its token was taken: the token
// bucket alone spaces request starts as the client makes them, so a request
// whose dial or accept was slow (a new connection, a busy server) could
// reach the server less than an interval before the next one, sent at once
// on the kept-alive connection. From the arrival, the server sees starts an
// interval apart (give or take its own scheduling of the two requests), and
// the interval does not grow by the response's latency, which Heritrix's
// end-to-start delay adds (the adaptive delay of SetDelayFactor does that
// where wanted). When no arrival was recorded (a failed connect, a request
// cut off) it counts from now, the request's end: never shorter. It never
// makes the next request earlier than the bucket allows. With a larger
// burst or several requests in flight the bucket alone rules.
func (p *Politeness) restartIntervalLocked(hs *hostState) {
	reached := hs.reached
	hs.reached = time.Time{}
	lim := hs.lim.Limit()
	if lim == rate.Inf || hs.lim.Burst() != 1 || p.maxInFlight != 1 {
		return
	}
	now := time.Now()
	from := now
	if !reached.IsZero() && reached.Before(now) {
		from = reached
	}
	fresh := rate.NewLimiter(lim, 1)
	fresh.AllowN(from, 1) // the token of the request just finished, spent at its arrival
	if hs.lim.TokensAt(now) <= fresh.TokensAt(now) {
		return // the bucket is already as strict (a later Spend, a slow token)
	}
	hs.lim = fresh
}

// Reached records that the request to host admitted by Acquire (not yet
// released) reached the server at at (fetch.Result.Reached). Under strict
// politeness (burst 1, one request in flight per host) the host's next
// request then waits one interval from at rather than from the request's
// end (see restartIntervalLocked); otherwise it has no effect. Call it
// before the request's release; a zero at, or a host with no request in
// flight here, is ignored.
func (p *Politeness) Reached(host string, at time.Time) {
	if at.IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if hs := p.hosts[host]; hs != nil && hs.inFlight > 0 {
		hs.reached = at
	}
}
