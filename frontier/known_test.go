package frontier_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// TestLoadKnownHeapPerKey enqueues 2^18 URLs, loads them in a second
// Frontier with LoadKnown (a seeder's view of the crawl), and checks that
// they take at most 10 bytes of heap per key there (runtime.ReadMemStats
// after a GC, with that Frontier and once it is dropped), and that Enqueue
// then counts them as duplicates and a new URL as new.
func TestLoadKnownHeapPerKey(t *testing.T) {
	const n = 1 << 18
	zk := testenv.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := coord.Connect(ctx, zk.Addr(), coord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	front, _, err := frontier.Create(ctx, client, "/zkcrawl/known", frontier.DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]frontier.Item, n)
	for i := range items {
		items[i] = frontier.Item{URL: fmt.Sprintf("http://h%04d.example/p/%d", i%1000, i)}
	}
	for i := 0; i < n; i += 16384 {
		if r, err := front.Enqueue(ctx, items[i:i+16384]); err != nil || r.Posted != 16384 {
			t.Fatalf("enqueue from %d: %+v, %v", i, r, err)
		}
	}

	seeder, err := frontier.Open(ctx, client, "/zkcrawl/known")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := seeder.LoadKnown(ctx); err != nil || got != n {
		t.Fatalf("LoadKnown = %d, %v; want %d", got, err, n)
	}
	r, err := seeder.Enqueue(ctx, []frontier.Item{items[0], items[n-1], {URL: "http://new.example/"}})
	if err != nil || r.Posted != 1 || r.Duplicates != 2 {
		t.Fatalf("enqueue after LoadKnown: %+v, %v; want 1 posted, 2 duplicates", r, err)
	}
	// What the seeder keeps: the live heap with it, less the live heap once
	// it is dropped (everything else, front included, kept alive across).
	// Two GCs each: the second empties sync.Pools (Enqueue's flate writers).
	var with, without runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(seeder)
	seeder = nil
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&without)
	runtime.KeepAlive(front)
	runtime.KeepAlive(items)
	per := float64(int64(with.HeapAlloc)-int64(without.HeapAlloc)) / n
	t.Logf("LoadKnown: %.2f bytes of heap per key (%d keys)", per, n)
	if per > 10 {
		t.Fatalf("LoadKnown keeps %.1f bytes of heap per key, want <= 10", per)
	}
}
