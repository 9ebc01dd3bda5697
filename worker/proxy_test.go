package worker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// A crawl through an HTTP CONNECT proxy and one through a SOCKS5 proxy,
// each set by the crawl config's proxy key, fetch the ground truth; the
// proxy tunnels every connection, and every WARC response record (read
// with storage's reader) holds the origin's response, with the origin's
// address as WARC-IP-Address, never the proxy's handshake.
func TestCrawlThroughProxy(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	web := testenv.NewWeb(t, testenv.WebConfig{Seed: 11, Hosts: 2, PagesPerHost: 6, LinksPerPage: 3, CrossHostShare: 0.3})
	truth, err := web.GroundTruth(testenv.WebCrawlOptions{MaxDepth: -1, ObeyRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	hp := testenv.NewConnectProxy(t, "")
	sp := testenv.NewSOCKS5Proxy(t, "crawler", "s3cret", "")
	for _, tc := range []struct {
		name, proxy string
		tunnels     func() []string
	}{
		{"http", "http://crawler:s3cret@" + strings.TrimPrefix(hp.URL, "http://"), hp.Targets},
		{"socks5", "socks5://crawler:s3cret@" + sp.Addr, sp.Targets},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxDepth = -1
			cfg.Proxy = tc.proxy
			c := newCrawl(t, zk.Addr(), "proxy-"+tc.name, cfg, frontier.Layout{Shards: 4, Spread: 1}, web.Seeds())
			c.runWorkers(1, 60*time.Second)
			final, _ := finalStatus(c.logs())
			if bad := diffTruth(truth, final); len(bad) > 0 {
				t.Fatalf("crawl through the proxy differs from the ground truth:\n%s", firstN(bad, 20))
			}
			if len(tc.tunnels()) == 0 {
				t.Fatal("the proxy tunnelled nothing")
			}
			records, _ := warcRecords(t, c.out)
			n := 0
			for _, byOff := range records {
				for _, rec := range byOff {
					if rec.Type() != storage.TypeResponse {
						continue
					}
					n++
					uri := rec.Get("WARC-Target-URI")
					if !bytes.HasPrefix(rec.Block, []byte("HTTP/1.1 ")) || bytes.Contains(rec.Block, []byte("Connection established")) ||
						bytes.Contains(rec.Block, []byte("Proxy-Agent")) {
						t.Errorf("%s: the record is not the origin's response: %.120q", uri, rec.Block)
					}
					if ip := rec.Get("WARC-IP-Address"); ip != "127.0.0.1" {
						t.Errorf("%s: WARC-IP-Address %q, want the origin's 127.0.0.1", uri, ip)
					}
				}
			}
			if n < len(truth) {
				t.Errorf("%d response records, want at least %d", n, len(truth))
			}
		})
	}
}
