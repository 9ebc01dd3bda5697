package fetch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// arrivalServer records when each request arrives and the peak number of
// requests in progress at once; each request takes hold.
type arrivalServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
	active   atomic.Int32
	peak     atomic.Int32
}

func newArrivalServer(t *testing.T, hold time.Duration) *arrivalServer {
	t.Helper()
	a := &arrivalServer{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.arrivals = append(a.arrivals, time.Now())
		a.mu.Unlock()
		n := a.active.Add(1)
		for {
			p := a.peak.Load()
			if n <= p || a.peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(hold)
		a.active.Add(-1)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// times returns the arrival times from index from on, sorted.
func (a *arrivalServer) times(from int) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := slices.Clone(a.arrivals)
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	return ts[min(from, len(ts)):]
}

func (a *arrivalServer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.arrivals)
}

func (a *arrivalServer) host(t *testing.T) string {
	u, err := url.Parse(a.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host // the caller's key: any string used consistently (zkcrawl's is frontier.Host)
}

// politeGet acquires host from p, fetches u and releases.
func politeGet(t *testing.T, p *Politeness, f *Fetcher, host, u string) {
	t.Helper()
	release, err := p.Acquire(context.Background(), host)
	if err != nil {
		t.Error(err)
		return
	}
	defer release()
	if _, err := f.Fetch(context.Background(), u); err != nil {
		t.Error(err)
	}
}

// crawl runs workers goroutines that each fetch perWorker times politely.
func crawl(t *testing.T, p *Politeness, a *arrivalServer, workers, perWorker int) {
	t.Helper()
	f := newFetcher(t, loopbackOpts())
	host := a.host(t)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < perWorker; i++ {
				politeGet(t, p, f, host, a.srv.URL)
			}
		})
	}
	wg.Wait()
}

// jitter is how much a request's arrival at the server may lag its start
// at the client (scheduling on a busy 2-core machine with -race, beside
// the other packages' ZooKeeper JVMs: 32 ms seen in CI). The limiter spaces
// request starts exactly; arrivals carry this noise. The tests' intervals
// are 100 ms or more, so a single gap must still be at least 60% of one:
// a limiter that let a burst through would show gaps near zero.
const jitter = 40 * time.Millisecond

// assertSpacing checks, at the server, that requests conform to one request
// per interval: any k consecutive gaps together span at least
// k*interval - jitter, so a single gap is at least interval - jitter and
// long runs cannot drift faster than the rate.
func assertSpacing(t *testing.T, ts []time.Time, interval time.Duration) {
	t.Helper()
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			want := time.Duration(j-i)*interval - jitter
			if got := ts[j].Sub(ts[i]); got < want {
				var gaps []time.Duration
				for k := 1; k < len(ts); k++ {
					gaps = append(gaps, ts[k].Sub(ts[k-1]).Round(time.Millisecond))
				}
				t.Errorf("requests %d..%d arrived %v apart, want >= %v (gaps: %v)", i, j, got, want, gaps)
				return
			}
		}
	}
}

func newPoliteness(t *testing.T, o PolitenessOptions) *Politeness {
	t.Helper()
	p, err := NewPoliteness(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolitenessRateSpacing(t *testing.T) {
	a := newArrivalServer(t, 0)
	p := newPoliteness(t, PolitenessOptions{RatePerSec: 10, Burst: 1})
	crawl(t, p, a, 4, 3)
	if a.count() != 12 {
		t.Fatalf("%d requests, want 12", a.count())
	}
	assertSpacing(t, a.times(0), 100*time.Millisecond)
}

func TestPolitenessInFlightCap(t *testing.T) {
	a := newArrivalServer(t, 30*time.Millisecond)
	p := newPoliteness(t, PolitenessOptions{MaxInFlight: 2})
	crawl(t, p, a, 8, 2)
	if peak := a.peak.Load(); peak != 2 {
		t.Errorf("peak concurrent requests at the server = %d, want 2", peak)
	}
}

func TestPolitenessSetLimitsLive(t *testing.T) {
	a := newArrivalServer(t, 0)
	p := newPoliteness(t, PolitenessOptions{RatePerSec: 0.5, Burst: 1}) // one request per 2 s
	f := newFetcher(t, loopbackOpts())
	host := a.host(t)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5; i++ {
			politeGet(t, p, f, host, a.srv.URL)
		}
	}()
	for a.count() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the second request now waits ~2 s
	changed := time.Now()
	if err := p.SetLimits(10, 1, 0); err != nil {
		t.Fatal(err)
	}
	<-done
	// At 0.5/s the remaining four requests would take 8 s; the waiting
	// request must have switched to the new rate.
	if took := time.Since(changed); took > 2*time.Second {
		t.Errorf("4 requests after SetLimits(10/s) took %v; the waiter kept the old rate", took)
	}
	assertSpacing(t, a.times(1), 100*time.Millisecond)

	// Stricter again: 5/s.
	if err := p.SetLimits(5, 1, 0); err != nil {
		t.Fatal(err)
	}
	n := a.count()
	for i := 0; i < 4; i++ {
		politeGet(t, p, f, host, a.srv.URL)
	}
	// The first request after the change may come early by the share of a
	// token earned at the old rate before it (x/time/rate SetLimit keeps
	// what was earned), so the spacing is checked among the new requests.
	assertSpacing(t, a.times(n), 200*time.Millisecond)
}

func TestPolitenessSetLimitsRaisesInFlightCap(t *testing.T) {
	a := newArrivalServer(t, 150*time.Millisecond)
	p := newPoliteness(t, PolitenessOptions{MaxInFlight: 1})
	f := newFetcher(t, loopbackOpts())
	host := a.host(t)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Go(func() { politeGet(t, p, f, host, a.srv.URL) })
	}
	time.Sleep(50 * time.Millisecond) // one in flight, two waiting for a slot
	if err := p.SetLimits(0, 0, 3); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if peak := a.peak.Load(); peak != 3 {
		t.Errorf("peak concurrency %d after raising the cap to 3, want 3", peak)
	}
}

