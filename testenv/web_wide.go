package testenv

// The wide web: thousands of hosts, each with its own page count, answers
// delayed by a lognormal latency, a few slow, dead, resetting and timing-out
// hosts, and a Crawl-delay on some robots.txt files; and the politeness
// bound, the shortest time any polite crawl of it can take.

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// WebFault is how a host of the synthetic web fails at the connection.
type WebFault int

const (
	// WebFaultNone serves normally.
	WebFaultNone WebFault = iota
	// WebFaultDead refuses connections: the host's port is reserved and
	// closed before the web serves, so a connect gets ECONNREFUSED.
	WebFaultDead
	// WebFaultReset reads each request and closes the connection with a
	// TCP RST (SO_LINGER 0), sending nothing.
	WebFaultReset
	// WebFaultTimeout reads each request and never answers; the handler
	// returns when the client goes away or the web closes.
	WebFaultTimeout
)

// String names the fault: "none", "dead", "reset" or "timeout".
func (f WebFault) String() string {
	switch f {
	case WebFaultNone:
		return "none"
	case WebFaultDead:
		return "dead"
	case WebFaultReset:
		return "reset"
	case WebFaultTimeout:
		return "timeout"
	}
	return fmt.Sprintf("WebFault(%d)", int(f))
}

// webZ99 is the 0.99 quantile of the standard normal distribution.
const webZ99 = 2.3263478740408408

// WebLatency is a lognormal response-time distribution: ln(latency) is
// normal with mean ln(Median) and standard deviation ln(P99/Median)/z(0.99),
// so half the answers take less than Median and 1% more than P99. A zero
// Median means no added latency.
type WebLatency struct {
	// Median is the 0.5 quantile, > 0 to turn latency on.
	Median time.Duration
	// P99 is the 0.99 quantile, at least Median; 0 means Median (no spread).
	P99 time.Duration
	// Max caps every draw (0: 10 x P99), so a test's worst case is bounded.
	Max time.Duration
}

// Quantile returns the latency at quantile q in (0,1) (uncapped).
func (l WebLatency) Quantile(q float64) time.Duration {
	if l.Median <= 0 {
		return 0
	}
	return time.Duration(float64(l.Median) * math.Exp(l.sigma()*webNormQuantile(q)))
}

func (l WebLatency) sigma() float64 {
	if l.P99 <= l.Median {
		return 0
	}
	return math.Log(float64(l.P99)/float64(l.Median)) / webZ99
}

func (l WebLatency) maxOrDefault() time.Duration {
	if l.Max > 0 {
		return l.Max
	}
	return 10 * max(l.P99, l.Median)
}

// webNormQuantile is the standard normal quantile function (math.Erfinv).
func webNormQuantile(q float64) float64 { return math.Sqrt2 * math.Erfinv(2*q-1) }

// latencyOf returns the added latency of host h's answer to target: a
// lognormal draw from a PRNG seeded by (Seed, h, target), so the same
// request always waits the same time and the ground truth knows it.
func (w *Web) latencyOf(h int, target string) time.Duration {
	l := w.cfg.Latency
	if l.Median <= 0 {
		return 0
	}
	f := fnv.New64a()
	fmt.Fprintf(f, "%d|%s", h, target)
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed)^0x1a7e_9c11, f.Sum64()))
	d := time.Duration(float64(l.Median) * math.Exp(l.sigma()*rng.NormFloat64()))
	return min(d, l.maxOrDefault())
}

// Latency returns how long host index h waits before answering target (a
// path plus "?query"): HostDelay plus the Latency draw; 0 for a faulty host.
func (w *Web) Latency(h int, target string) time.Duration {
	if w.cfg.HostFault[h] != WebFaultNone {
		return 0
	}
	return w.cfg.HostDelay[h] + w.latencyOf(h, target)
}

// crawlDelayOf returns the Crawl-delay of host h's robots.txt (0: none).
func (w *Web) crawlDelayOf(h int) time.Duration {
	if d, ok := w.cfg.HostCrawlDelay[h]; ok {
		return d
	}
	return w.cfg.CrawlDelay
}

