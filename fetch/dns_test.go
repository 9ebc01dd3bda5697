package fetch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testDNS is a real DNS server on loopback (miekg/dns) answering from a
// zone map, counting the queries it gets per name and type.
type testDNS struct {
	addr string

	mu      sync.Mutex
	delay   time.Duration       // before each answer
	zone    map[string][]dns.RR // owner name (FQDN) -> records
	queries map[string]int      // "name TYPE" -> count
	active  int                 // A queries being answered now
	peak    int                 // most A queries answered at once
}

// startTestDNS starts the server; records are zone-file lines.
func startTestDNS(t *testing.T, records ...string) *testDNS {
	t.Helper()
	s := &testDNS{zone: map[string][]dns.RR{}, queries: map[string]int{}}
	for _, line := range records {
		rr, err := dns.NewRR(line)
		if err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		s.zone[rr.Header().Name] = append(s.zone[rr.Header().Name], rr)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}

func (s *testDNS) serve(w dns.ResponseWriter, req *dns.Msg) {
	q := req.Question[0]
	s.mu.Lock()
	s.queries[strings.ToLower(q.Name)+" "+dns.TypeToString[q.Qtype]]++
	if q.Qtype == dns.TypeA {
		s.active++
		s.peak = max(s.peak, s.active)
	}
	delay := s.delay
	s.mu.Unlock()
	time.Sleep(delay)
	m := new(dns.Msg)
	m.SetReply(req)
	s.mu.Lock()
	if q.Qtype == dns.TypeA {
		s.active--
	}
	name := strings.ToLower(q.Name)
	rrs, ok := s.zone[name]
	for range 8 { // follow CNAMEs as a recursive server does
		if len(rrs) != 1 {
			break
		}
		c, isC := rrs[0].(*dns.CNAME)
		if !isC {
			break
		}
		m.Answer = append(m.Answer, c)
		rrs = s.zone[c.Target]
	}
	s.mu.Unlock()
	if !ok {
		m.Rcode = dns.RcodeNameError
		soa, _ := dns.NewRR("test. 3600 IN SOA ns.test. admin.test. 1 3600 600 86400 120")
		m.Ns = append(m.Ns, soa)
	}
	for _, rr := range rrs {
		if rr.Header().Rrtype == q.Qtype {
			m.Answer = append(m.Answer, rr)
		}
	}
	_ = w.WriteMsg(m)
}

func (s *testDNS) setDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// count returns the queries for name (FQDN) of type typ seen so far.
func (s *testDNS) count(name, typ string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[name+" "+typ]
}

// resolver returns a Resolver that asks s, and whose fallback (Go's
// resolver) asks s too, with a clock the test moves.
func (s *testDNS) resolver(opts ResolverOptions) (*Resolver, *time.Time) {
	opts.Servers = []string{s.addr}
	opts.System = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.addr)
	}}
	r := NewResolver(opts)
	now := time.Now()
	r.now = func() time.Time { return now }
	return r, &now
}

func TestResolverHonoursTTLWithinFloorAndCap(t *testing.T) {
	s := startTestDNS(t,
		"ttl60.test. 60 IN A 192.0.2.1",
		"ttl60.test. 60 IN AAAA 2001:db8::1",
		"ttl1.test. 1 IN A 192.0.2.2",
		"ttlday.test. 86400 IN A 192.0.2.3",
		"www.test. 45 IN CNAME ttl60.test.")
	r, now := s.resolver(ResolverOptions{})
	ctx := context.Background()
	lookup := func(name string, want ...string) {
		t.Helper()
		got, err := r.LookupNetIP(ctx, name)
		if err != nil {
			t.Fatalf("LookupNetIP(%s): %v", name, err)
		}
		if ws := strings.Join(want, " "); fmtAddrs(got) != ws {
			t.Fatalf("LookupNetIP(%s) = %s, want %s", name, fmtAddrs(got), ws)
		}
	}
	for _, name := range []string{"ttl60.test", "ttl1.test", "ttlday.test", "www.test"} {
		lookup(name, map[string][]string{"ttl60.test": {"192.0.2.1", "2001:db8::1"}, "ttl1.test": {"192.0.2.2"},
			"ttlday.test": {"192.0.2.3"}, "www.test": {"192.0.2.1", "2001:db8::1"}}[name]...)
	}
	step := func(d time.Duration, name string, wantQueries int) {
		t.Helper()
		*now = now.Add(d)
		lookup(strings.TrimSuffix(name, "."), addrOf(s, name)...)
		if got := s.count(name, "A"); got != wantQueries {
			t.Fatalf("after %v: %d A queries for %s, want %d", d, got, name, wantQueries)
		}
	}
	step(0, "ttl60.test.", 1)              // cached
	step(29*time.Second, "ttl1.test.", 1)  // 1 s TTL raised to the 30 s floor
	step(2*time.Second, "ttl1.test.", 2)   // 31 s: expired
	step(0, "www.test.", 1)                // 31 s: the CNAME's 45 s holds
	step(15*time.Second, "www.test.", 2)   // 46 s: expired
	step(15*time.Second, "ttl60.test.", 2) // 61 s: the A's 60 s TTL expired
	step(DNSMaxTTL-61*time.Second-time.Second, "ttlday.test.", 1)
	step(2*time.Second, "ttlday.test.", 2) // a day's TTL capped at DNSMaxTTL
	if st := r.Stats(); st.Hits == 0 || st.Misses == 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v: want hits, misses and nothing in flight", st)
	}
}

