package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/net/publicsuffix"

	"github.com/zkcrawl/zkcrawl/config"
)

// Bounds of the cookie jars (CookieLimits' defaults). A cookie's cost is
// what its entry takes in net/http/cookiejar plus its line in the jar's
// ledger, counted as cookieOverhead plus twice its name, domain and path
// (the entry's id repeats them) plus its value; a jar's cost is
// jarOverhead plus its cookies'. So one jar holds at most
// DefaultMaxCookiesPerKey cookies and DefaultMaxCookieBytesPerKey bytes,
// and all jars of a worker at most DefaultMaxCookieBytes bytes (plus, for
// each fetch in flight with a jar evicted under it, that jar's
// DefaultMaxCookieBytesPerKey).
const (
	// MaxCookieBytes bounds one cookie's name and value, in bytes: RFC
	// 6265 section 6.1 asks for at least 4096, and browsers keep no more.
	// Longer cookies are dropped, as browsers drop them.
	MaxCookieBytes = 4096
	// DefaultMaxCookiesPerKey bounds the cookies of one politeness key's
	// jar (RFC 6265 section 6.1 asks for at least 50 per domain; Chrome
	// keeps 180).
	DefaultMaxCookiesPerKey = 150
	// DefaultMaxCookieBytesPerKey bounds one jar's cost in bytes: 128 KiB.
	DefaultMaxCookieBytesPerKey = 128 << 10
	// DefaultMaxCookieBytes bounds the cost of all of a worker's jars:
	// 64 MiB; past it the least recently used jars are dropped.
	DefaultMaxCookieBytes = 64 << 20
	// DefaultMaxCookieJars bounds the number of jars (politeness keys
	// with cookies) a worker keeps, the least recently used dropped first.
	DefaultMaxCookieJars = 16384

	cookieOverhead = 256  // bytes per cookie beyond its strings: the entry's times, flags, map slots
	jarOverhead    = 1024 // bytes per jar: the cookiejar.Jar, its maps, the ledger
)

// CookieLimits bound a CookieJars. Zero or negative fields take the
// defaults above.
type CookieLimits struct {
	// MaxCookiesPerKey bounds the cookies kept per jar; past it new
	// cookies are dropped (cookies already kept may still be replaced or
	// deleted).
	MaxCookiesPerKey int
	// MaxBytesPerKey bounds a jar's cost in bytes, as MaxCookiesPerKey.
	MaxBytesPerKey int64
	// MaxBytes bounds the cost of all jars, in bytes; past it the least
	// recently used jars are dropped whole.
	MaxBytes int64
	// MaxJars bounds the number of jars, the least recently used dropped
	// first.
	MaxJars int
}

func (l CookieLimits) withDefaults() CookieLimits {
	if l.MaxCookiesPerKey <= 0 {
		l.MaxCookiesPerKey = DefaultMaxCookiesPerKey
	}
	if l.MaxBytesPerKey <= 0 {
		l.MaxBytesPerKey = DefaultMaxCookieBytesPerKey
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxCookieBytes
	}
	if l.MaxJars <= 0 {
		l.MaxJars = DefaultMaxCookieJars
	}
	return l
}

// CookieJars holds one RFC 6265 cookie jar (net/http/cookiejar with the
// Public Suffix List of golang.org/x/net/publicsuffix) per politeness key,
// created on first use, bounded by its CookieLimits, and the crawl's seed
// cookies (config cookies_seed), put into each jar before its first
// request to a host they apply to. It is safe for concurrent use.
type CookieJars struct {
	limits CookieLimits

	mu    sync.Mutex
	jars  *simplelru.LRU[string, *KeyJar]
	bytes int64 // the cost of the jars in jars
	seeds []seed
	src   []config.CookieSeed // what seeds was parsed from
}

// seed is one parsed config.CookieSeed.
type seed struct {
	url     *url.URL
	host    string   // url's host name, lower case
	domains []string // the Domain attributes of its cookies, lower case, no leading dot
	cookies []*http.Cookie
}

// NewCookieJars returns an empty set of jars bounded by l.
func NewCookieJars(l CookieLimits) *CookieJars {
	l = l.withDefaults()
	j := &CookieJars{limits: l}
	j.jars, _ = simplelru.NewLRU(l.MaxJars, func(_ string, kj *KeyJar) { j.dropped(kj) })
	return j
}

