// Package coord holds zkcrawl's ZooKeeper coordination: the client session
// (Connect with a Config, as etcd's clientv3.New; state, expiry detection,
// retry) and the recipes built on it,
// each bound to a Session like etcd's client/v3/concurrency:
//
//   - Queue and Claim: the crawl's sharded FIFO queue of ready items with
//     per-item ephemeral claims (the ZooKeeper "queue with locking" recipe),
//     consumed one way, Take, with the caller's slot policy as its reserve.
//     A claim is the lock on its item: coord has no other lock recipe.
//   - Queue.Commit, Read, List, Stat: a generic store under the crawl
//     root. Commit runs a caller's ops as one multi fenced by the caller's
//     session (etcd's Txn().If(mutex.IsOwner())); package frontier keeps
//     its compact store on it.
//   - ConfigStore: the "active configuration service" (read, compare-and-set,
//     a watch that is re-armed after every event, reconnect and expiry);
//     Store opens one on a crawl node (ConfigNode, DrainNode, TotalsNode,
//     a member's WorkersNode entry) or on any znode.
//   - Join, Members, WatchMembers, Owners: group membership through
//     ephemeral znodes and rendezvous (highest random weight) hashing with
//     bounded loads of shards over members.
//
// layout.go names the znodes coord itself keeps (queue, claims, dead
// letters, session markers, members, config, drain); callers use the
// recipes' verbs. coord knows nothing of URLs, HTTP, records or seen-sets:
// items and stored data are opaque []byte.
//
// # Sessions
//
// Connection loss (ErrConnectionLoss) is recoverable: the session and its
// ephemeral znodes survive if the client reconnects within the session
// timeout. Session expiry is not: the server has deleted the session's
// ephemeral znodes (claims, fence markers, member nodes). go-zookeeper silently
// opens a new session after expiry; Client detects this (a zk.StateExpired
// event or a change of SessionID) and reports it by cancelling the old
// Session's Ctx. Each recipe that depends on ephemeral znodes takes a
// *Session and refuses to act for a session that has ended.
//
// go-zookeeper queues requests issued while disconnected and sends them after
// the next handshake, which may be with a NEW session. Every recipe therefore
// tolerates a request executed under a session other than the one it was
// issued for: queue claims, their completions and fenced commits are fenced
// by a per-session ephemeral marker (R/sessions/<id>) checked inside the same
// multi, and membership nodes are verified by their ephemeralOwner.
//
// Idempotent requests are retried after connection loss (Client.retry); a
// non-idempotent write never blindly, its lost outcome is resolved first
// (Client.retryWrite).
//
// Every blocking method takes a context.Context. go-zookeeper's calls take
// none, so coord runs each call on its own goroutine and returns as soon as the
// context is done; a non-idempotent call abandoned this way is cleaned up in
// the background once its outcome is known (for example a claim created
// after the caller gave up is deleted). zkquirks.go lists this and every
// other go-zookeeper workaround.
package coord
