package fetch

// The fetcher's name resolution: a caching stub resolver. Go's net.Resolver
// does not expose the TTLs of the records it reads, and no well-kept Go
// library caches by TTL with a negative cache and a size bound
// (rs/dnscache keeps answers for a fixed refresh period, ncruces/go-dns
// caches raw messages with random eviction and no counts), so the cache,
// singleflight and semaphore are written here, around github.com/miekg/dns
// (the DNS library under CoreDNS), which builds and parses the messages and
// reads /etc/resolv.conf. Go's own resolver (net.Resolver, which reads
// /etc/hosts and applies resolv.conf's search list) answers what a plain
// query to the servers cannot: single-label names, names the servers do not
// know (an /etc/hosts entry), and lookups the servers fail.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/miekg/dns"
	"golang.org/x/sync/singleflight"
)

// Bounds of the resolver's cache and lookups.
const (
	// DNSMinTTL is the floor of a positive answer's lifetime in the cache:
	// a crawl revisits a host every second or so, and a TTL of 0-30 s
	// (common behind load balancers) would cost a lookup per request.
	DNSMinTTL = 30 * time.Second
	// DNSMaxTTL caps a positive answer's lifetime (TTLs run to days), so a
	// host that moves is followed within it.
	DNSMaxTTL = 10 * time.Minute
	// DNSNegativeMinTTL and DNSNegativeMaxTTL bound how long "no such host"
	// (NXDOMAIN, or no address record) is kept: the SOA's negative TTL
	// (RFC 2308 section 5) clamped to this range, DNSNegativeMinTTL
	// without an SOA. The cap is well under RFC 2308's 3 hours so that a
	// retried URL (CodeDNSFailed is retryable) sees a new name soon.
	DNSNegativeMinTTL = 30 * time.Second
	DNSNegativeMaxTTL = 5 * time.Minute
	// DNSFailureTTL is how long a failed lookup (SERVFAIL, REFUSED, every
	// server timed out) is kept (RFC 2308 section 7.1 allows up to 5
	// minutes): long enough that the many URLs of one broken host do not
	// each repeat it, short enough for a transient fault.
	DNSFailureTTL = 5 * time.Second
	// DNSFallbackTTL is the lifetime of an answer of Go's resolver, which
	// gives no TTL.
	DNSFallbackTTL = DNSMinTTL
	// DNSCacheEntries bounds the cache (least recently used names are
	// dropped first): about 200 bytes a name, so at most about 13 MB
	// however many names a crawl meets.
	DNSCacheEntries = 65536
	// DNSMaxConcurrent bounds the lookups in flight at once (each holds two
	// UDP sockets, counted in worker's file-descriptor reserve); others
	// wait for a slot within their own deadline.
	DNSMaxConcurrent = 64
	// DNSLookupTimeout bounds one lookup, all servers and the fallback
	// together; each server gets DNSQueryTimeout of it.
	DNSLookupTimeout = 8 * time.Second
	DNSQueryTimeout  = 2 * time.Second
	// dnsMaxAddrs caps the addresses kept per name (A first, then AAAA), so
	// a hostile answer can neither bloat the cache nor make a dial try
	// hundreds of addresses.
	dnsMaxAddrs = 8
	// dnsMinAttempt is the least time a dial gives one address when it
	// splits its deadline among several (as net.Dialer does).
	dnsMinAttempt = 2 * time.Second
)

// ResolverOptions configures NewResolver. Zero fields take the defaults.
type ResolverOptions struct {
	// Servers are the recursive servers asked, "host:port", in order. nil:
	// the nameservers of /etc/resolv.conf; when that cannot be read (or
	// lists none), every name goes to System.
	Servers []string
	// System answers what the servers cannot (see the package comment in
	// dns.go). nil: net.DefaultResolver.
	System *net.Resolver
	// CacheEntries bounds the cache, names. <= 0: DNSCacheEntries.
	CacheEntries int
	// MaxConcurrent bounds lookups in flight. <= 0: DNSMaxConcurrent.
	MaxConcurrent int
}

// DNSStats are a Resolver's counters since it was made.
type DNSStats struct {
	// Hits are lookups answered from the cache, positive or negative;
	// NegativeHits the negative ones among them.
	Hits, NegativeHits uint64
	// Misses are lookups that waited for an answer (their own query, or
	// one already in flight for the same name).
	Misses uint64
	// InFlight is the queries running now, at most the concurrency bound.
	InFlight int64
	// Entries is the names cached now (expired ones included until they
	// are replaced or evicted), at most the cache bound.
	Entries int
}

// Resolver resolves host names to addresses for the fetcher's dialer, with
// a cache that honours record TTLs (clamped to DNSMinTTL..DNSMaxTTL), a
// negative cache, one query per name at a time (singleflight) and at most
// MaxConcurrent queries in flight. It is safe for concurrent use.
type Resolver struct {
	servers []string
	system  *net.Resolver
	udp     *dns.Client
	tcp     *dns.Client
	cache   *lru.Cache[string, *dnsEntry]
	group   singleflight.Group
	sem     chan struct{}
	now     func() time.Time // tests move the clock

	hits, negHits, misses atomic.Uint64
	inFlight              atomic.Int64
}

// dnsEntry is one cached answer: addresses, or err (negative or failed).
type dnsEntry struct {
	addrs   []netip.Addr
	err     *net.DNSError
	expires time.Time
}