// dropped takes an evicted or removed jar out of the total; j.mu is held.
func (j *CookieJars) dropped(kj *KeyJar) {
	kj.gone = true
	j.bytes -= kj.cost.Load()
}

// SetSeeds makes seeds the seed cookies of jars created from now on. When
// they differ from the seeds in force, every jar is dropped, so each key
// starts again from the new seeds. Errors: a seed that does not parse
// (config.Validate refuses it first), naming its index and cookie name,
// never its value; the seeds in force are then kept.
func (j *CookieJars) SetSeeds(seeds []config.CookieSeed) error {
	j.mu.Lock()
	same := slices.EqualFunc(j.src, seeds, func(a, b config.CookieSeed) bool {
		return a.URL == b.URL && slices.Equal(a.Cookies, b.Cookies)
	})
	j.mu.Unlock()
	if same {
		return nil
	}
	parsed := make([]seed, 0, len(seeds))
	for i, s := range seeds {
		u, cookies, err := s.Parse()
		if err != nil {
			return fmt.Errorf("cookies_seed entry %d: %w", i, err)
		}
		p := seed{url: u, host: strings.ToLower(u.Hostname()), cookies: cookies}
		for _, c := range cookies {
			if c.Domain != "" {
				p.domains = append(p.domains, strings.ToLower(strings.TrimPrefix(c.Domain, ".")))
			}
		}
		parsed = append(parsed, p)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seeds, j.src = parsed, slices.Clone(seeds)
	j.jars.Purge()
	return nil
}

// Reset drops every jar.
func (j *CookieJars) Reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jars.Purge()
}

// Jar returns key's jar, creating an empty one (with the seeds in force)
// if there is none, and marks it most recently used.
func (j *CookieJars) Jar(key string) *KeyJar {
	j.mu.Lock()
	defer j.mu.Unlock()
	if kj, ok := j.jars.Get(key); ok {
		return kj
	}
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	kj := &KeyJar{owner: j, jar: jar, ledger: map[string]int64{}, seeds: j.seeds,
		applied: make([]bool, len(j.seeds))}
	kj.cost.Store(jarOverhead)
	j.jars.Add(key, kj)
	j.bytes += jarOverhead
	j.trim()
	return kj
}

// count returns the number of jars kept (tests check the caps with it).
func (j *CookieJars) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.jars.Len()
}

// costBytes returns the cost of the jars kept, in bytes (see
// MaxCookieBytes' comment for how a cookie is counted).
func (j *CookieJars) costBytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bytes
}

// grew adds delta to the total for kj, unless kj was dropped meanwhile,
// and drops the least recently used jars while the total is over MaxBytes
// (never the last one).
func (j *CookieJars) grew(kj *KeyJar, delta int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if kj.gone {
		return
	}
	j.bytes += delta
	j.trim()
}

// trim drops the least recently used jars while over MaxBytes; j.mu is held.
func (j *CookieJars) trim() {
	for j.bytes > j.limits.MaxBytes && j.jars.Len() > 1 {
		j.jars.RemoveOldest()
	}
}

// KeyJar is one politeness key's cookie jar, an http.CookieJar: a
// net/http/cookiejar.Jar whose SetCookies keeps within the CookieLimits,
// and whose Cookies first puts in the seed cookies that apply to the URL's
// host, once per jar. Its cookies follow RFC 6265 (domain and path
// matching, Secure, expiry, the Public Suffix List), as the wrapped jar
// applies them.
type KeyJar struct {
	owner *CookieJars
	cost  atomic.Int64 // bytes; read by the owner under its lock when dropping the jar
	gone  bool         // dropped from the owner (owner.mu)

	mu      sync.Mutex
	jar     *cookiejar.Jar
	ledger  map[string]int64 // the cost of each cookie id ("domain;path;name", as cookiejar's) passed on
	seeds   []seed
	applied []bool // seeds[i] was put into jar
	refused atomic.Int64
}

// Cookies returns the cookies to send to u (http.CookieJar), after putting
// into the jar the seed cookies that apply to u's host (its host is the
// seed URL's, or one of the seed's Domain attributes domain-matches it)
// and were not put in before.
func (k *KeyJar) Cookies(u *url.URL) []*http.Cookie {
	host := strings.ToLower(u.Hostname())
	var delta int64
	k.mu.Lock()
	for i, s := range k.seeds {
		if k.applied[i] || !s.appliesTo(host) {
			continue
		}
		k.applied[i] = true
		delta += k.setLocked(s.url, s.cookies)
	}
	k.mu.Unlock()
	if delta != 0 {
		k.owner.grew(k, delta)
	}
	return k.jar.Cookies(u)
}