// validateWide checks the wide-web fields of cfg (defaults already set).
func (cfg WebConfig) validateWide() error {
	if cfg.HostPages != nil {
		if len(cfg.HostPages) != cfg.Hosts {
			return fmt.Errorf("%w: HostPages has %d entries: want Hosts = %d", ErrWebConfig, len(cfg.HostPages), cfg.Hosts)
		}
		for h, n := range cfg.HostPages {
			if n < 1 || n > webMaxPagesPerHost {
				return fmt.Errorf("%w: HostPages[%d] = %d: want 1..%d", ErrWebConfig, h, n, webMaxPagesPerHost)
			}
		}
	}
	for h, d := range cfg.HostCrawlDelay {
		if h < 0 || h >= cfg.Hosts {
			return fmt.Errorf("%w: HostCrawlDelay host index %d: want 0..%d", ErrWebConfig, h, cfg.Hosts-1)
		}
		if d < 0 {
			return fmt.Errorf("%w: HostCrawlDelay[%d] = %v: must not be negative", ErrWebConfig, h, d)
		}
	}
	l := cfg.Latency
	if l.Median < 0 || l.P99 < 0 || l.Max < 0 || (l.P99 > 0 && l.P99 < l.Median) {
		return fmt.Errorf("%w: Latency median %v, p99 %v, max %v: want 0 <= median <= p99, max >= 0", ErrWebConfig, l.Median, l.P99, l.Max)
	}
	faulty := 0
	for h, f := range cfg.HostFault {
		if h < 0 || h >= cfg.Hosts {
			return fmt.Errorf("%w: HostFault host index %d: want 0..%d", ErrWebConfig, h, cfg.Hosts-1)
		}
		if f < WebFaultNone || f > WebFaultTimeout {
			return fmt.Errorf("%w: HostFault[%d] = %v: unknown fault", ErrWebConfig, h, f)
		}
		if f != WebFaultNone {
			faulty++
		}
	}
	if faulty == cfg.Hosts {
		return fmt.Errorf("%w: HostFault: all %d hosts are faulty; want one serving host at least", ErrWebConfig, faulty)
	}
	return nil
}

// WebWide describes a wide web by counts; Config turns it into a WebConfig.
// Which hosts are slow, faulty or carry a Crawl-delay is drawn from Seed.
type WebWide struct {
	// Seed fixes the page counts, the choice of special hosts and every
	// latency draw.
	Seed int64
	// Hosts is the number of hosts, 1..20,000.
	Hosts int
	// Pages is the mean number of /p/<n> pages per host, >= 1.
	Pages int
	// PagesSpread in [0,1) draws each host's page count uniformly from
	// Pages x (1 ± PagesSpread), at least 1; 0 gives every host Pages.
	PagesSpread float64
	// Latency is every answer's latency (lognormal).
	Latency WebLatency
	// SlowHosts answer SlowDelay later than Latency says.
	SlowHosts int
	// SlowDelay is the extra delay of a slow host.
	SlowDelay time.Duration
	// DeadHosts, ResetHosts and TimeoutHosts fail as WebFault says.
	DeadHosts, ResetHosts, TimeoutHosts int
	// CrawlDelayHosts have "Crawl-delay: CrawlDelay" in their robots.txt.
	CrawlDelayHosts int
	// CrawlDelay is the Crawl-delay of those hosts.
	CrawlDelay time.Duration
}

// DefaultWebWide returns the wide web of the politeness measurements: hosts
// x pages, latency median 150 ms and p99 1 s (capped at 3 s), no special
// hosts.
func DefaultWebWide(hosts, pages int, seed int64) WebWide {
	return WebWide{Seed: seed, Hosts: hosts, Pages: pages,
		Latency: WebLatency{Median: 150 * time.Millisecond, P99: time.Second, Max: 3 * time.Second}}
}

