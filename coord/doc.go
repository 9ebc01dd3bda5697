// Package coord holds zkcrawl's ZooKeeper coordination: the client session
// (connect, state, expiry detection, retry) and the recipes built on it,
// each bound to a Session like etcd's client/v3/concurrency:
//
//   - Queue and Claim: the crawl's sharded FIFO queue of ready items with
//     per-item ephemeral claims (the ZooKeeper "queue with locking" recipe),
//     consumed one way, Take, with the caller's slot policy as its Reserve.
//   - Backlog and Group: the frontier's compact store (inbox posts, the
//     owner's backlog batches and seen chunks), one fenced multi per step.
//   - ConfigStore: the "active configuration service" (read, compare-and-set,
//     a watch that is re-armed after every event, reconnect and expiry);
//     Config and Drain return the crawl's.
//   - Join, Members, WatchMembers, OwnedShards: group membership through
//     ephemeral znodes and rendezvous (highest random weight) hashing of
//     shards over members.
//   - Mutex: the ZooKeeper recipe "Locks" (ephemeral-sequential children
//     named <guid>-lock-, each waiter watching only its predecessor).
//
// layout.go names every znode of a crawl; callers use the recipes' verbs.
// coord knows nothing of URLs or HTTP: items and records are opaque []byte,
// and dedup keys come from a function the caller gives.
//
// # Sessions
//
// Connection loss (zk.ErrConnectionClosed) is recoverable: the session and its
// ephemeral znodes survive if the client reconnects within the session
// timeout. Session expiry is not: the server has deleted the session's
// ephemeral znodes (claims, lock nodes, member nodes). go-zookeeper silently
// opens a new session after expiry; Client detects this (a zk.StateExpired
// event or a change of SessionID) and reports it by cancelling the old
// Session's Ctx. Each recipe that depends on ephemeral znodes takes a
// *Session and refuses to act for a session that has ended.
//
// go-zookeeper queues requests issued while disconnected and sends them after
// the next handshake, which may be with a NEW session. Every recipe therefore
// tolerates a request executed under a session other than the one it was
// issued for: queue claims, their completions and group steps are fenced by
// a per-session ephemeral marker (R/sessions/<id>) checked inside the same
// multi, and lock and membership nodes are verified by their ephemeralOwner.
//
// Idempotent requests are retried after connection loss (Client.retry); a
// non-idempotent write never blindly, its lost outcome is resolved first
// (Client.retryWrite).
//
// Every blocking method takes a context.Context. go-zookeeper's calls take
// none, so coord runs each call on its own goroutine and returns as soon as the
// context is done; a non-idempotent call abandoned this way is cleaned up in
// the background once its outcome is known (for example a lock node or a claim
// created after the caller gave up is deleted). zkquirks.go lists this and
// every other go-zookeeper workaround.
package coord