// addrOf returns the addresses the zone holds for name (A first).
func addrOf(s *testDNS, name string) []string {
	var out []string
	for _, typ := range []uint16{dns.TypeA, dns.TypeAAAA} {
		for _, rr := range s.zone[name] {
			switch a := rr.(type) {
			case *dns.A:
				if typ == dns.TypeA {
					out = append(out, a.A.String())
				}
			case *dns.AAAA:
				if typ == dns.TypeAAAA {
					out = append(out, a.AAAA.String())
				}
			case *dns.CNAME:
				return addrOf(s, a.Target)
			}
		}
	}
	return out
}

func fmtAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}

func TestResolverNegativeCache(t *testing.T) {
	s := startTestDNS(t, "noaddr.test. 60 IN TXT \"no address here\"")
	r, now := s.resolver(ResolverOptions{})
	ctx := context.Background()
	for _, name := range []string{"nx.test", "noaddr.test"} {
		_, err := r.LookupNetIP(ctx, name)
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound || de.Name != name {
			t.Fatalf("LookupNetIP(%s) error %v: want a not-found *net.DNSError naming it", name, err)
		}
	}
	first := s.count("nx.test.", "A")
	if first == 0 {
		t.Fatal("no query reached the server")
	}
	*now = now.Add(DNSNegativeMinTTL + time.Second)
	if _, err := r.LookupNetIP(ctx, "nx.test"); err == nil {
		t.Fatal("nx.test resolved")
	}
	if got := s.count("nx.test.", "A"); got != first {
		t.Fatalf("%d queries after a cached NXDOMAIN, want %d (the SOA's 120 s negative TTL holds)", got, first)
	}
	if st := r.Stats(); st.NegativeHits != 1 {
		t.Fatalf("stats %+v: want 1 negative hit", st)
	}
	*now = now.Add(90 * time.Second) // 121 s: the SOA minimum (120 s) passed
	_, _ = r.LookupNetIP(ctx, "nx.test")
	if got := s.count("nx.test.", "A"); got <= first {
		t.Fatalf("no new query once the negative entry expired (%d queries)", got)
	}
	// No address record and no SOA: cached for DNSNegativeMinTTL.
	_, _ = r.LookupNetIP(ctx, "noaddr.test")
	n := s.count("noaddr.test.", "A")
	*now = now.Add(DNSNegativeMinTTL - time.Second)
	_, _ = r.LookupNetIP(ctx, "noaddr.test")
	if got := s.count("noaddr.test.", "A"); got != n {
		t.Fatalf("no-address entry not cached: %d queries, want %d", got, n)
	}
	*now = now.Add(2 * time.Second)
	_, _ = r.LookupNetIP(ctx, "noaddr.test")
	if s.count("noaddr.test.", "A") == n {
		t.Fatal("no-address entry outlived DNSNegativeMinTTL")
	}
}