func TestPolitenessCrawlDelayOnlyStricter(t *testing.T) {
	// Crawl-delay 100 ms is stricter than 100/s: it wins.
	a := newArrivalServer(t, 0)
	p := newPoliteness(t, PolitenessOptions{RatePerSec: 100, Burst: 5})
	p.SetCrawlDelay(a.host(t), "http://"+a.host(t), 100*time.Millisecond)
	crawl(t, p, a, 3, 2)
	assertSpacing(t, a.times(0), 100*time.Millisecond)

	// Crawl-delay 10 ms is looser than 10/s: the rate stays.
	b := newArrivalServer(t, 0)
	q := newPoliteness(t, PolitenessOptions{RatePerSec: 10, Burst: 1})
	q.SetCrawlDelay(b.host(t), "http://"+b.host(t), 10*time.Millisecond)
	crawl(t, q, b, 3, 2)
	assertSpacing(t, b.times(0), 100*time.Millisecond)
}

func TestPolitenessEvictsIdleHosts(t *testing.T) {
	p := newPoliteness(t, PolitenessOptions{RatePerSec: 1000, Burst: 1, IdleTTL: 50 * time.Millisecond})
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		release, err := p.Acquire(ctx, "host"+string(rune('a'+i%26))+string(rune('a'+i/26))+":80")
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	held, err := p.Acquire(ctx, "busy:80")
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Hosts(); n != 101 {
		t.Fatalf("%d hosts, want 101", n)
	}
	time.Sleep(80 * time.Millisecond)
	release, err := p.Acquire(ctx, "new:80") // triggers a sweep
	if err != nil {
		t.Fatal(err)
	}
	release()
	if n := p.Hosts(); n != 2 {
		t.Errorf("%d hosts after the idle TTL, want 2 (busy:80 holds a slot, new:80)", n)
	}
	held()
	held() // extra calls are no-ops
}

func TestPolitenessAcquireCancel(t *testing.T) {
	p := newPoliteness(t, PolitenessOptions{MaxInFlight: 1})
	held, err := p.Acquire(context.Background(), "h:80")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(ctx, "h:80"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	held()
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	release, err := p.Acquire(ctx2, "h:80")
	if err != nil {
		t.Fatalf("slot not freed after a cancelled wait: %v", err)
	}
	release()

	// Cancelled while waiting for a rate token.
	q := newPoliteness(t, PolitenessOptions{RatePerSec: 0.1, Burst: 1})
	r1, err := q.Acquire(context.Background(), "h:80")
	if err != nil {
		t.Fatal(err)
	}
	r1()
	ctx3, cancel3 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel3()
	if _, err := q.Acquire(ctx3, "h:80"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
}

func TestPolitenessInvalidLimits(t *testing.T) {
	for _, c := range []struct {
		rate         float64
		burst, infly int
	}{{-1, 1, 1}, {math.NaN(), 1, 1}, {math.Inf(1), 1, 1}, {1, -1, 1}, {1, 1, -1}} {
		if _, err := NewPoliteness(PolitenessOptions{RatePerSec: c.rate, Burst: c.burst, MaxInFlight: c.infly}); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("NewPoliteness(%v, %d, %d): err %v", c.rate, c.burst, c.infly, err)
		}
	}
	p := newPoliteness(t, PolitenessOptions{RatePerSec: 3, Burst: 2, MaxInFlight: 1})
	if err := p.SetLimits(-2, 0, 0); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("SetLimits(-2): %v", err)
	}
	if r, b, m := p.Limits(); r != 3 || b != 2 || m != 1 {
		t.Errorf("limits changed by a rejected SetLimits: %v %d %d", r, b, m)
	}
	if _, err := p.Acquire(context.Background(), ""); err == nil {
		t.Error("empty host accepted")
	}
}

