package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// dedupAsset is the payload every host serves at /asset.bin: over
// dedup_min_bytes, the same bytes everywhere.
var dedupAsset = bytes.Repeat([]byte("zkcrawl dedup asset 0123456789\n"), 200)

// One asset under 100 URLs on 100 hosts, crawled by 3 workers with a
// digest index: the WARC files hold exactly one response record of it and
// 99 identical-payload-digest revisits, each naming that response by
// WARC-Refers-To-Target-URI, -Date and WARC-Refers-To, as warcio.js reads
// them; the crawl log marks the 99 lines "revisit".
func TestDedupOneAssetOnManyHosts(t *testing.T) {
	const hosts = 100
	zk := testenv.ZooKeeper(t)
	rd := testenv.RedisServer(t, testenv.RedisConfig{})
	cfg := testConfig()
	cfg.Sitemaps = false
	cfg.DedupIndex = rd.URL(0)
	c := newCrawl(t, zk.Addr(), "dedup", cfg, frontier.Layout{Shards: 16, Spread: 2}, assetHosts(t, hosts))
	c.runWorkers(3, 120*time.Second)

	recs := warcioIndex(t, c.out)
	digest := storage.Digest(dedupAsset)
	responses := map[string]map[string]string{} // record ID -> the asset's response
	var revisits []map[string]string
	for _, r := range recs {
		if !strings.HasSuffix(r["warc-target-uri"], "/asset.bin") {
			continue
		}
		switch r["warc-type"] {
		case "response":
			if r["warc-payload-digest"] != digest {
				t.Fatalf("asset response with digest %s, want %s", r["warc-payload-digest"], digest)
			}
			responses[r["warc-record-id"]] = r
		case "revisit":
			revisits = append(revisits, r)
		}
	}
	if len(responses) != 1 || len(revisits) != hosts-1 {
		t.Fatalf("asset: %d response records and %d revisits; want 1 and %d", len(responses), len(revisits), hosts-1)
	}
	for _, v := range revisits {
		resp, ok := responses[v["warc-refers-to"]]
		switch {
		case v["warc-profile"] != storage.RevisitProfile || v["warc-payload-digest"] != digest:
			t.Errorf("revisit %s: profile %q digest %q", v["warc-target-uri"], v["warc-profile"], v["warc-payload-digest"])
		case !ok:
			t.Errorf("revisit %s refers to %q: no such response", v["warc-target-uri"], v["warc-refers-to"])
		case v["warc-refers-to-target-uri"] != resp["warc-target-uri"] || v["warc-refers-to-date"] != resp["warc-date"]:
			t.Errorf("revisit %s names %s at %s; the response is %s at %s", v["warc-target-uri"],
				v["warc-refers-to-target-uri"], v["warc-refers-to-date"], resp["warc-target-uri"], resp["warc-date"])
		}
	}
	marked := 0
	for _, e := range c.logs() {
		if strings.HasSuffix(e.URL, "/asset.bin") && e.Revisit == "identical-payload-digest" {
			marked++
		}
	}
	if marked != hosts-1 {
		t.Errorf("%d asset crawl-log lines say revisit; want %d", marked, hosts-1)
	}
	t.Logf("one asset at %d URLs on %d hosts, 3 workers: %d response record and %d revisit records (warcio.js), %d crawl-log lines say revisit",
		hosts, hosts, len(responses), len(revisits), marked)
}

// With the digest index down the crawl goes on and stores every payload
// in full.
func TestDedupIndexDown(t *testing.T) {
	const hosts = 5
	zk := testenv.ZooKeeper(t)
	rd := testenv.RedisServer(t, testenv.RedisConfig{})
	rd.Stop()
	cfg := testConfig()
	cfg.Sitemaps = false
	cfg.DedupIndex = rd.URL(0)
	c := newCrawl(t, zk.Addr(), "dedupdown", cfg, frontier.Layout{Shards: 4, Spread: 1}, assetHosts(t, hosts))
	c.runWorkers(1, 60*time.Second)
	n := 0
	for u, k := range c.warcResponses() {
		if strings.HasSuffix(u, "/asset.bin") {
			n += k
		}
	}
	if n != hosts {
		t.Fatalf("%d asset response records with the index down; want %d", n, hosts)
	}
}

// assetHosts starts n loopback HTTP servers, each serving at / a page
// whose image is /asset.bin (dedupAsset), and returns their home pages.
func assetHosts(t *testing.T, n int) []string {
	t.Helper()
	var seeds []string
	for i := range n {
		mux := http.NewServeMux()
		mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><head><title>host %d</title></head><body><img src="/asset.bin"></body></html>`, i)
		})
		mux.HandleFunc("/asset.bin", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(dedupAsset)
		})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		seeds = append(seeds, srv.URL+"/")
	}
	return seeds
}

// warcioIndex reads every WARC file under dir with warcio.js's `index`
// (an independent reader) and returns one map of WARC header fields per
// record: warc-type, warc-target-uri, warc-record-id, warc-date,
// warc-payload-digest, warc-profile and the warc-refers-to fields.
func warcioIndex(t *testing.T, dir string) []map[string]string {
	t.Helper()
	cmd, err := testenv.WarcioPath()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.warc.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no WARC files under %s: %v", dir, err)
	}
	args := append([]string{"index"}, files...)
	args = append(args, "-f", "warc-type", "warc-target-uri", "warc-record-id", "warc-date", "warc-payload-digest",
		"warc-profile", "warc-refers-to", "warc-refers-to-target-uri", "warc-refers-to-date")
	var out, errb bytes.Buffer
	c := exec.CommandContext(t.Context(), cmd, args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil || strings.TrimSpace(errb.String()) != "" {
		t.Fatalf("warcio index: %v: %s", err, errb.String())
	}
	var recs []map[string]string
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]string
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("warcio index line %q: %v", sc.Text(), err)
		}
		recs = append(recs, m)
	}
	return recs
}

// Index failures are logged once, then at most once per dedupWarnEvery.
func TestDedupFailureLoggedOncePerMinute(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var s dedupState
	for range 5 {
		s.failed(log, errors.New("dial tcp: connection refused"))
	}
	if n := strings.Count(buf.String(), "digest index"); n != 1 {
		t.Fatalf("%d warnings for 5 failures within a minute; want 1:\n%s", n, buf.String())
	}
	s.warned = s.warned.Add(-dedupWarnEvery)
	s.failed(log, errors.New("i/o timeout"))
	if n := strings.Count(buf.String(), "digest index"); n != 2 {
		t.Fatalf("%d warnings after a minute; want 2", n)
	}
}
