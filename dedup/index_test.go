package dedup_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zkcrawl/zkcrawl/dedup"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

func open(t *testing.T, url string, ttl time.Duration) *dedup.Index {
	t.Helper()
	ix, err := dedup.Open(url, dedup.Options{PendingTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

// A digest goes first -> pending (for everyone else) -> confirmed
// (revisit, naming the response); a confirmed entry comes back exactly.
func TestReserveConfirm(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	ix := open(t, r.URL(0), 0)
	ctx := t.Context()
	if err := ix.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	d := storage.Digest([]byte("the asset"))
	date := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	res, err := ix.Reserve(ctx, d, "http://a.test/x.js", date)
	if err != nil || res.Verdict != dedup.First {
		t.Fatalf("first reserve: %+v, %v", res, err)
	}
	res, err = ix.Reserve(ctx, d, "http://b.test/x.js", date.Add(time.Second))
	if err != nil || res.Verdict != dedup.Pending {
		t.Fatalf("second reserve while the first writes: %+v, %v", res, err)
	}
	want := dedup.Entry{TargetURI: "http://a.test/x.js", Date: date.Truncate(time.Microsecond), RecordID: "<urn:uuid:0b8e2a54-5f3c-4c1e-9c35-2a4f7d0f9e11>"}
	if err := ix.Confirm(ctx, d, want); err != nil {
		t.Fatal(err)
	}
	res, err = ix.Reserve(ctx, d, "http://c.test/x.js", date.Add(2*time.Second))
	if err != nil || res.Verdict != dedup.Revisit || res.Entry != want {
		t.Fatalf("after confirm: %+v, %v; want revisit of %+v", res, err, want)
	}
	// Another payload is independent.
	res, err = ix.Reserve(ctx, storage.Digest([]byte("other")), "http://c.test/y.js", date)
	if err != nil || res.Verdict != dedup.First {
		t.Fatalf("other digest: %+v, %v", res, err)
	}
}

// A pending entry that is never confirmed (the writer crashed) expires:
// the next writer is first again, and no revisit ever named it.
func TestPendingExpires(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	ix := open(t, r.URL(0), 200*time.Millisecond)
	ctx := t.Context()
	d := storage.Digest([]byte("crashed before confirm"))
	if res, err := ix.Reserve(ctx, d, "http://a.test/", time.Now()); err != nil || res.Verdict != dedup.First {
		t.Fatalf("%+v, %v", res, err)
	}
	if res, err := ix.Reserve(ctx, d, "http://b.test/", time.Now()); err != nil || res.Verdict != dedup.Pending {
		t.Fatalf("%+v, %v", res, err)
	}
	time.Sleep(300 * time.Millisecond)
	if res, err := ix.Reserve(ctx, d, "http://b.test/", time.Now()); err != nil || res.Verdict != dedup.First {
		t.Fatalf("after the TTL: %+v, %v; want first", res, err)
	}
}

// Of many concurrent writers of one payload exactly one is first.
func TestReserveOneFirst(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	ix := open(t, r.URL(0), 0)
	d := storage.Digest([]byte("raced"))
	var mu sync.Mutex
	count := map[dedup.Verdict]int{}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			res, err := ix.Reserve(t.Context(), d, "http://h"+strconv.Itoa(i)+".test/", time.Now())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			count[res.Verdict]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if count[dedup.First] != 1 || count[dedup.Pending] != 31 {
		t.Fatalf("verdicts %v: want 1 first, 31 pending", count)
	}
}

// Add enters confirmed entries without replacing any present.
func TestAdd(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	ix := open(t, r.URL(0), 0)
	ctx := t.Context()
	date := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	d1, d2 := storage.Digest([]byte("one")), storage.Digest([]byte("two"))
	mine := dedup.Entry{TargetURI: "http://mine.test/", Date: date, RecordID: "<urn:uuid:0b8e2a54-5f3c-4c1e-9c35-2a4f7d0f9e11>"}
	if err := ix.Confirm(ctx, d1, mine); err != nil {
		t.Fatal(err)
	}
	bare := strings.TrimPrefix(d2, "sha1:") // CDXJ indexes may leave the prefix out
	n, err := ix.Add(ctx, []dedup.Import{
		{Digest: d1, Entry: dedup.Entry{TargetURI: "http://theirs.test/", Date: date}},
		{Digest: bare, Entry: dedup.Entry{TargetURI: "http://theirs.test/two", Date: date, RecordID: "<urn:x-other:7>"}},
	})
	if err != nil || n != 1 {
		t.Fatalf("Add: %d, %v; want 1 added", n, err)
	}
	if res, _ := ix.Reserve(ctx, d1, "http://x.test/", time.Now()); res.Entry != mine {
		t.Errorf("d1: %+v; want the entry present before", res)
	}
	want := dedup.Entry{TargetURI: "http://theirs.test/two", Date: date, RecordID: "<urn:x-other:7>"}
	if res, _ := ix.Reserve(ctx, d2, "http://x.test/", time.Now()); res.Verdict != dedup.Revisit || res.Entry != want {
		t.Errorf("d2: %+v; want revisit of %+v", res, want)
	}
}

// Bad input is named; an index that does not answer fails within the
// caller's deadline.
func TestBadInputAndDownServer(t *testing.T) {
	for _, d := range []string{"", "sha1:XYZ", "sha256:" + strings.Repeat("A", 52), "md5:" + strings.Repeat("A", 32), strings.Repeat("1", 32)} {
		if _, err := dedup.Key(d); !errors.Is(err, dedup.ErrBadDigest) {
			t.Errorf("Key(%q) = %v; want ErrBadDigest", d, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:6379", "redis://127.0.0.1:6379/x", "::"} {
		if err := dedup.CheckURL(u); err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("CheckURL(%q) = %v; want an error naming it", u, err)
		}
	}
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	url := r.URL(0)
	r.Stop()
	ix := open(t, url, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := ix.Reserve(ctx, storage.Digest(nil), "http://a.test/", time.Now()); err == nil {
		t.Fatal("reserve against a stopped server succeeded")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("reserve against a stopped server took %v", took)
	}
	if err := ix.Confirm(t.Context(), storage.Digest(nil), dedup.Entry{TargetURI: "http://a.test/"}); !errors.Is(err, dedup.ErrBadEntry) {
		t.Fatalf("confirm without a date: %v; want ErrBadEntry", err)
	}
}

// TestBytesPerEntry measures what one confirmed entry costs the redis
// server: 100,000 entries of a typical asset URL (about 60 bytes) and a
// record ID, by INFO memory's used_memory before and after, and by MEMORY
// USAGE of one key. docs/design.md "Digest index" quotes the figures.
func TestBytesPerEntry(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	ix := open(t, r.URL(0), 0)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rdb.Close()
	ctx := t.Context()
	used := func() int64 {
		s, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(s, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("no used_memory in INFO memory")
		return 0
	}
	const n = 100_000
	before := used()
	date := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for off := 0; off < n; off += 5000 {
		batch := make([]dedup.Import, 0, 5000)
		for i := off; i < off+5000; i++ {
			batch = append(batch, dedup.Import{
				Digest: storage.Digest([]byte(strconv.Itoa(i))),
				Entry: dedup.Entry{TargetURI: fmt.Sprintf("https://www.example-host-%05d.org/static/js/app.min.js", i),
					Date: date.Add(time.Duration(i) * time.Second), RecordID: "<urn:uuid:0b8e2a54-5f3c-4c1e-9c35-2a4f7d0f9e11>"}})
		}
		if added, err := ix.Add(ctx, batch); err != nil || added != len(batch) {
			t.Fatalf("add: %d, %v", added, err)
		}
	}
	after := used()
	key, _ := dedup.Key(storage.Digest([]byte("0")))
	one, err := rdb.MemoryUsage(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	val, _ := rdb.Get(ctx, key).Result()
	per := float64(after-before) / n
	t.Logf("%d entries: used_memory +%d bytes = %.1f B/entry; MEMORY USAGE of one key %d B (key %d B, value %d B, URI 53 B)",
		n, after-before, per, one, len(key), len(val))
	if per > 200 {
		t.Errorf("%.1f bytes per entry: want at most 200", per)
	}
}

// A full index (maxmemory, policy noeviction) refuses new entries with an
// error, so the caller writes full responses; the entries it holds still
// answer Revisit.
func TestFullIndex(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{MaxMemory: "2mb"})
	ix := open(t, r.URL(0), 0)
	ctx := t.Context()
	date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	kept := storage.Digest([]byte("kept"))
	if err := ix.Confirm(ctx, kept, dedup.Entry{TargetURI: "http://kept.test/", Date: date}); err != nil {
		t.Fatal(err)
	}
	var full error
	for i := 0; full == nil && i < 100_000; i++ {
		_, full = ix.Reserve(ctx, storage.Digest([]byte(strconv.Itoa(i))), "http://fill.test/"+strconv.Itoa(i), date)
	}
	if full == nil || !strings.Contains(full.Error(), "OOM") {
		t.Fatalf("filling a 2 MB index: %v; want an OOM error", full)
	}
	if _, err := ix.Reserve(ctx, storage.Digest([]byte("new")), "http://new.test/", date); err == nil {
		t.Error("a full index took a new entry")
	}
	if res, err := ix.Reserve(ctx, kept, "http://other.test/", date); err != nil || res.Verdict != dedup.Revisit {
		t.Errorf("a full index: %+v, %v; want the entry it holds to answer revisit", res, err)
	}
}

// An index that stops answering (a partition: the connection stays open,
// no bytes pass) fails each call at its context's deadline, and answers
// again once the partition heals.
func TestSlowIndexFailsAtTheDeadline(t *testing.T) {
	r := testenv.RedisServer(t, testenv.RedisConfig{})
	p := testenv.ProxyFor(t, r.Addr())
	ix := open(t, "redis://"+p.Addr()+"/0", 0)
	d := storage.Digest([]byte("partitioned"))
	if _, err := ix.Reserve(t.Context(), d, "http://a.test/", time.Now()); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := ix.Reserve(ctx, d, "http://b.test/", time.Now()); err == nil {
		t.Fatal("reserve through a blackholed connection succeeded")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("reserve through a blackholed connection took %v; want about its 300ms deadline", took)
	}
	p.Heal()
	var err error
	for range 50 { // the client drops the connection that timed out and dials again
		var res dedup.Result
		if res, err = ix.Reserve(t.Context(), d, "http://b.test/", time.Now()); err == nil {
			if res.Verdict != dedup.Pending {
				t.Fatalf("after healing: %+v; want pending", res)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("after healing: %v", err)
}
