package frontier

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
)

// Under the default key (unset, or "host" written out) every URL maps to the
// group and shard it had before politeness keys existed: FNV-1a of Host
// modulo the group count, as in every crawl created so far.
func TestHostKeyKeepsEveryGroup(t *testing.T) {
	urls := []string{
		"http://example.com/", "https://example.com/a", "http://example.com:8080/x",
		"http://a.example.co.uk/", "http://b.example.co.uk/p?q=1", "http://127.0.0.1:9/",
		"http://[::1]:8080/", "http://localhost/", "https://xn--bcher-kva.example/",
	}
	for i := range 500 {
		urls = append(urls, fmt.Sprintf("http://h%d.sub%d.example.org/p/%d", i, i%7, i))
	}
	old := func(u string, groups int) int { // the formula of zkcrawl before politeness keys
		h := fnv.New64a()
		h.Write([]byte(Host(u)))
		return int(h.Sum64() % uint64(groups))
	}
	for _, l := range []Layout{{Shards: 64, Spread: 1}, {Shards: 16, Spread: 2, PolitenessKey: KeyHost}, DefaultLayout} {
		for _, u := range urls {
			if g, want := l.Group(u), old(u, l.Groups()); g != want {
				t.Errorf("layout %+v: Group(%s) = %d, want %d as before", l, u, g, want)
			}
			if s := l.Shard(u); s/l.Spread != old(u, l.Groups()) {
				t.Errorf("layout %+v: Shard(%s) = %d, not in group %d", l, u, s, old(u, l.Groups()))
			}
			if k := l.Key(u); k != Host(u) {
				t.Errorf("layout %+v: Key(%s) = %q, want the host %q", l, u, k, Host(u))
			}
		}
	}
}

// The domain key is the registrable domain (Public Suffix List) without the
// port; IP literals and names the list refuses are their own key.
func TestDomainKey(t *testing.T) {
	l := Layout{Shards: 64, Spread: 1, PolitenessKey: KeyDomain}
	for _, c := range []struct{ url, key string }{
		{"http://example.com/", "example.com"},
		{"https://www.example.com:8443/a", "example.com"},
		{"http://a.b.example.co.uk/", "example.co.uk"},
		{"http://b.example.co.uk:8080/", "example.co.uk"},
		{"http://foo.github.io/", "foo.github.io"}, // github.io is a public suffix (private section)
		{"http://bar.github.io/", "bar.github.io"},
		{"http://localhost:8080/", "localhost"},
		{"http://127.0.0.1:8080/", "127.0.0.1"},
		{"http://127.0.0.1:9090/", "127.0.0.1"},
		{"http://[::1]:8080/", "::1"},
		{"http://co.uk/", "co.uk"},
		{"not a url", ""},
	} {
		if k := l.Key(c.url); k != c.key {
			t.Errorf("domain Key(%q) = %q, want %q", c.url, k, c.key)
		}
	}
	// Two hosts of one registrable domain share a group, whatever the count.
	for _, groups := range []int{1, 7, 16, 64, 256} {
		l := Layout{Shards: groups * 2, Spread: 2, PolitenessKey: KeyDomain}
		if a, b := l.Group("http://a.example.co.uk/x"), l.Group("https://b.example.co.uk:8443/y"); a != b {
			t.Errorf("%d groups: a.example.co.uk in group %d, b.example.co.uk in %d", groups, a, b)
		}
	}
}

// A layout is stored without the key when it is host (so a host crawl's
// root data is unchanged), with it otherwise; a root written before
// politeness keys existed reads as host.
func TestLayoutStoresPolitenessKey(t *testing.T) {
	old := []byte(`{"layout":2,"shards":64,"host_spread":1}`)
	l, err := DecodeLayout(old, 64)
	if err != nil {
		t.Fatal(err)
	}
	if l.KeyKind() != KeyHost || l.Key("http://a.example.com/") != "a.example.com" {
		t.Errorf("a layout stored without the key reads as %q, want host", l.KeyKind())
	}
	if got := (Layout{Shards: 64, Spread: 1, PolitenessKey: KeyHost}).Encode(); string(got) != string(old) {
		t.Errorf("host layout encodes as %s, want %s as before", got, old)
	}
	dom := Layout{Shards: 64, Spread: 1, PolitenessKey: KeyDomain}.Encode()
	if !strings.Contains(string(dom), `"politeness_key":"domain"`) {
		t.Errorf("domain layout encodes as %s, without its key", dom)
	}
	back, err := DecodeLayout(dom, 64)
	if err != nil || back.KeyKind() != KeyDomain {
		t.Errorf("DecodeLayout(%s) = %+v, %v; want the domain key", dom, back, err)
	}
	for data, want := range map[string]string{
		`{"layout":2,"shards":64,"host_spread":1,"politeness_key":"fancy"}`: `politeness_key "fancy": not one of host, domain, ip`,
	} {
		if _, err := DecodeLayout([]byte(data), 64); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeLayout(%s) = %v, want an error containing %q", data, err, want)
		}
	}
}

// CheckKey accepts a config that leaves the key out or names the crawl's
// own, and names the key and both values otherwise.
func TestCheckKey(t *testing.T) {
	host, dom := Layout{Shards: 8, Spread: 1}, Layout{Shards: 8, Spread: 1, PolitenessKey: KeyDomain}
	for _, ok := range []struct {
		l    Layout
		kind string
	}{{host, ""}, {host, KeyHost}, {dom, ""}, {dom, KeyDomain}} {
		if err := ok.l.CheckKey(ok.kind); err != nil {
			t.Errorf("%s crawl, config %q: %v", ok.l.KeyKind(), ok.kind, err)
		}
	}
	err := host.CheckKey(KeyDomain)
	if err == nil || !strings.Contains(err.Error(), `politeness_key "domain": fixed when the crawl was created, this crawl uses "host"`) {
		t.Errorf("host crawl, config domain: %v", err)
	}
	if err := dom.CheckKey(KeyHost); err == nil {
		t.Error("domain crawl accepted a config naming host")
	}
}