// appliesTo reports whether s's cookies may be sent to host.
func (s seed) appliesTo(host string) bool {
	if host == s.host {
		return true
	}
	for _, d := range s.domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// SetCookies stores the cookies of a response from u (http.CookieJar),
// within the limits: a cookie whose name and value exceed MaxCookieBytes is
// dropped, and so is a new cookie (an id not in the jar) that would take
// the jar past MaxCookiesPerKey or MaxBytesPerKey. Replacing or deleting a
// cookie always passes.
func (k *KeyJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if len(cookies) == 0 {
		return
	}
	k.mu.Lock()
	delta := k.setLocked(u, cookies)
	k.mu.Unlock()
	if delta != 0 {
		k.owner.grew(k, delta)
	}
}

// refusedCount returns how many cookies SetCookies dropped for the limits.
func (k *KeyJar) refusedCount() int64 { return k.refused.Load() }

// count returns the cookies in the jar's ledger: those kept, plus any
// expired since (the ledger forgets a cookie only when it is replaced or
// deleted, so it never counts fewer than the jar holds).
func (k *KeyJar) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.ledger)
}

// costBytes returns the jar's cost in bytes.
func (k *KeyJar) costBytes() int64 { return k.cost.Load() }

// setLocked filters cookies through the limits, passes the rest to the
// jar and returns the change of the jar's cost; k.mu is held.
func (k *KeyJar) setLocked(u *url.URL, cookies []*http.Cookie) int64 {
	lim := k.owner.limits
	host := strings.ToLower(u.Hostname())
	now := time.Now()
	keep := cookies[:0:0]
	var delta int64
	for _, c := range cookies {
		if len(c.Name)+len(c.Value) > MaxCookieBytes {
			k.refused.Add(1)
			continue
		}
		domain := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
		if domain == "" {
			domain = host
		}
		path := c.Path
		if path == "" || path[0] != '/' {
			path = defaultCookiePath(u.Path)
		}
		id := domain + ";" + path + ";" + c.Name
		old, had := k.ledger[id]
		if c.MaxAge < 0 || (!c.Expires.IsZero() && !c.Expires.After(now)) {
			if had { // a deletion: the jar forgets it
				delete(k.ledger, id)
				delta -= old
			}
			keep = append(keep, c)
			continue
		}
		cost := int64(cookieOverhead + 2*(len(domain)+len(path)+len(c.Name)) + len(c.Value))
		if !had && (len(k.ledger) >= lim.MaxCookiesPerKey || k.cost.Load()+delta+cost > lim.MaxBytesPerKey) {
			k.refused.Add(1)
			continue
		}
		if had && k.cost.Load()+delta-old+cost > lim.MaxBytesPerKey {
			k.refused.Add(1) // a replacement that grows past the bound: keep the old one
			continue
		}
		k.ledger[id] = cost
		delta += cost - old
		keep = append(keep, c)
	}
	if len(keep) > 0 {
		k.jar.SetCookies(u, keep)
	}
	k.cost.Add(delta)
	return delta
}

// defaultCookiePath is the default-path of RFC 6265 section 5.1.4 for a
// request path, as net/http/cookiejar computes it.
func defaultCookiePath(p string) string {
	if p == "" || p[0] != '/' {
		return "/"
	}
	i := strings.LastIndex(p, "/")
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// jarKey is the context key of WithCookieJar.
type jarKey struct{}

// WithCookieJar returns a context that makes Fetch and FetchIf send the
// cookies jar holds for the URL (one Cookie header, as the raw request and
// the WARC request record show it) and store the response's Set-Cookie
// fields in it. Without it (nil jar, or a context not derived from one)
// a fetch sends and keeps no cookies. Robots (robots.txt) fetches are made
// without: robots.txt is public by RFC 9309 and cached per origin for
// every key, so a session must not shape it.
func WithCookieJar(ctx context.Context, jar http.CookieJar) context.Context {
	if jar == nil {
		return ctx
	}
	return context.WithValue(ctx, jarKey{}, jar)
}

// cookieJarOf returns the jar WithCookieJar put in ctx, or nil.
func cookieJarOf(ctx context.Context) http.CookieJar {
	jar, _ := ctx.Value(jarKey{}).(http.CookieJar)
	return jar
}
