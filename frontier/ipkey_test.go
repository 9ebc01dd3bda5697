package frontier

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDNS answers lookups from a table, counting them per name.
type fakeDNS struct {
	mu    sync.Mutex
	addrs map[string][]string
	calls map[string]int
	delay time.Duration
	live  atomic.Int32 // lookups running now
	peak  atomic.Int32
}

func (d *fakeDNS) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	n := d.live.Add(1)
	defer d.live.Add(-1)
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	d.mu.Lock()
	d.calls[name]++
	list, ok := d.addrs[name]
	d.mu.Unlock()
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range list {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// withFakeDNS makes the process's ip keys answer from d for the test, with
// warnings going to the returned buffer.
func withFakeDNS(t *testing.T, d *fakeDNS) *bytes.Buffer {
	t.Helper()
	d.calls = map[string]int{}
	var logs bytes.Buffer
	r := newIPKeys(d.lookup)
	r.log = func() *slog.Logger { return slog.New(slog.NewTextHandler(&logs, nil)) }
	old := processIPKeys
	processIPKeys = r
	t.Cleanup(func() { processIPKeys = old })
	return &logs
}

// The ip key is the name's lowest address, IPv4 first, whatever the order
// of the answer, without the port; an IP literal is its own key; a failed
// lookup leaves the host (with its port) its own key, looked up and logged
// once.
func TestIPKey(t *testing.T) {
	d := &fakeDNS{addrs: map[string][]string{
		"a.example":      {"192.0.2.7", "2001:db8::1", "192.0.2.5"},
		"b.example":      {"192.0.2.5"},
		"v6.example":     {"2001:db8::9", "2001:db8::2"},
		"mapped.example": {"::ffff:192.0.2.5"},
	}}
	logs := withFakeDNS(t, d)
	l := Layout{Shards: 64, Spread: 1, PolitenessKey: KeyIP}
	for _, c := range []struct{ url, key string }{
		{"http://a.example/", "192.0.2.5"},
		{"https://a.example:8443/x", "192.0.2.5"},
		{"http://b.example:8080/", "192.0.2.5"},
		{"http://mapped.example/", "192.0.2.5"},
		{"http://v6.example/", "2001:db8::2"},
		{"http://192.0.2.5:81/", "192.0.2.5"},
		{"http://[2001:db8::2]/", "2001:db8::2"},
		{"http://gone.example:8080/p", "gone.example:8080"},
		{"http://gone.example/q", "gone.example"},
		{"not a url", ""},
	} {
		if k := l.Key(c.url); k != c.key {
			t.Errorf("ip Key(%q) = %q, want %q", c.url, k, c.key)
		}
	}
	if a, b := l.Group("http://a.example/"), l.Group("http://b.example:8080/"); a != b {
		t.Errorf("two names of one address in groups %d and %d", a, b)
	}
	for name, n := range d.calls {
		if n != 1 {
			t.Errorf("%s looked up %d times, want once per process", name, n)
		}
	}
	if n := strings.Count(logs.String(), "address lookup failed"); n != 1 || !strings.Contains(logs.String(), "host=gone.example") {
		t.Errorf("failed lookup logged %d times, want once naming the host:\n%s", n, logs)
	}
	// A layout of another kind never looks anything up.
	calls := len(d.calls)
	(Layout{Shards: 64, Spread: 1}).Key("http://other.example/")
	(Layout{Shards: 64, Spread: 1, PolitenessKey: KeyDomain}).Prefetch([]string{"http://other.example/"})
	if len(d.calls) != calls {
		t.Errorf("host/domain layouts looked names up: %v", d.calls)
	}
}

// Concurrent Key calls for one name share one lookup; Prefetch looks names up in parallel
// (at most 16 at a time) and the Key calls after it wait for nothing.
func TestIPKeyConcurrencyAndPrefetch(t *testing.T) {
	d := &fakeDNS{addrs: map[string][]string{}, delay: 50 * time.Millisecond}
	var urls []string
	for i := range 64 {
		name := "h" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".example"
		d.addrs[name] = []string{"192.0.2.1"}
		urls = append(urls, "http://"+name+"/", "http://"+name+"/2")
	}
	withFakeDNS(t, d)
	l := Layout{Shards: 64, Spread: 1, PolitenessKey: KeyIP}

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); l.Key(urls[0]) }()
	}
	wg.Wait()
	if n := d.calls[Host(urls[0])]; n != 1 {
		t.Errorf("20 concurrent Key calls made %d lookups, want 1", n)
	}

	start := time.Now()
	l.Prefetch(urls)
	took := time.Since(start)
	if p := d.peak.Load(); p > ipKeyParallel || p < 2 {
		t.Errorf("prefetch ran %d lookups at once, want 2..%d", p, ipKeyParallel)
	}
	if took > 63*d.delay/2 {
		t.Errorf("prefetch of 63 names took %v: not parallel", took)
	}
	start = time.Now()
	for _, u := range urls {
		if k := l.Key(u); k != "192.0.2.1" {
			t.Fatalf("Key(%s) = %q after prefetch", u, k)
		}
	}
	if took := time.Since(start); took > 20*time.Millisecond {
		t.Errorf("Key after Prefetch took %v: not cached", took)
	}
	for name, n := range d.calls {
		if n != 1 {
			t.Errorf("%s looked up %d times", name, n)
		}
	}
}

// A lookup that does not answer is given up after ipKeyTimeout: the host is
// its own key and the caller is not held longer.
func TestIPKeyLookupTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits ipKeyTimeout")
	}
	d := &fakeDNS{addrs: map[string][]string{"slow.example": {"192.0.2.1"}}, delay: time.Hour}
	withFakeDNS(t, d)
	start := time.Now()
	k := (Layout{Shards: 8, Spread: 1, PolitenessKey: KeyIP}).Key("http://slow.example/")
	if took := time.Since(start); k != "slow.example" || took > ipKeyTimeout+time.Second {
		t.Errorf("Key of a name whose lookup hangs = %q after %v, want the host after about %v", k, took, ipKeyTimeout)
	}
}
