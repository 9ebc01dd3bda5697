package coord

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrSessionExpired means the ZooKeeper session the operation depended on
	// has expired: its ephemeral znodes (claims, fence markers, member nodes) are
	// gone. Not recoverable within that session; obtain the new one with
	// Client.Session and rebuild state (ZooKeeper Programmer's Guide,
	// "Sessions").
	ErrSessionExpired = errors.New("coord: zookeeper session expired")

	// ErrClosed means the Client was closed.
	ErrClosed = errors.New("coord: client closed")

	// ErrInvalidArgument wraps every bad-input error (empty path, bad key,
	// shard out of range); the message names the input and the reason.
	ErrInvalidArgument = errors.New("coord: invalid argument")

	// ErrNotFound means a znode the operation needs does not exist (for
	// example the config znode, or a dead letter).
	ErrNotFound = errors.New("coord: znode not found")

	// ErrVersionConflict is returned by compare-and-set writes when the znode
	// version differs from the expected one (ZooKeeper BadVersion), or a
	// Commit op finds its znode already there or not empty: a config
	// written by someone else meanwhile, or a store written by another
	// session (reload it).
	ErrVersionConflict = errors.New("coord: version conflict")

	// ErrNotInitialized means the queue's parent znodes are missing: run
	// CreateQueue first.
	ErrNotInitialized = errors.New("coord: queue not initialized")

	// ErrNotAuthorized means a znode's ACL refused this client (ZooKeeper
	// NoAuth): the crawl was created with credentials this client did not
	// give (Config.Username), or gave others.
	ErrNotAuthorized = errors.New("coord: not authorized by the znode's ACL")

	// ErrClaimed means another worker (another session, or another goroutine
	// of this Client) holds the claim on the item.
	ErrClaimed = errors.New("coord: item already claimed")

	// ErrGone means the item no longer exists: someone else completed it.
	ErrGone = errors.New("coord: item gone")

	// ErrClaimLost means the claim's session ended, the claim znode
	// vanished, or the claim was already finished by an earlier call: this
	// call changed nothing and the item stays queued for another worker
	// (at-least-once). One ambiguity remains: if an earlier
	// attempt of the same call was cut off by connection loss and the session
	// then expired, that attempt may have committed before; either way the
	// item is never lost.
	ErrClaimLost = errors.New("coord: claim lost")

	// ErrConnectionLoss wraps every ZooKeeper connection-loss error a
	// call returns (go-zookeeper's ErrConnectionClosed, ErrNoServer,
	// ErrSessionMoved, or a raw socket error): the request may or may not
	// have been applied, and the session may still be alive
	// ("recoverable" in the ZooKeeper Programmer's Guide). Only idempotent
	// operations may simply be retried after it.
	ErrConnectionLoss = errors.New("coord: zookeeper connection loss")
)

// isConnectionLoss reports whether err is a ZooKeeper connection-loss error
// (ErrConnectionLoss's contract): zk.ErrConnectionClosed, zk.ErrNoServer,
// zk.ErrSessionMoved (the server ignored the request because the session
// moved to another server, so a retry is safe), or a socket error (broken
// pipe, connection reset, EOF): go-zookeeper v1.0.4 hands a request the raw
// error when writing it to a dying connection fails, and whether the
// server got it is then unknown (zkquirks.go, quirk 7).
func isConnectionLoss(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, ErrConnectionLoss) ||
		errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) ||
		isSocketError(err)
}

// isExpired reports whether err says the session has expired.
func isExpired(err error) bool {
	return errors.Is(err, ErrSessionExpired) || errors.Is(err, zk.ErrSessionExpired)
}
