package coord

import (
	"context"
	"fmt"
	"time"
)

// State is the client's connection state, named as the ZooKeeper
// Programmer's Guide names the KeeperState values.
type State int

const (
	// StateDisconnected: no connection to a server. The session may still
	// be alive (recoverable): ephemeral znodes survive if the client
	// reconnects within the session timeout. It is also the state before the
	// first session is established.
	StateDisconnected State = iota
	// StateConnected: connected with a live session ("SyncConnected").
	StateConnected
	// StateExpired: the server expired the session (not recoverable). The
	// client goes on to open a new session, reported as StateConnected with
	// a new session id.
	StateExpired
	// StateClosed: Client.Close was called; terminal.
	StateClosed
)

// String returns the ZooKeeper name of the state: "Disconnected",
// "Connected", "Expired" or "Closed".
func (s State) String() string {
	switch s {
	case StateDisconnected:
		return "Disconnected"
	case StateConnected:
		return "Connected"
	case StateExpired:
		return "Expired"
	case StateClosed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// StateChange is one observed transition of the client's state.
type StateChange struct {
	// State is the new state.
	State State
	// SessionID is the session the state refers to: the new session for
	// StateConnected, the lost one for StateExpired, the last known one for
	// StateDisconnected and StateClosed (0 if none yet).
	SessionID int64
	// At is the local time the change was observed.
	At time.Time
}

// subscriberBuffer is the capacity of a Subscribe channel; when a slow
// subscriber's buffer is full the oldest change is dropped (latest wins).
const subscriberBuffer = 16

// Subscribe returns a channel that first receives the current state and then
// every state change, for metrics and status displays. The channel is closed
// when ctx is done or the client is closed (after delivering StateClosed).
// A subscriber that falls behind by more than 16 changes loses the oldest
// ones, never the latest.
func (c *Client) Subscribe(ctx context.Context) <-chan StateChange {
	ch := make(chan StateChange, subscriberBuffer)
	c.mu.Lock()
	ch <- StateChange{State: c.state, SessionID: c.lastSessionID, At: time.Now()}
	if c.state == StateClosed {
		c.mu.Unlock()
		close(ch)
		return ch
	}
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	context.AfterFunc(ctx, func() { // Close closes the channel itself
		c.mu.Lock()
		if _, ok := c.subs[ch]; ok {
			delete(c.subs, ch)
			close(ch)
		}
		c.mu.Unlock()
	})
	return ch
}

// setStateLocked records a state change and publishes it. c.mu must be held.
func (c *Client) setStateLocked(s State, sessionID int64) {
	if s == c.state && s != StateConnected {
		return
	}
	if s == StateConnected && c.state == StateConnected && sessionID == c.lastSessionID {
		return
	}
	prev := c.state
	c.state = s
	if sessionID != 0 {
		c.lastSessionID = sessionID
	}
	ev := StateChange{State: s, SessionID: sessionID, At: time.Now()}
	c.log.Info("zookeeper state change", "from", prev.String(), "to", s.String(),
		"session", sessionHex(sessionID))
	for ch := range c.subs {
		select {
		case ch <- ev:
		default:
			// Full: drop the oldest change so the latest is never lost.
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- ev:
			default:
			}
		}
	}
	if s == StateConnected {
		// Wake everything waiting for a reconnect (watch re-arming, see
		// reconnected).
		close(c.reconnectCh)
		c.reconnectCh = make(chan struct{})
	}
}