// NewResolver returns a Resolver with opts (zero fields defaulted).
func NewResolver(opts ResolverOptions) *Resolver {
	if opts.Servers == nil {
		if conf, err := dns.ClientConfigFromFile("/etc/resolv.conf"); err == nil {
			for _, s := range conf.Servers {
				opts.Servers = append(opts.Servers, net.JoinHostPort(s, conf.Port))
			}
		}
	}
	if opts.System == nil {
		opts.System = net.DefaultResolver
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = DNSCacheEntries
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DNSMaxConcurrent
	}
	cache, err := lru.New[string, *dnsEntry](opts.CacheEntries)
	if err != nil {
		panic(err) // only for a size <= 0, excluded above
	}
	return &Resolver{
		servers: opts.Servers,
		system:  opts.System,
		udp:     &dns.Client{Net: "udp", Timeout: DNSQueryTimeout},
		tcp:     &dns.Client{Net: "tcp", Timeout: DNSQueryTimeout},
		cache:   cache,
		sem:     make(chan struct{}, opts.MaxConcurrent),
		now:     time.Now,
	}
}

// Stats returns the resolver's counters.
func (r *Resolver) Stats() DNSStats {
	return DNSStats{Hits: r.hits.Load(), NegativeHits: r.negHits.Load(), Misses: r.misses.Load(),
		InFlight: r.inFlight.Load(), Entries: r.cache.Len()}
}

// LookupNetIP returns the addresses of host (a name; an IP literal is
// returned as is), IPv4 first, at most 8; the slice must not be modified.
// Errors: a *net.DNSError (IsNotFound for no such host or no address;
// otherwise the lookup failed), or ctx's error when ctx ends first (the
// query goes on for the other callers waiting on it, within
// DNSLookupTimeout).
func (r *Resolver) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if name == "" {
		return nil, &net.DNSError{Err: "empty host name", Name: host, IsNotFound: true}
	}
	if e, ok := r.cache.Get(name); ok && r.now().Before(e.expires) {
		r.hits.Add(1)
		if e.err != nil && e.err.IsNotFound {
			r.negHits.Add(1)
		}
		return e.result(host)
	}
	r.misses.Add(1)
	ch := r.group.DoChan(name, func() (any, error) {
		e := r.resolve(context.WithoutCancel(ctx), name)
		if e.expires.After(r.now()) {
			r.cache.Add(name, e)
		}
		return e, nil
	})
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("lookup %s: %w", host, ctx.Err())
	case res := <-ch:
		return res.Val.(*dnsEntry).result(host)
	}
}

// result returns e's addresses, or its error naming host.
func (e *dnsEntry) result(host string) ([]netip.Addr, error) {
	if e.err != nil {
		err := *e.err
		err.Name = host
		return nil, &err
	}
	return e.addrs, nil
}

// resolve looks name up once, within DNSLookupTimeout and a concurrency
// slot, and returns the entry to cache (expires not after now: not cached).
func (r *Resolver) resolve(ctx context.Context, name string) *dnsEntry {
	ctx, cancel := context.WithTimeout(ctx, DNSLookupTimeout)
	defer cancel()
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return &dnsEntry{err: &net.DNSError{Err: "too many lookups in flight", Name: name, IsTimeout: true, IsTemporary: true}}
	}
	r.inFlight.Add(1)
	defer func() {
		r.inFlight.Add(-1)
		<-r.sem
	}()
	now := r.now()
	if len(r.servers) == 0 || !strings.Contains(name, ".") {
		return r.resolveSystem(ctx, name, now, nil, 0)
	}
	addrs, ttl, err := r.query(ctx, name)
	if err == nil {
		return &dnsEntry{addrs: addrs, expires: now.Add(min(max(ttl, DNSMinTTL), DNSMaxTTL))}
	}
	return r.resolveSystem(ctx, name, now, err, ttl)
}

// resolveSystem asks Go's resolver for name (an /etc/hosts entry, a
// single-label name, or a name the servers failed). dnsErr is the servers'
// answer, if any: a negative one is cached for negTTL (its SOA's, clamped)
// when Go's resolver finds nothing either.
func (r *Resolver) resolveSystem(ctx context.Context, name string, now time.Time, dnsErr *net.DNSError, negTTL time.Duration) *dnsEntry {
	ips, err := r.system.LookupNetIP(ctx, "ip", name)
	if err == nil && len(ips) > 0 {
		return &dnsEntry{addrs: orderAddrs(ips), expires: now.Add(DNSFallbackTTL)}
	}
	if dnsErr != nil && dnsErr.IsNotFound {
		return &dnsEntry{err: dnsErr, expires: now.Add(min(max(negTTL, DNSNegativeMinTTL), DNSNegativeMaxTTL))}
	}
	var sysErr *net.DNSError
	switch {
	case err == nil:
		sysErr = &net.DNSError{Err: "no address", Name: name, IsNotFound: true}
	case !errors.As(err, &sysErr):
		sysErr = &net.DNSError{Err: err.Error(), Name: name, IsTemporary: true,
			IsTimeout: errors.Is(err, context.DeadlineExceeded)}
	}
	if sysErr.IsNotFound {
		return &dnsEntry{err: sysErr, expires: now.Add(DNSNegativeMinTTL)}
	}
	if dnsErr != nil {
		sysErr = dnsErr // the servers' own failure says more
	}
	return &dnsEntry{err: sysErr, expires: now.Add(DNSFailureTTL)}
}
