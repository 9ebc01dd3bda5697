// Package frontier turns URLs into crawl items: normalization (WHATWG URL
// Standard parsing plus a few crawler canonicalization rules), scope
// decisions, seen-set dedup keys, shard choice and the JSON encoding of queue
// items stored in ZooKeeper znodes (R/queue/<shard>/u-NNNNNNNNNN).
//
// The pure parts live in normalize.go, scope.go, item.go and key.go and have
// no dependency on ZooKeeper; exactly-once enqueue on top of package coord is
// built from them (see docs/design.md, "Enqueue, exactly once").
//
// The pipeline for every discovered link is:
//
//	abs, err := frontier.Resolve(pageURL, href) // absolute, normalized
//	ok, why := scope.Allows(abs, depth+1, pageURLString)
//	key := frontier.Key(abs)                     // seen-set marker R/seen/<Bucket(key)>/<key>
//	shard := frontier.Shard(frontier.Host(abs), shards)
//	data, err := frontier.Item{URL: abs, Depth: depth + 1, Via: pageURLString}.Encode()
package frontier
