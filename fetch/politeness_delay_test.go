package fetch

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// delayServer answers every request after sleep and records when each
// request arrived.
func delayServer(t *testing.T, sleep time.Duration) (*httptest.Server, func() []time.Time) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		time.Sleep(sleep)
		w.Write([]byte("slow"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), arrivals...)
	}
}

// fetchPolitely fetches url n times through p, one after the other, as the
// worker does (release right after the fetch).
func fetchPolitely(t *testing.T, p *Politeness, f *Fetcher, url string, n int) {
	for range n {
		release, err := p.Acquire(context.Background(), "h:80")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		release()
	}
}

// With delay_factor 2 a server that takes 80 ms per answer sees the next
// request at least 80 + 2 x 80 ms after the previous one arrived (measured
// at the server); max_delay caps the added wait; factor 0 adds nothing.
func TestPolitenessDelayFactorMeasuredAtServer(t *testing.T) {
	const sleep = 80 * time.Millisecond
	f := newFetcher(t, loopbackOpts())
	cases := []struct {
		factor   float64
		max      time.Duration
		min, cap time.Duration // bounds of the gap between arrivals
	}{
		{2, 10 * time.Second, sleep + 2*sleep, 10 * time.Second},
		{2, 30 * time.Millisecond, sleep + 30*time.Millisecond, sleep + 2*sleep},
		{0, 10 * time.Second, sleep, sleep + 2*sleep},
	}
	for _, c := range cases {
		srv, arrivals := delayServer(t, sleep)
		p, err := NewPoliteness(PolitenessOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetDelayFactor(c.factor, c.max); err != nil {
			t.Fatal(err)
		}
		fetchPolitely(t, p, f, srv.URL, 3)
		got := arrivals()
		for i := 1; i < len(got); i++ {
			gap := got[i].Sub(got[i-1])
			if gap < c.min || gap > c.cap {
				t.Errorf("factor %v max %v: gap %d = %v, want %v..%v", c.factor, c.max, i, gap, c.min, c.cap)
			}
		}
	}
}

// A waiter recomputes at once when the factor changes (live config).
func TestPolitenessDelayFactorLive(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetDelayFactor(100, time.Hour); err != nil {
		t.Fatal(err)
	}
	release, _ := p.Acquire(context.Background(), "h:80")
	time.Sleep(20 * time.Millisecond) // a 20 ms "fetch": the next waits 2 s
	release()
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		r, err := p.Acquire(context.Background(), "h:80")
		if err == nil {
			r()
		}
		done <- time.Since(start)
	}()
	time.Sleep(50 * time.Millisecond)
	if err := p.SetDelayFactor(0, time.Hour); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if d > time.Second {
			t.Errorf("waited %v after the factor was turned off", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not wake up when the factor changed")
	}
	for _, bad := range []struct {
		f float64
		m time.Duration
	}{{-1, 0}, {math.NaN(), 0}, {math.Inf(1), 0}, {1, -time.Second}} {
		if err := p.SetDelayFactor(bad.f, bad.m); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("SetDelayFactor(%v, %v) = %v, want ErrInvalidLimit", bad.f, bad.m, err)
		}
	}
}

// NextTurn is a host's wait for its rate's next token, its hold or its
// adaptive delay, whichever is longest, and 0 for a host never seen.
func TestNextTurn(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 0.5, Burst: 1, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.NextTurn("a.example:80"); d != 0 {
		t.Fatalf("unknown host: %v", d)
	}
	release, err := p.Acquire(context.Background(), "a.example:80")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if d := p.NextTurn("a.example:80"); d < 1900*time.Millisecond || d > 2*time.Second {
		t.Fatalf("after a request at 0.5/s: %v, want about 2s", d)
	}
	if err := p.SetMaxHold(time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Answered("a.example:80", 503, 30*time.Second)
	if d := p.NextTurn("a.example:80"); d < 29*time.Second || d > 30*time.Second {
		t.Fatalf("held by a Retry-After of 30s: %v", d)
	}
}
