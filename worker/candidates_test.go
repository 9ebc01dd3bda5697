package worker

import (
	"context"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// The claim filter turns an item down from its memo entry once it has
// decoded it, admits it with a full decode when its key frees, and decodes
// afresh an item whose data changed or that fails to decode.
func TestClaimFilterRemembersTurnedDown(t *testing.T) {
	cfg := testConfig()
	cfg.PerHostRatePerS = 0.01 // one claim slot per key: no prefetched claim at 100 s (claimSlotsPerKey)
	cfg.PerHostMaxInFlight = 1
	zks := testenv.ZooKeeper(t)
	c := newCrawl(t, zks.Addr(), "memo", cfg, frontier.Layout{Shards: 4, Spread: 1}, nil)
	w, err := New(context.Background(), Options{Servers: c.zk, Crawl: c.name, OutDir: t.TempDir(), ID: "w1",
		SessionTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.client.Close()
	w.live.Store(&liveConfig{cfg: cfg, claimCap: 100})
	rec := func(u string) []byte {
		t.Helper()
		b, err := frontier.Item{URL: u}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := rec("http://a.example/1"), rec("http://a.example/2")
	var got taken
	filter := w.reserveFor(0, &got)
	releaseA, ok := filter("u-1", a)
	if !ok || got.item.URL != "http://a.example/1" || got.key == "" {
		t.Fatalf("first item: ok %v, taken %+v", ok, got)
	}
	if _, ok := filter("u-2", b); ok {
		t.Fatal("second item of the key admitted while the first holds its only claim slot")
	}
	if _, known := w.cands.get(0, "u-2", w.cands.sum(b)); !known {
		t.Fatal("a turned-down item has no memo entry")
	}
	if _, known := w.cands.get(0, "u-1", w.cands.sum(a)); known {
		t.Fatal("an admitted item kept its memo entry")
	}
	if _, ok := filter("u-2", b); ok {
		t.Fatal("second item admitted from its memo entry while the key is busy")
	}
	releaseA()
	got = taken{}
	if _, ok := filter("u-2", b); !ok || got.item.URL != "http://a.example/2" || got.key != w.layout.Key("http://a.example/2") {
		t.Fatalf("second item after the key freed: ok %v, taken %+v", ok, got)
	}
	// Data that changed under the same name (a retried item) is decoded again.
	cc := rec("http://c.example/1")
	w.cands.put(1, "u-9", candidate{sum: w.cands.sum(b), key: "x"})
	if _, known := w.cands.get(0, "u-9", w.cands.sum(b)); known {
		t.Fatal("shard 0 sees shard 1's entry: names are unique within a shard only")
	}
	got = taken{}
	filter1 := w.reserveFor(1, &got)
	if _, ok := filter1("u-9", cc); !ok || got.key != w.layout.Key("http://c.example/1") {
		t.Fatalf("changed data judged by the stale entry: ok %v, taken %+v", ok, got)
	}
	// An entry whose key is not the data's (a hash collision) is caught at admission.
	d := rec("http://d.example/1")
	w.cands.put(2, "u-3", candidate{sum: w.cands.sum(d), key: "wrong.example"})
	filter2 := w.reserveFor(2, &got)
	if _, ok := filter2("u-3", d); ok {
		t.Fatal("admitted under a key that is not the item's")
	}
	if _, ok := filter2("u-3", d); !ok || got.key != w.layout.Key("http://d.example/1") {
		t.Fatalf("after a mismatch the item is not judged afresh: ok %v, taken %+v", ok, got)
	}
	// Bad data is never remembered: it is admitted to be failed with its reason.
	got = taken{}
	if _, ok := filter2("u-4", []byte("{")); !ok || got.err == nil {
		t.Fatalf("bad item: ok %v, taken %+v", ok, got)
	}
}
