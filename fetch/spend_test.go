package fetch

import (
	"context"
	"testing"
	"time"
)

// Spend makes a fresh host's first request wait one interval from the
// given time, and a Crawl-delay set before counts (a host handed over from
// another owner keeps its interval). Without it a fresh limiter lets the first request through at once.
func TestPolitenessSpend(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 10, Burst: 1, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(host string) time.Duration {
		start := time.Now()
		release, err := p.Acquire(context.Background(), host)
		if err != nil {
			t.Fatal(err)
		}
		release()
		return time.Since(start)
	}
	if d := wait("fresh:80"); d > 50*time.Millisecond {
		t.Errorf("fresh host waited %v, want no wait", d)
	}
	p.Spend("handed:80", time.Now())
	if d := wait("handed:80"); d < 80*time.Millisecond {
		t.Errorf("spent host waited %v, want about the 100ms interval", d)
	}
	p.SetCrawlDelay("delayed:80", "http://delayed:80", 400*time.Millisecond)
	p.Spend("delayed:80", time.Now())
	if d := wait("delayed:80"); d < 350*time.Millisecond {
		t.Errorf("spent host with Crawl-delay 400ms waited %v", d)
	}
	p.Spend("old:80", time.Now().Add(-time.Second))
	if d := wait("old:80"); d > 50*time.Millisecond {
		t.Errorf("host spent a second ago waited %v, want no wait", d)
	}
}

// Spend never loosens: a host that just had a request keeps its wait when
// spent as of an older time.
func TestPolitenessSpendNeverLoosens(t *testing.T) {
	p, err := NewPoliteness(PolitenessOptions{RatePerSec: 5, Burst: 1, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	release, err := p.Acquire(context.Background(), "h:80")
	if err != nil {
		t.Fatal(err)
	}
	release()
	p.Spend("h:80", time.Now().Add(-time.Minute))
	start := time.Now()
	release, err = p.Acquire(context.Background(), "h:80")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("second request waited %v after an old Spend, want the 200ms interval", d)
	}
}