// A key shared by several origins (politeness key domain or ip; http and
// https of one host) keeps the strictest Crawl-delay of its origins,
// whichever robots.txt was read last, and a lower delay of the origin that
// set the largest lowers the key's.
func TestPolitenessCrawlDelayStrictestOrigin(t *testing.T) {
	p := newPoliteness(t, PolitenessOptions{})
	delay := func() time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.hosts["example.com"].crawlDelay
	}
	p.SetCrawlDelay("example.com", "https://a.example.com:443", 10*time.Second)
	p.SetCrawlDelay("example.com", "https://b.example.com:443", time.Second)
	if d := delay(); d != 10*time.Second {
		t.Fatalf("after a 10 s and a 1 s origin: %v, want the strictest, 10s", d)
	}
	p.SetCrawlDelay("example.com", "https://b.example.com:443", 0)
	if d := delay(); d != 10*time.Second {
		t.Fatalf("after b dropped its delay: %v, want a's 10s", d)
	}
	p.SetCrawlDelay("example.com", "https://a.example.com:443", 2*time.Second)
	if d := delay(); d != 2*time.Second {
		t.Fatalf("after a lowered its delay to 2 s: %v, want 2s", d)
	}
	// Many origins: the largest delay survives the cap on remembered origins.
	p.SetCrawlDelay("example.com", "https://big.example.com:443", 30*time.Second)
	for i := range 3 * maxDelaySources {
		p.SetCrawlDelay("example.com", fmt.Sprintf("https://h%d.example.com:443", i), time.Duration(i%5)*time.Second)
	}
	if d := delay(); d != 30*time.Second {
		t.Fatalf("after %d more origins: %v, want 30s", 3*maxDelaySources, d)
	}
	p.mu.Lock()
	n := len(p.hosts["example.com"].delays)
	p.mu.Unlock()
	if n > maxDelaySources {
		t.Fatalf("%d origins remembered, cap %d", n, maxDelaySources)
	}
}

// Strict politeness (burst 1, one in flight) counts a host's interval from
// the request's arrival at the server (Politeness.Reached), not from its
// end, so a slow answer does not slow the host's crawl; without a recorded
// arrival it counts from the end, and an arrival time never makes the next
// request earlier than its token allows.
func TestPolitenessIntervalFromSend(t *testing.T) {
	const interval, latency = 200 * time.Millisecond, 120 * time.Millisecond
	for _, tc := range []struct {
		name string
		sent time.Duration // arrival after the first request was admitted; < 0: none recorded
		want time.Duration // the second request's admission after the first's
	}{
		{"reached at once", 0, interval},
		{"reached after a slow dial", 50 * time.Millisecond, 50*time.Millisecond + interval},
		{"no arrival recorded", -1, latency + interval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPoliteness(t, PolitenessOptions{RatePerSec: 5, Burst: 1, MaxInFlight: 1})
			release, err := p.Acquire(t.Context(), "h")
			if err != nil {
				t.Fatal(err)
			}
			first := time.Now()
			if tc.sent >= 0 {
				p.Reached("h", first.Add(tc.sent))
			}
			time.Sleep(latency)
			release()
			release, err = p.Acquire(t.Context(), "h")
			if err != nil {
				t.Fatal(err)
			}
			release()
			got := time.Since(first)
			if got < tc.want-5*time.Millisecond || got > tc.want+40*time.Millisecond {
				t.Errorf("second request admitted %v after the first, want about %v", got.Round(time.Millisecond), tc.want)
			}
		})
	}
	// An arrival recorded for a host with nothing in flight is ignored.
	p := newPoliteness(t, PolitenessOptions{RatePerSec: 5, Burst: 1, MaxInFlight: 1})
	p.Reached("idle", time.Now())
	if p.Hosts() != 0 {
		t.Errorf("Reached created state for a host with no request: %d hosts", p.Hosts())
	}
}