func TestResolverSingleflight(t *testing.T) {
	s := startTestDNS(t, "slow.test. 300 IN A 192.0.2.9")
	s.setDelay(200 * time.Millisecond)
	r, _ := s.resolver(ResolverOptions{})
	var wg sync.WaitGroup
	var fails atomic.Int32
	for range 50 {
		wg.Go(func() {
			if got, err := r.LookupNetIP(context.Background(), "SLOW.test."); err != nil || fmtAddrs(got) != "192.0.2.9" {
				fails.Add(1)
			}
		})
	}
	wg.Wait()
	if fails.Load() > 0 {
		t.Fatalf("%d of 50 lookups failed", fails.Load())
	}
	if a, aaaa := s.count("slow.test.", "A"), s.count("slow.test.", "AAAA"); a != 1 || aaaa != 1 {
		t.Fatalf("50 concurrent lookups of one name sent %d A and %d AAAA queries, want 1 each", a, aaaa)
	}
	// A caller whose context ends stops waiting; the query goes on.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.LookupNetIP(ctx, "other.test"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lookup past its deadline: %v, want context.DeadlineExceeded", err)
	}
}

func TestResolverBoundsCacheAndConcurrency(t *testing.T) {
	var recs []string
	for i := range 20 {
		recs = append(recs, "h"+string(rune('a'+i))+".test. 300 IN A 192.0.2.1")
	}
	s := startTestDNS(t, recs...)
	s.setDelay(50 * time.Millisecond)
	r, _ := s.resolver(ResolverOptions{CacheEntries: 4, MaxConcurrent: 2})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := r.LookupNetIP(context.Background(), "h"+string(rune('a'+i))+".test"); err != nil {
				t.Errorf("lookup %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	peak := s.peak
	s.mu.Unlock()
	if peak > 2 {
		t.Fatalf("%d A queries at once, want at most MaxConcurrent 2", peak)
	}
	if st := r.Stats(); st.Entries > 4 || st.Misses != 20 {
		t.Fatalf("stats %+v: want at most 4 entries, 20 misses", st)
	}
}

func TestFetchDialsTheResolvedAddressThroughTheGuard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	s := startTestDNS(t, "site.test. 300 IN A 127.0.0.1")
	r, _ := s.resolver(ResolverOptions{})
	f := New(Options{Resolver: r, AllowPrivateNetworks: true})
	defer f.Close()
	ctx := context.Background()
	res, err := f.Fetch(ctx, "http://site.test:"+port+"/")
	if err != nil || res.Status != 200 || res.RemoteIP != "127.0.0.1" {
		t.Fatalf("fetch through the resolver: %v %+v", err, res)
	}
	f.SetOptions(Options{Resolver: r}) // guard on: 127.0.0.1 is loopback
	_, err = f.Fetch(ctx, "http://site.test:"+port+"/")
	if fe := new(Error); !errors.As(err, &fe) || fe.Code != CodeBlockedByUser {
		t.Fatalf("fetch of a name resolving to loopback with the guard on: %v, want CodeBlockedByUser", err)
	}
	_, err = f.Fetch(ctx, "http://nx.test:"+port+"/")
	if fe := new(Error); !errors.As(err, &fe) || fe.Code != CodeDNSFailed {
		t.Fatalf("fetch of an unknown name: %v, want CodeDNSFailed", err)
	}
}

func TestOrderAddrsIPv4FirstAndCapped(t *testing.T) {
	var in []netip.Addr
	for i := range 6 {
		in = append(in, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}), netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}))
	}
	got := orderAddrs(in)
	if len(got) != dnsMaxAddrs || !got[5].Is4() || !got[6].Is6() || !slices.IsSortedFunc(got[:6], netip.Addr.Compare) {
		t.Fatalf("orderAddrs = %v", got)
	}
}

// TestResolverManyNamesLeaveNothingBehind: a crawl of thousands of names
// keeps at most CacheEntries of them and no goroutine per name.
func TestResolverManyNamesLeaveNothingBehind(t *testing.T) {
	const names, entries = 1000, 200
	recs := make([]string, 0, names/2)
	for i := 0; i < names; i += 2 { // the odd ones are NXDOMAIN
		recs = append(recs, "n"+strconv.Itoa(i)+".test. 300 IN A 192.0.2.1")
	}
	s := startTestDNS(t, recs...)
	r, _ := s.resolver(ResolverOptions{CacheEntries: entries, MaxConcurrent: 8})
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < names; i += 8 {
				_, _ = r.LookupNetIP(context.Background(), "n"+strconv.Itoa(i)+".test")
			}
		})
	}
	wg.Wait()
	if st := r.Stats(); st.Entries > entries || st.InFlight != 0 || st.Misses != names {
		t.Fatalf("stats %+v: want at most %d entries, nothing in flight, %d misses", st, entries, names)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines after %d lookups, %d before", n, names, before)
	}
}
