package worker

import (
	"context"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// reportConnection says in the worker's log when the ZooKeeper connection
// is lost and when it is back, until ctx ends or the client closes. While
// disconnected the worker claims nothing (every claim is a ZooKeeper write)
// and its in-flight items cannot complete; its session, and with it its
// claims, survives if the connection returns within the session timeout
// (ZooKeeper Programmer's Guide, "ZooKeeper Sessions"), and after a quorum
// loss even longer, since the new leader restores every session with a
// fresh timeout. coord logs the raw state changes at Info level between
// go-zookeeper's redial lines; this is the operator's line: a warning when
// the connection goes, Info when it returns (with the outage's length and
// whether the session survived; an expiry is reported by Run).
func (w *Worker) reportConnection(ctx context.Context) {
	var lostAt time.Time
	var lostSession int64
	for ch := range w.client.Subscribe(ctx) {
		switch {
		case ch.State == coord.StateDisconnected && ch.SessionID != 0 && lostAt.IsZero():
			lostAt, lostSession = ch.At, ch.SessionID
			w.log.Warn("ZooKeeper connection lost: claiming nothing until it is back; in-flight items wait to complete",
				"session_timeout", w.opts.SessionTimeout)
		case ch.State == coord.StateConnected && !lostAt.IsZero():
			w.log.Info("ZooKeeper connection back: claiming again",
				"after", ch.At.Sub(lostAt).Round(time.Millisecond), "same_session", ch.SessionID == lostSession)
			lostAt = time.Time{}
		}
	}
}
