package testenv

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The latency draws follow the lognormal they claim: median and p99 of
// 20,000 draws within a few percent of the configured quantiles.
func TestWebLatencyDistribution(t *testing.T) {
	l := WebLatency{Median: 150 * time.Millisecond, P99: time.Second, Max: 10 * time.Second}
	w := &Web{cfg: WebConfig{Seed: 7, Latency: l}}
	var ds []time.Duration
	for h := range 200 {
		for n := range 100 {
			ds = append(ds, w.latencyOf(h, "/p/"+strconv.Itoa(n)))
		}
	}
	if again := w.latencyOf(3, "/p/5"); again != w.latencyOf(3, "/p/5") {
		t.Fatalf("latency of one request is not fixed")
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[int(p*float64(len(ds)))] }
	within := func(name string, got, want time.Duration, tol float64) {
		t.Helper()
		if r := float64(got) / float64(want); r < 1-tol || r > 1+tol {
			t.Errorf("%s = %v, want %v ± %.0f%%", name, got, want, tol*100)
		}
	}
	within("median", q(0.5), l.Median, 0.05)
	within("p99", q(0.99), l.P99, 0.15)
	within("Quantile(0.99)", l.Quantile(0.99), l.P99, 0.001)
	within("Quantile(0.5)", l.Quantile(0.5), l.Median, 0.001)
	if d := (&Web{cfg: WebConfig{Latency: WebLatency{Median: time.Second, P99: 100 * time.Second, Max: 2 * time.Second}}}).latencyOf(0, "/"); d > 2*time.Second {
		t.Errorf("draw %v above Max 2s", d)
	}
}

// Per host, the bound is the serialized (one in flight) or spaced
// (unlimited in flight) schedule of its requests, fastest last.
func TestWebHostBound(t *testing.T) {
	ms := time.Millisecond
	ls := []time.Duration{100 * ms, 1500 * ms, 200 * ms}
	// One in flight: 1.5 s [0,1.5], 0.2 s [1.5,1.7], 0.1 s [2.5,2.6].
	if got := webHostBound(slices.Clone(ls), time.Second, 1); got != 2600*ms {
		t.Errorf("one in flight: %v, want 2.6s", got)
	}
	// Unlimited: starts 0, 1, 2 s, longest first: max(1.5, 1.2, 2.1).
	if got := webHostBound(slices.Clone(ls), time.Second, 8); got != 2100*ms {
		t.Errorf("many in flight: %v, want 2.1s", got)
	}
	if got := webHostBound([]time.Duration{300 * ms}, time.Second, 1); got != 300*ms {
		t.Errorf("one request: %v, want its latency 0.3s", got)
	}
}

