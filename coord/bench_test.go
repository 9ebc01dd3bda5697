package coord_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// BenchmarkCrawlLoop measures the crawler's coordination loop on a real
// ZooKeeper: 3 workers own the shards by rendezvous hashing and run 8
// takers per owned shard; each "page" is Take (a read and the claim
// multi), a PutBatch of 3 links that are already in the seen-set
// (duplicates, as most links are), and Complete. It reports pages/s. Run:
//
//	go test -run '^$' -bench CrawlLoop -benchtime 4000x ./coord/
func BenchmarkCrawlLoop(b *testing.B) {
	const workers, shards, takers = 3, 12, 8
	root := testRoot(b)
	admin := connect(b, zkAddr(b))
	q := coord.NewQueue(admin, root, shards)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		b.Fatal(err)
	}
	n := b.N
	var items []coord.PutItem
	for i := 0; i < n; i++ {
		k := key("bench", i)
		items = append(items, coord.PutItem{Shard: i % shards, Key: k, Data: []byte(k)})
	}
	if _, err := q.PutBatch(ctx, items); err != nil {
		b.Fatal(err)
	}
	ids := []string{"w0", "w1", "w2"}
	var done atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		c := connectWith(b, zkAddr(b), coord.Config{Owner: ids[w]})
		wq := coord.NewQueue(c, root, shards)
		sess, err := c.Session(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for shard, o := range coord.Owners(shards, ids) {
			if o != ids[w] {
				continue
			}
			for t := 0; t < takers; t++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						cl, err := wq.Take(cctx, sess, shard, nil)
						if err != nil {
							return
						}
						seq := int(done.Load())
						links := []coord.PutItem{}
						for j := 1; j <= 3; j++ {
							k := key("bench", (seq*7+j)%n)
							links = append(links, coord.PutItem{Shard: (seq + j) % shards, Key: k, Data: []byte(k)})
						}
						if _, err := wq.PutBatch(ctx, links); err != nil {
							b.Error(err)
						}
						if err := cl.Complete(ctx); err != nil {
							b.Error(err)
						}
						if done.Add(1) == int64(n) {
							stop()
						}
					}
				}()
			}
		}
	}
	wg.Wait()
	el := time.Since(start)
	b.ReportMetric(float64(done.Load())/el.Seconds(), "pages/s")
	if int(done.Load()) < n {
		b.Fatalf("%d of %d pages", done.Load(), n)
	}
}