// Config returns the WebConfig of the wide web: HostPages from Pages and
// PagesSpread, HomeLinksAll, no random links, and disjoint sets of slow,
// faulty and Crawl-delay hosts picked by a seeded permutation. Errors wrap
// ErrWebConfig, naming the field: counts out of range or more special hosts
// than Hosts.
func (ww WebWide) Config() (WebConfig, error) {
	special := ww.SlowHosts + ww.DeadHosts + ww.ResetHosts + ww.TimeoutHosts + ww.CrawlDelayHosts
	switch {
	case ww.Hosts < 1 || ww.Hosts > webMaxHosts:
		return WebConfig{}, fmt.Errorf("%w: wide web Hosts %d: want 1..%d", ErrWebConfig, ww.Hosts, webMaxHosts)
	case ww.Pages < 1 || ww.Pages > webMaxPagesPerHost:
		return WebConfig{}, fmt.Errorf("%w: wide web Pages %d: want 1..%d", ErrWebConfig, ww.Pages, webMaxPagesPerHost)
	case !(ww.PagesSpread >= 0 && ww.PagesSpread < 1):
		return WebConfig{}, fmt.Errorf("%w: wide web PagesSpread %v: want [0,1)", ErrWebConfig, ww.PagesSpread)
	case ww.SlowHosts < 0 || ww.DeadHosts < 0 || ww.ResetHosts < 0 || ww.TimeoutHosts < 0 || ww.CrawlDelayHosts < 0:
		return WebConfig{}, fmt.Errorf("%w: wide web: special host counts must not be negative", ErrWebConfig)
	case special > ww.Hosts:
		return WebConfig{}, fmt.Errorf("%w: wide web: %d slow, faulty and Crawl-delay hosts but only %d hosts", ErrWebConfig, special, ww.Hosts)
	case ww.SlowDelay < 0 || ww.CrawlDelay < 0:
		return WebConfig{}, fmt.Errorf("%w: wide web: SlowDelay %v and CrawlDelay %v must not be negative", ErrWebConfig, ww.SlowDelay, ww.CrawlDelay)
	}
	rng := rand.New(rand.NewPCG(uint64(ww.Seed), 0x01de_3eb))
	cfg := WebConfig{Seed: ww.Seed, Hosts: ww.Hosts, PagesPerHost: ww.Pages, HomeLinksAll: true,
		Latency: ww.Latency, HostPages: make([]int, ww.Hosts)}
	lo, hi := ww.Pages, ww.Pages
	if ww.PagesSpread > 0 {
		lo = max(1, int(math.Round(float64(ww.Pages)*(1-ww.PagesSpread))))
		hi = max(lo, int(math.Round(float64(ww.Pages)*(1+ww.PagesSpread))))
	}
	for h := range cfg.HostPages {
		cfg.HostPages[h] = lo + rng.IntN(hi-lo+1)
	}
	perm := rng.Perm(ww.Hosts)
	take := func(n int) []int {
		out := perm[:n]
		perm = perm[n:]
		return out
	}
	if ww.SlowHosts > 0 {
		cfg.HostDelay = map[int]time.Duration{}
		for _, h := range take(ww.SlowHosts) {
			cfg.HostDelay[h] = ww.SlowDelay
		}
	}
	for _, f := range []struct {
		n     int
		fault WebFault
	}{{ww.DeadHosts, WebFaultDead}, {ww.ResetHosts, WebFaultReset}, {ww.TimeoutHosts, WebFaultTimeout}} {
		for _, h := range take(f.n) {
			if cfg.HostFault == nil {
				cfg.HostFault = map[int]WebFault{}
			}
			cfg.HostFault[h] = f.fault
		}
	}
	if ww.CrawlDelayHosts > 0 {
		cfg.HostCrawlDelay = map[int]time.Duration{}
		for _, h := range take(ww.CrawlDelayHosts) {
			cfg.HostCrawlDelay[h] = ww.CrawlDelay
		}
	}
	return cfg, nil
}

