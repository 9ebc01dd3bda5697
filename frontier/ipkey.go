package frontier

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// ipKeyCacheSize bounds the host names whose address key one process
// remembers (an LRU; a forgotten name is looked up again, and may then get
// another key if its address changed).
const ipKeyCacheSize = 1 << 17

// ipKeyTimeout bounds one address lookup of the ip key; a lookup that takes
// longer counts as failed.
const ipKeyTimeout = 3 * time.Second

// ipKeyParallel bounds the concurrent lookups of Layout.Prefetch.
const ipKeyParallel = 16

// ipKeys resolves host names to the address key of KeyIP, once per name per
// process (docs/design.md, "Politeness keys"). Safe for concurrent use.
type ipKeys struct {
	lookup func(ctx context.Context, name string) ([]netip.Addr, error)
	log    func() *slog.Logger

	mu      sync.Mutex
	cache   *simplelru.LRU[string, string] // name -> address key, "" after a failed lookup; under mu
	pending map[string]chan struct{}       // name -> closed when its lookup is done
}

func newIPKeys(lookup func(ctx context.Context, name string) ([]netip.Addr, error)) *ipKeys {
	c, _ := simplelru.NewLRU[string, string](ipKeyCacheSize, nil) // size > 0: cannot fail; mu guards it
	return &ipKeys{lookup: lookup, log: slog.Default, cache: c, pending: map[string]chan struct{}{}}
}

// processIPKeys is the process's cache, looked up with Go's resolver (the
// one the fetcher dials with).
var processIPKeys = newIPKeys(func(ctx context.Context, name string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", name)
})

// key returns the address key of authority (a Host value): the address
// itself for an IP literal, else the cached or looked-up address of its
// name; the port is not part of it. A failed lookup makes authority its own
// key for the life of the process (or of the cache entry), logged once.
func (r *ipKeys) key(authority string) string {
	name := hostName(authority)
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap().String()
	}
	for {
		r.mu.Lock()
		if k, ok := r.cache.Get(name); ok {
			r.mu.Unlock()
			if k == "" {
				return authority
			}
			return k
		}
		if ch, ok := r.pending[name]; ok {
			r.mu.Unlock()
			<-ch
			continue
		}
		ch := make(chan struct{})
		r.pending[name] = ch
		r.mu.Unlock()
		k := r.resolve(name)
		r.mu.Lock()
		r.cache.Add(name, k)
		delete(r.pending, name)
		r.mu.Unlock()
		close(ch)
	}
}

// resolve looks name up, bounded by ipKeyTimeout, and returns its lowest
// address, IPv4 before IPv6 (so processes that get the same set in another
// order agree), or "" when the lookup fails (logged).
func (r *ipKeys) resolve(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), ipKeyTimeout)
	defer cancel()
	addrs, err := r.lookup(ctx, name)
	if err != nil || len(addrs) == 0 {
		r.log().Warn("politeness_key ip: address lookup failed, the host is its own politeness key in this process", "host", name, "error", err)
		return ""
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap().WithZone("")
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int {
		if a.Is4() != b.Is4() {
			if a.Is4() {
				return -1
			}
			return 1
		}
		return a.Compare(b)
	})
	return addrs[0].String()
}

// prefetch looks up the names of authorities not cached yet, up to
// ipKeyParallel at a time, and returns when all are cached.
func (r *ipKeys) prefetch(authorities []string) {
	sem := make(chan struct{}, ipKeyParallel)
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, a := range authorities {
		name := hostName(a)
		if seen[name] {
			continue
		}
		seen[name] = true
		if _, err := netip.ParseAddr(name); err == nil {
			continue
		}
		r.mu.Lock()
		_, ok := r.cache.Peek(name)
		r.mu.Unlock()
		if ok {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.key(a)
		}()
	}
	wg.Wait()
}

// hostName returns the host of an authority without port and IPv6
// brackets: "example.com" for "example.com:8080", "::1" for "[::1]:80".
func hostName(authority string) string {
	h := authority
	if host, _, err := net.SplitHostPort(authority); err == nil {
		h = host
	}
	return strings.Trim(h, "[]")
}
