package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// RawConn opens a plain go-zookeeper connection to servers
// ("host:port,host:port", no chroot), outside package coord, for tests and
// benchmarks that look at what coord wrote (raw paths, ACLs) or measure the
// server itself. auth, if not "", is "scheme:credentials" added with
// AddAuth (ZooKeeper Programmer's Guide, "ACL"), e.g.
// "digest:crawler:s3cret". It returns once the session is established or
// ctx ends; the caller closes the connection. Errors: a chroot in servers,
// a malformed auth, ctx ended before the session, AddAuth refused.
func RawConn(ctx context.Context, servers, auth string) (*zk.Conn, error) {
	if strings.Contains(servers, "/") {
		return nil, fmt.Errorf("testenv: RawConn %q: a chroot is not supported", servers)
	}
	conn, events, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, fmt.Errorf("testenv: RawConn %s: %w", servers, err)
	}
	for waiting := true; waiting; {
		select {
		case ev := <-events:
			waiting = ev.State != zk.StateHasSession
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("testenv: RawConn %s: no session: %w", servers, ctx.Err())
		}
	}
	go func() { // drain: go-zookeeper blocks on a full event channel
		for range events {
		}
	}()
	if auth != "" {
		scheme, cred, ok := strings.Cut(auth, ":")
		if !ok || scheme == "" {
			conn.Close()
			return nil, fmt.Errorf("testenv: RawConn auth %q: want scheme:credentials", auth)
		}
		if err := conn.AddAuth(scheme, []byte(cred)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("testenv: RawConn AddAuth %s: %w", scheme, err)
		}
	}
	return conn, nil
}

// quietZK drops go-zookeeper's log lines (connection chatter).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