// A started wide web: page counts per host, a Crawl-delay host, and the
// bound over the ground truth counted by hand.
func TestWebPolitenessBound(t *testing.T) {
	w := NewWeb(t, WebConfig{Seed: 1, Hosts: 3, HostPages: []int{4, 2, 1}, HomeLinksAll: true,
		HostCrawlDelay: map[int]time.Duration{1: 2 * time.Second}})
	truth, err := w.GroundTruth(WebCrawlOptions{MaxDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"/p/3", "/p/1"} {
		if e := truth["http://"+w.Hosts()[0]+u]; e.Status != 200 || e.Depth != 1 {
			t.Errorf("host 0 %s: %+v, want 200 at depth 1 (home links all)", u, e)
		}
	}
	if _, ok := truth["http://"+w.Hosts()[2]+"/p/1"]; ok {
		t.Errorf("host 2 has 1 page but its /p/1 is in the truth")
	}
	// Requests: robots.txt, "/", /sitemap.xml (404) and the pages.
	// Host 0: 7 at 1 s -> 6 s; host 1: 5 at 2 s (Crawl-delay) -> 8 s;
	// host 2: 4 at 1 s -> 3 s. No latency.
	b, err := w.PolitenessBound(truth, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{6 * time.Second, 8 * time.Second, 3 * time.Second}
	if b.Bound != 8*time.Second || b.Host != 1 || b.Requests != 16 || !slices.Equal(b.HostBound, want) {
		t.Errorf("bound %+v, want 8s set by host 1 over 16 requests, hosts %v", b, want)
	}
	// At 4/s the Crawl-delay host still sets 8 s; host 0 needs 1.5 s.
	if b, _ := w.PolitenessBound(truth, 4, 1); b.Bound != 8*time.Second || b.HostBound[0] != 1500*time.Millisecond {
		t.Errorf("at 4/s: %+v, want 8s and host 0 1.5s", b)
	}
	for _, bad := range []struct {
		rate float64
		fly  int
	}{{-1, 1}, {1, 0}} {
		if _, err := w.PolitenessBound(truth, bad.rate, bad.fly); err == nil {
			t.Errorf("rate %v, in flight %d: no error", bad.rate, bad.fly)
		}
	}
	if _, err := w.PolitenessBound(map[string]WebExpect{"http://example.com/": {Status: 200}}, 1, 1); err == nil {
		t.Errorf("foreign truth URL: no error")
	}
}

// A wide web's special hosts behave as named: slow answers late, dead
// refuses, reset resets, timeout never answers, Crawl-delay is in
// robots.txt, and faulty hosts are Status 0 in the truth.
func TestWebWideHosts(t *testing.T) {
	ww := WebWide{Seed: 3, Hosts: 10, Pages: 4, PagesSpread: 0.5,
		Latency:   WebLatency{Median: 5 * time.Millisecond, P99: 20 * time.Millisecond},
		SlowHosts: 1, SlowDelay: 300 * time.Millisecond, DeadHosts: 1, ResetHosts: 1, TimeoutHosts: 1,
		CrawlDelayHosts: 1, CrawlDelay: 1500 * time.Millisecond}
	cfg, err := ww.Config()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (WebWide{Hosts: 2, Pages: 1, DeadHosts: 3}).Config(); !errors.Is(err, ErrWebConfig) {
		t.Errorf("3 dead of 2 hosts: err %v, want ErrWebConfig", err)
	}
	w := NewWeb(t, cfg)
	hosts := w.Hosts()
	pick := func(match func(h int) bool) int {
		for h := range hosts {
			if match(h) {
				return h
			}
		}
		t.Fatalf("no such host in %+v", cfg)
		return -1
	}
	fault := func(f WebFault) int { return pick(func(h int) bool { return cfg.HostFault[h] == f }) }
	slow := pick(func(h int) bool { return cfg.HostDelay[h] > 0 })
	delayed := pick(func(h int) bool { return cfg.HostCrawlDelay[h] > 0 })
	for h, n := range cfg.HostPages {
		if n < 2 || n > 6 {
			t.Errorf("host %d has %d pages, want 2..6", h, n)
		}
	}
	client := &http.Client{Timeout: 500 * time.Millisecond}
	get := func(h int, path string) (string, time.Duration, error) {
		t0 := time.Now()
		resp, err := client.Get("http://" + hosts[h] + path)
		if err != nil {
			return "", time.Since(t0), err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), time.Since(t0), err
	}
	if _, took, err := get(slow, "/p/0"); err != nil || took < 300*time.Millisecond {
		t.Errorf("slow host: %v after %v, want an answer after 300ms", err, took)
	}
	if body, _, err := get(delayed, "/robots.txt"); err != nil || !strings.Contains(body, "Crawl-delay: 1.5\n") {
		t.Errorf("Crawl-delay host robots.txt: %q, %v", body, err)
	}
	if body, _, err := get(pick(func(h int) bool { return cfg.HostCrawlDelay[h] == 0 && cfg.HostFault[h] == 0 }), "/robots.txt"); err != nil || strings.Contains(body, "Crawl-delay") {
		t.Errorf("plain host robots.txt: %q, %v", body, err)
	}
	if _, _, err := get(fault(WebFaultDead), "/"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dead host: %v, want connection refused", err)
	}
	if _, _, err := get(fault(WebFaultReset), "/"); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("reset host: %v, want connection reset", err)
	}
	if _, took, err := get(fault(WebFaultTimeout), "/"); !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout host: %v after %v, want the client's timeout", err, took)
	}
	truth, err := w.GroundTruth(WebCrawlOptions{MaxDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []WebFault{WebFaultDead, WebFaultReset, WebFaultTimeout} {
		h := fault(f)
		if e, ok := truth["http://"+hosts[h]+"/"]; !ok || e.Status != 0 {
			t.Errorf("%v host seed in truth: %+v %v, want Status 0", f, e, ok)
		}
		if _, ok := truth["http://"+hosts[h]+"/p/0"]; ok {
			t.Errorf("%v host /p/0 in truth, want nothing past its seed", f)
		}
	}
	b, err := w.PolitenessBound(truth, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b.HostBound[fault(WebFaultDead)] != 0 || b.HostBound[delayed] < time.Duration(cfg.HostPages[delayed]+2)*1500*time.Millisecond {
		t.Errorf("bound %+v: want 0 for the dead host, >= (pages+2) x 1.5s for the Crawl-delay host", b)
	}
}