// WebBound is the politeness bound of a crawl of the synthetic web: no
// crawl that keeps every host's rate can fetch the ground truth faster.
type WebBound struct {
	// Bound is the largest HostBound: the shortest possible crawl, from
	// the first request to the last answer.
	Bound time.Duration
	// Host is the index of the host that sets Bound.
	Host int
	// HostBound is each host's shortest possible crawl, by index (0 for a
	// faulty host, whose crawl time is set by retries, not politeness).
	HostBound []time.Duration
	// Requests is the number of requests the bound counts: per serving
	// host, robots.txt plus every ground-truth URL with Status != 0.
	Requests int
}

// PolitenessBound returns the politeness bound of crawling truth (from
// GroundTruth) at ratePerS requests per second per host (the crawl's
// per_host_rate_per_s; 0 means unlimited) and maxInFlight concurrent
// requests per host (per_host_max_in_flight).
//
// For a serving host h, its n requests (robots.txt and its URLs of truth
// with Status != 0) each take latency L_k (Web.Latency), and consecutive
// starts are at least I_h = max(1/ratePerS, Crawl-delay of h) apart (the
// stricter wins, as the crawler applies them). With maxInFlight 1 a request
// also starts only after the previous one answered, so the host needs at
// least sum_k max(I_h, L_k) - max(I_h, L_min) + L_min (the fastest request
// last). With more in flight, starts are only spaced, so it needs at least
// max_k(k x I_h + L'_k), with L' the latencies sorted longest first. The
// bound ignores discovery (robots.txt before the seed, the seed before its
// links: about two latencies more on a HomeLinksAll web) and faulty hosts.
// Errors: a negative rate, maxInFlight < 1, or a truth URL not of this web.
func (w *Web) PolitenessBound(truth map[string]WebExpect, ratePerS float64, maxInFlight int) (WebBound, error) {
	if !(ratePerS >= 0) || math.IsInf(ratePerS, 0) {
		return WebBound{}, fmt.Errorf("testenv: politeness bound: rate %v requests/s: want a finite number >= 0", ratePerS)
	}
	if maxInFlight < 1 {
		return WebBound{}, fmt.Errorf("testenv: politeness bound: max in flight %d: want >= 1", maxInFlight)
	}
	lat := make([][]time.Duration, len(w.hosts))
	for h := range lat {
		if w.cfg.HostFault[h] == WebFaultNone {
			lat[h] = []time.Duration{w.Latency(h, "/robots.txt")}
		}
	}
	for u, e := range truth {
		t, err := w.lookup(u)
		if err != nil {
			return WebBound{}, fmt.Errorf("testenv: politeness bound: truth URL %q: %w", u, err)
		}
		if e.Status != 0 && lat[t.host] != nil {
			lat[t.host] = append(lat[t.host], w.Latency(t.host, t.path))
		}
	}
	var b WebBound
	b.HostBound = make([]time.Duration, len(w.hosts))
	for h, ls := range lat {
		if ls == nil {
			continue
		}
		var iv time.Duration
		if ratePerS > 0 {
			iv = time.Duration(float64(time.Second) / ratePerS)
		}
		iv = max(iv, w.crawlDelayOf(h))
		b.HostBound[h] = webHostBound(ls, iv, maxInFlight)
		b.Requests += len(ls)
		if b.HostBound[h] > b.Bound {
			b.Bound, b.Host = b.HostBound[h], h
		}
	}
	return b, nil
}

// webHostBound is one host's shortest crawl of requests with latencies ls
// (reordered), starts at least iv apart, at most maxInFlight at once (1, or
// more read as unlimited).
func webHostBound(ls []time.Duration, iv time.Duration, maxInFlight int) time.Duration {
	if maxInFlight == 1 {
		var sum time.Duration
		fastest := ls[0]
		for _, l := range ls {
			sum += max(iv, l)
			fastest = min(fastest, l)
		}
		return sum - max(iv, fastest) + fastest
	}
	slices.SortFunc(ls, func(a, b time.Duration) int { return int(b - a) })
	var end time.Duration
	for k, l := range ls {
		end = max(end, time.Duration(k)*iv+l)
	}
	return end
}
