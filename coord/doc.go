// Package coord holds zkcrawl's ZooKeeper coordination: the client session
// (connect, state, expiry detection, retry) and the recipes built on it:
//
//   - Mutex: the ZooKeeper recipes "Locks" (ephemeral-sequential children named
//     <guid>-lock-, each waiter watching only its predecessor).
//   - Queue and Claim: a sharded FIFO queue of persistent-sequential items with
//     exactly-once enqueue through a seen-set marker created in the same multi,
//     and per-item ephemeral claims (the ZooKeeper "queue with locking" recipe).
//   - ConfigStore: the "active configuration service" (read, compare-and-set,
//     a watch that is re-armed after every event, reconnect and expiry).
//   - Member, WatchMembers, Owner: group membership through ephemeral znodes
//     and rendezvous (highest random weight) hashing of shards over members.
//
// coord knows nothing of URLs or HTTP: queue items are opaque []byte and keys
// are opaque lowercase hex strings chosen by the caller.
//
// # Sessions
//
// Connection loss (zk.ErrConnectionClosed) is recoverable: the session and its
// ephemeral znodes survive if the client reconnects within the session
// timeout. Session expiry is not: the server has deleted the session's
// ephemeral znodes (claims, lock nodes, member nodes). go-zookeeper silently
// opens a new session after expiry; Client detects this (a zk.StateExpired
// event or a change of SessionID) and reports it by closing the old
// Session's Done channel. Each recipe that depends on ephemeral znodes takes a
// *Session and refuses to act for a session that has ended.
//
// go-zookeeper queues requests issued while disconnected and sends them after
// the next handshake, which may be with a NEW session. Every recipe therefore
// tolerates a request executed under a session other than the one it was
// issued for: queue claims and their completions are fenced by a per-session
// ephemeral marker (R/sessions/<id>) checked inside the same multi, lock nodes
// carry a GUID and are verified by their ephemeralOwner, and membership nodes
// are verified by their ephemeralOwner.
//
// Every blocking method takes a context.Context. go-zookeeper's calls take
// none, so coord runs each call on its own goroutine and returns as soon as the
// context is done; a non-idempotent call abandoned this way is cleaned up in
// the background once its outcome is known (for example a lock node or a claim
// created after the caller gave up is deleted).
package coord
