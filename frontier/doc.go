// Package frontier is the crawl's frontier: it turns URLs into crawl items
// and owns everything between a discovered link and a ready item.
//
//   - The pure parts (normalize.go, scope.go, item.go, record.go, key.go,
//     layout.go): normalization (WHATWG URL Standard parsing plus a few
//     crawler canonicalization rules), scope decisions, the 64-bit
//     fingerprint (the one place a dedup key is computed), the politeness
//     key and shard choice (Layout.Key), the JSON ready item and the binary
//     backlog record. No ZooKeeper.
//   - The sending side (frontier.go): Enqueue posts records to their
//     group's inbox (group commit) or hands them to the local owner.
//   - The compact store of layout 2 (backlog.go, group.go, backlog_codec.go,
//     group_annex.go): per group an inbox of posts, backlog batches, seen
//     chunks and the owner's cursor, written through package coord's
//     session-fenced commits (coord.Queue.Commit), which know nothing of
//     what is stored.
//   - The owner loop (owner.go, hostbudget.go): Owner.Run runs one owned
//     group (dedup against its seen-set, quotas, host budgets, ready
//     windows), one fenced multi per step, with one model per group.
//
// See docs/design.md, "Frontier layout 2" and "Enqueue, exactly once".
//
// The pipeline for every discovered link is:
//
//	abs, err := frontier.Resolve(pageURL, href) // absolute, normalized
//	ok, why := scope.Allows(abs, depth+1, pageURLString)
//	key := frontier.Fingerprint(abs)             // the group's seen-set key
//	g := layout.Group(abs)                       // the shard group that owns its host
//	res, err := f.Enqueue(ctx, []frontier.Item{{URL: abs, Depth: depth + 1, Via: pageURLString}})
package frontier
