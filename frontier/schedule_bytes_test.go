package frontier_test

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// BenchmarkScheduleBytes measures the ZooKeeper bytes per scheduled URL
// (docs/design.md, "Recrawl"): 100,000 URLs of the big benchmark's shape
// (http://hNNNNNN.example/p/N, 100 per host) are accepted and retired into
// the seen chunks (fetched), then each gets a schedule entry as a worker
// hands it back (capture time 10 ms apart, a random payload digest, an
// interval of 1 to 2 days, changed or not, and a Last-Modified: shape
// "static" gives each host's pages one (a site deployed at once, as the
// PostgreSQL manual behind nginx), "random" gives every page a random one
// within the last year (the worst case), "etag" gives none but an ETag of
// nginx's form, "<mtime hex>-<size hex>", 15 bytes (a dynamic page));
// shapes "static-revisit" and "random-revisit" are those made by a revisit
// (Fetched = Time + the interval, unchanged), the entries of a second
// pass. The group's cursor, batches and seen chunks are then read. Run:
//
//	go test -run '^$' -bench ScheduleBytes -benchtime 1x ./frontier/
func BenchmarkScheduleBytes(b *testing.B) {
	for _, shape := range []string{"static", "random", "etag", "static-revisit", "random-revisit"} {
		b.Run("shape="+shape, func(b *testing.B) {
			for range b.N {
				seen, total := scheduleBytes(b, 100_000, shape)
				b.ReportMetric(seen, "seen-B/URL")
				b.ReportMetric(total, "scheduled-B/URL")
			}
		})
	}
}

func scheduleBytes(b *testing.B, n int, shape string) (seenPerURL, totalPerURL float64) {
	root := testRoot(b)
	c := connect(b, zkAddr(b))
	ctx := testenv.Context(b, 5*time.Minute)
	f, _, err := frontier.Create(ctx, c, root, frontier.Layout{Shards: 1, Spread: 1})
	if err != nil {
		b.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		b.Fatal(err)
	}
	bl := f.Backlog()
	grp, err := bl.Open(ctx, sess, 0)
	if err != nil {
		b.Fatal(err)
	}
	url := func(i int) string { return fmt.Sprintf("http://h%06d.example/p/%d", i/100, i%100) }
	const step = 4000
	for i := 0; i < n; i += step {
		var recs [][]byte
		for j := i; j < min(i+step, n); j++ {
			rec, err := frontier.Item{URL: url(j), Depth: 1}.Record()
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, rec)
		}
		res, err := grp.Apply(ctx, frontier.Step{Accept: recs})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := grp.Apply(ctx, frontier.Step{Drop: res.Accepted}); err != nil { // fetched
			b.Fatal(err)
		}
	}
	if _, err := grp.Apply(ctx, frontier.Step{}); err != nil { // retire the last batch
		b.Fatal(err)
	}
	seen, err := bl.StoreBytes(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += step {
		var recs [][]byte
		for j := i; j < min(i+step, n); j++ {
			c := scheduleCapture(rng, at, j, shape)
			rec, err := frontier.Item{URL: url(j), Depth: 1, Prev: &c}.Record()
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, rec)
		}
		if _, err := grp.Apply(ctx, frontier.Step{Accept: recs}); err != nil {
			b.Fatal(err)
		}
	}
	total, err := bl.StoreBytes(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	return float64(seen) / float64(n), float64(total) / float64(n)
}

// scheduleCapture returns the capture of the j-th URL of a schedule
// benchmark (BenchmarkScheduleBytes' shapes): captured at + j x 10 ms
// (whole seconds), a random payload digest, an interval of 1 to 2 days,
// changed or not at random, and by shape a Last-Modified ("static": one
// per host of 100 URLs, j/100 hours before at; "random": within the year
// before the capture) or a 20-byte ETag and none ("etag").
func scheduleCapture(rng *rand.Rand, at time.Time, j int, shape string) frontier.Capture {
	var d [8]byte
	for k := range d {
		d[k] = byte(rng.Uint32())
	}
	t := at.Add(time.Duration(j) * 10 * time.Millisecond).Truncate(time.Second)
	lm := t.Add(-time.Duration(rng.Int64N(365*86400)) * time.Second)
	if strings.HasPrefix(shape, "static") {
		lm = at.Add(-time.Duration(j/100) * time.Hour)
	}
	c := frontier.Capture{Time: t, Digest: hex.EncodeToString(d[:frontier.DigestBytes]), LastModified: lm,
		IntervalS: 86400 + rng.Int64N(86400), Changed: rng.IntN(2) == 0}
	if shape == "etag" {
		c.LastModified = time.Time{}
		c.ETag = fmt.Sprintf(`"%x-%x"`, lm.Unix(), rng.Int64N(1<<20))
	}
	if strings.HasSuffix(shape, "-revisit") {
		c.Fetched, c.Changed = t.Add(time.Duration(c.IntervalS)*time.Second), false
	}
	return c
}
