package coord

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// auth is one ZooKeeper authentication: a scheme and its credentials, sent
// with AddAuth on every connection of the session (ZooKeeper Programmer's
// Guide, "ZooKeeper access control using ACLs", "Builtin ACL Schemes").
type auth struct {
	scheme      string // only "digest" (go-zookeeper has no SASL client)
	credentials []byte // for digest "USER:PASSWORD"
}

// digestAuth returns the digest authentication of Config.Username and
// Password, nil when both are empty. Errors (wrapping ErrInvalidArgument)
// name the problem, never the password: only one of them given, or a user
// holding ':' (digest credentials are "USER:PASSWORD", split at the first
// ':').
func digestAuth(user, password string) (*auth, error) {
	switch {
	case user == "" && password == "":
		return nil, nil
	case user == "" || password == "":
		return nil, fmt.Errorf("coord: Connect: digest credentials want both Username and Password, non-empty: %w", ErrInvalidArgument)
	case strings.Contains(user, ":"):
		return nil, fmt.Errorf("coord: Connect: digest Username %q: must not contain ':': %w", user, ErrInvalidArgument)
	}
	return &auth{scheme: "digest", credentials: []byte(user + ":" + password)}, nil
}

// openACL is the ACL of a Client without credentials (world:anyone, all
// permissions). Create znodes with Client.acl, never with this directly.
var openACL = zk.WorldACL(zk.PermAll)

// creatorACL gives all permissions to the identities the creating session
// authenticated as, and nothing to anyone else (ZooKeeper's "auth" scheme:
// "uses the current user, credentials, and scheme").
var creatorACL = zk.AuthACL(zk.PermAll)

// acl returns the ACL every znode this client creates must carry:
// creator-only when the client was connected with credentials, world:anyone
// otherwise. Every create in coord uses this one accessor.
func (c *Client) acl() []zk.ACL {
	if c.auth != nil {
		return creatorACL
	}
	return openACL
}
