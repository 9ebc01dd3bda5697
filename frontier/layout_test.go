package frontier

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestLayoutKeepsHostsInOneGroupAndSpreadsBigHosts(t *testing.T) {
	l := Layout{Shards: 64, Spread: 8}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	group := -1
	for i := range 2000 {
		u := "http://big.example/page/" + strconv.Itoa(i)
		s := l.Shard(u)
		if g := s / l.Spread; group >= 0 && g != group {
			t.Fatalf("%s in group %d, earlier URLs of the host in group %d", u, g, group)
		} else {
			group = g
		}
		seen[s] = true
	}
	if len(seen) != l.Spread {
		t.Fatalf("one host's 2,000 URLs used %d shards, want all %d of its group", len(seen), l.Spread)
	}
	for _, bad := range []Layout{{Shards: 10, Spread: 3}, {Shards: 8, Spread: 0}, {Shards: 4, Spread: 8}, {Shards: 128, Spread: 128}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	back, err := DecodeLayout(l.Encode(), 64)
	if err != nil || back != l.withDefaults() {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	// A crawl of layout 1 (empty root data, or no "layout" key) is refused
	// with a message naming the layouts, never misread.
	for _, old := range [][]byte{nil, []byte(`{"shards":16,"host_spread":1}`)} {
		if _, err := DecodeLayout(old, 16); !errors.Is(err, ErrOldLayout) || !strings.Contains(err.Error(), "layout 1") {
			t.Fatalf("layout 1 root data %q: %v", old, err)
		}
	}
	if _, err := DecodeLayout(l.Encode(), 32); err == nil {
		t.Fatal("shard count mismatch accepted")
	}
}
