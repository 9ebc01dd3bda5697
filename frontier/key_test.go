package frontier

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

func TestKey(t *testing.T) {
	u := "http://example.com/"
	k := Key(u)
	full := sha256.Sum256([]byte(u))
	if want := hex.EncodeToString(full[:])[:KeyLength]; k != want {
		t.Fatalf("Key(%q) = %q, want %q", u, k, want)
	}
	if len(k) != KeyLength {
		t.Fatalf("len(Key) = %d, want %d", len(k), KeyLength)
	}
	if Key("http://example.com/a") == k {
		t.Fatal("different URLs share a key")
	}
	if b := Bucket(k); b != k[:2] {
		t.Fatalf("Bucket(%q) = %q", k, b)
	}
	if Bucket("a") != "" {
		t.Fatal("Bucket of a short key should be empty")
	}
}

func TestShard(t *testing.T) {
	// Golden values (FNV-1a 64 computed independently): the hash must never
	// change between releases, or queued items would move shards under a
	// running crawl.
	golden := map[string]int{"example.com": 6, "127.0.0.1:8080": 12, "xn--bcher-kva.de": 13}
	for h, want := range golden {
		if got := Shard(h, 16); got != want {
			t.Errorf("Shard(%q, 16) = %d, want %d", h, got, want)
		}
	}
	if got := Shard("example.com", 1); got != 0 {
		t.Fatalf("Shard with 1 shard = %d", got)
	}
	if got := Shard("example.com", 0); got != 0 {
		t.Fatalf("Shard with 0 shards = %d", got)
	}
	counts := make([]int, 8)
	for i := 0; i < 8000; i++ {
		s := Shard(fmt.Sprintf("host%d.example.com", i), 8)
		if s < 0 || s >= 8 {
			t.Fatalf("Shard out of range: %d", s)
		}
		counts[s]++
	}
	for i, c := range counts {
		if c < 500 {
			t.Errorf("shard %d got only %d of 8000 hosts: %v", i, c, counts)
		}
	}
}
