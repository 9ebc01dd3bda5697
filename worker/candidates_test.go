package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// The claim filter keeps what it decoded of an item it turned down in the
// item's note and judges its next looks from it, admits it with a full
// decode when its key frees, and never notes data that fails to decode.
func TestClaimFilterRemembersTurnedDown(t *testing.T) {
	cfg := testConfig()
	cfg.PerHostRatePerS = 0.01 // one claim slot per key: no prefetched claim at 100 s (claimSlotsPerKey)
	cfg.PerHostMaxInFlight = 1
	w := filterWorker(t, "memo", cfg)
	rec := func(u string) []byte {
		t.Helper()
		b, err := frontier.Item{URL: u}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := rec("http://a.example/1"), rec("http://a.example/2")
	noteA, noteB := new(atomic.Value), new(atomic.Value)
	var got taken
	filter := w.reserveFor(0, &got)
	releaseA, ok := filter("u-1", a, noteA)
	if !ok || got.item.URL != "http://a.example/1" || got.key == "" {
		t.Fatalf("first item: ok %v, taken %+v", ok, got)
	}
	if noteA.Load() != nil {
		t.Fatal("an admitted item got a note: its claim drops the cached data")
	}
	if _, ok := filter("u-2", b, noteB); ok {
		t.Fatal("second item of the key admitted while the first holds its only claim slot")
	}
	if c, _ := noteB.Load().(candidate); c.key != w.layout.Key("http://a.example/2") {
		t.Fatalf("a turned-down item's note holds %+v", noteB.Load())
	}
	// The next look judges from the note: a note naming another key is
	// believed (only coord's note of this very data is ever passed).
	noteB.Store(candidate{key: "other.example"})
	if _, ok := filter("u-2", b, noteB); !ok || got.key != "other.example" {
		t.Fatalf("the note was not used: ok %v, taken %+v", ok, got)
	}
	w.freeKeySlot("other.example")
	w.releaseClaimSlot()
	noteB.Store(candidate{key: w.layout.Key("http://a.example/2")})
	if _, ok := filter("u-2", b, noteB); ok {
		t.Fatal("second item admitted from its note while the key is busy")
	}
	releaseA()
	got = taken{}
	if _, ok := filter("u-2", b, noteB); !ok || got.item.URL != "http://a.example/2" || got.key != w.layout.Key("http://a.example/2") {
		t.Fatalf("second item after the key freed: ok %v, taken %+v", ok, got)
	}
	// An item whose retry time has not come is turned down from its note.
	future := candidate{key: "f.example", notBefore: time.Now().Add(time.Hour).UnixNano()}
	noteF := new(atomic.Value)
	noteF.Store(future)
	if _, ok := filter("u-5", rec("http://f.example/1"), noteF); ok {
		t.Fatal("admitted before its retry time")
	}
	// Bad data is never noted: it is admitted to be failed with its reason.
	got = taken{}
	noteBad := new(atomic.Value)
	if _, ok := filter("u-4", []byte("{"), noteBad); !ok || got.err == nil || noteBad.Load() != nil {
		t.Fatalf("bad item: ok %v, taken %+v, note %v", ok, got, noteBad.Load())
	}
}

// An item whose key's next turn is more than claimLead away is turned
// down, with its name kept under the key for a timer that nudges it a
// lead before the turn, and the lead's start in its note, from which the
// next look turns it down again.
func TestClaimFilterWaitsForTheLead(t *testing.T) {
	cfg := testConfig()
	cfg.PerHostRatePerS = 0.25 // a turn every 4 s
	cfg.PerHostMaxInFlight = 1
	w := filterWorker(t, "lead", cfg)
	if err := w.polite.SetLimits(cfg.PerHostRatePerS, 1, cfg.PerHostMaxInFlight); err != nil {
		t.Fatal(err)
	}
	const u = "http://a.example/1"
	key := w.layout.Key(u)
	release, err := w.polite.Acquire(context.Background(), key) // the key's request now: its next turn in 4 s
	if err != nil {
		t.Fatal(err)
	}
	release()
	data, err := frontier.Item{URL: u}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var got taken
	filter := w.reserveFor(2, &got)
	note := new(atomic.Value)
	if _, ok := filter("u-1", data, note); ok {
		t.Fatal("admitted 4 s before its key's turn (claimLead 1 s)")
	}
	cand, _ := note.Load().(candidate)
	if lead := time.Until(time.Unix(0, cand.leadFrom)); cand.key != key || lead < 2*time.Second || lead > 3*time.Second {
		t.Fatalf("note %+v: lead starts in %v, want about 3 s", cand, lead)
	}
	w.slots.mu.Lock()
	waiting, timer := w.slots.waiting[key], w.slots.timers[key]
	w.slots.mu.Unlock()
	if len(waiting) != 1 || waiting[0].shard != 2 || len(waiting[0].names) != 1 || waiting[0].names[0] != "u-1" || timer == nil {
		t.Fatalf("waiting %+v, timer %v: want shard 2 waiting with u-1 under a timer", waiting, timer)
	}
	if _, ok := filter("u-1", data, note); ok {
		t.Fatal("admitted from its note before the lead")
	}
}

// filterWorker returns a worker of a new crawl named name under cfg, not
// started, with cfg in force and a claim cap of 100: enough to call its
// claim filter (reserveFor) directly. Its ZooKeeper client closes with t.
func filterWorker(t *testing.T, name string, cfg config.Config) *Worker {
	t.Helper()
	zks := testenv.ZooKeeper(t)
	c := newCrawl(t, zks.Addr(), name, cfg, frontier.Layout{Shards: 4, Spread: 1}, nil)
	w, err := New(context.Background(), Options{Servers: c.zk, Crawl: c.name, OutDir: t.TempDir(), ID: "w1",
		SessionTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.client.Close() })
	w.live.Store(&liveConfig{cfg: cfg, claimCap: 100})
	return w
}
