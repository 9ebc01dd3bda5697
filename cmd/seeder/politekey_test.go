package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// --politeness-key (or politeness_key in --config) is stored with the layout
// when the crawl is created; a different one for an existing crawl, a key
// other than host, domain or ip, or a flag that contradicts the --config
// file is refused, naming the key. ip is accepted.
func TestSeederPolitenessKey(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	env := map[string]string{"ZKCRAWL_ZK": zk.Addr()}
	client, err := coord.Connect(context.Background(), zk.Addr(), coord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	layout := func(crawl string) (frontier.Layout, string) {
		t.Helper()
		f, err := frontier.Open(context.Background(), client, "/zkcrawl/"+crawl)
		if err != nil {
			t.Fatal(err)
		}
		data, _, err := coord.Store(client, "/zkcrawl/"+crawl).Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return f.Layout(), string(data)
	}

	if _, errOut, err := runSeeder(t, env, "", "--crawl", "pk-host", "http://a.example/"); err != nil {
		t.Fatalf("default: %v\n%s", err, errOut)
	}
	if l, data := layout("pk-host"); l.KeyKind() != frontier.KeyHost || strings.Contains(data, "politeness_key") {
		t.Errorf("default crawl: key %s, root data %s; want host, stored as before", l.KeyKind(), data)
	}

	if _, errOut, err := runSeeder(t, env, "", "--crawl", "pk-dom", "--politeness-key", "domain", "http://a.example/"); err != nil {
		t.Fatalf("--politeness-key domain: %v\n%s", err, errOut)
	}
	if l, data := layout("pk-dom"); l.KeyKind() != frontier.KeyDomain || !strings.Contains(data, `"politeness_key":"domain"`) {
		t.Errorf("domain crawl: key %s, root data %s", l.KeyKind(), data)
	}
	// Seeding it again with its own key, or none, is fine; another is refused.
	for _, args := range [][]string{{"--politeness-key", "domain"}, nil} {
		if _, errOut, err := runSeeder(t, env, "", append([]string{"--crawl", "pk-dom", "http://b.example/"}, args...)...); err != nil {
			t.Errorf("seed domain crawl again with %v: %v\n%s", args, err, errOut)
		}
	}
	_, _, err = runSeeder(t, env, "", "--crawl", "pk-dom", "--politeness-key", "host", "http://c.example/")
	if err == nil || !strings.Contains(err.Error(), `politeness_key "host": fixed when the crawl was created, this crawl uses "domain"`) {
		t.Errorf("--politeness-key host on a domain crawl: %v", err)
	}

	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.json")
	os.WriteFile(cfgFile, []byte(`{"politeness_key": "domain", "allow_private_networks": true}`), 0o644)
	if _, errOut, err := runSeeder(t, env, "", "--crawl", "pk-cfg", "--config", cfgFile, "http://a.example/"); err != nil {
		t.Fatalf("--config with politeness_key: %v\n%s", err, errOut)
	}
	if l, _ := layout("pk-cfg"); l.KeyKind() != frontier.KeyDomain {
		t.Errorf("--config politeness_key domain created a %s crawl", l.KeyKind())
	}
	_, _, err = runSeeder(t, env, "", "--crawl", "pk-x", "--config", cfgFile, "--politeness-key", "host", "http://a.example/")
	if err == nil || !strings.Contains(err.Error(), `--politeness-key host: --config`) {
		t.Errorf("flag contradicting --config: %v", err)
	}
	_, _, err = runSeeder(t, env, "", "--crawl", "pk-bad", "--politeness-key", "asn", "http://a.example/")
	if err == nil || !strings.Contains(err.Error(), `politeness_key "asn": not one of host, domain, ip`) {
		t.Errorf("--politeness-key asn: %v", err)
	}
	if _, errOut, err := runSeeder(t, env, "", "--crawl", "pk-ip", "--politeness-key", "ip", "http://localhost:1/"); err != nil {
		t.Fatalf("--politeness-key ip: %v\n%s", err, errOut)
	}
	if l, _ := layout("pk-ip"); l.KeyKind() != frontier.KeyIP {
		t.Errorf("--politeness-key ip created a %s crawl", l.KeyKind())
	}
}
