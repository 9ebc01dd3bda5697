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

// WithAuth parses spec, "SCHEME:CREDENTIALS" (e.g.
// "digest:crawler:s3cret"), into an Option that makes Connect authenticate
// the session (zk.Conn.AddAuth, resent by go-zookeeper after every
// reconnect before any other request) and create every znode with a
// creator-only ACL (scheme "auth", all permissions for the session's
// identity), so that a crawl created with credentials cannot be read or
// changed by a client without them. Without it znodes are world:anyone with
// all permissions.
//
// Errors (wrapping ErrInvalidArgument) name the input's problem: no scheme,
// a scheme other than digest, digest credentials without "USER:" or with an
// empty user or password. The credentials never appear in the error.
func WithAuth(spec string) (Option, error) {
	scheme, cred, ok := strings.Cut(spec, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("coord: auth: want SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD: %w", ErrInvalidArgument)
	}
	if scheme != "digest" {
		return nil, fmt.Errorf("coord: auth scheme %q: only digest is supported (go-zookeeper has no SASL): %w", scheme, ErrInvalidArgument)
	}
	user, pass, ok := strings.Cut(cred, ":")
	if !ok || user == "" || pass == "" {
		return nil, fmt.Errorf("coord: auth: digest credentials want USER:PASSWORD, both non-empty: %w", ErrInvalidArgument)
	}
	a := &auth{scheme: scheme, credentials: []byte(cred)}
	return func(o *options) { o.auth = a }, nil
}

// openACL is the ACL of a Client without WithAuth (world:anyone, all
// permissions). Create znodes with Client.acl, never with this directly.
var openACL = zk.WorldACL(zk.PermAll)

// creatorACL gives all permissions to the identities the creating session
// authenticated as, and nothing to anyone else (ZooKeeper's "auth" scheme:
// "uses the current user, credentials, and scheme").
var creatorACL = zk.AuthACL(zk.PermAll)

// acl returns the ACL every znode this client creates must carry:
// creator-only when the client was connected WithAuth, world:anyone
// otherwise. Every create in coord uses this one accessor.
func (c *Client) acl() []zk.ACL {
	if c.auth != nil {
		return creatorACL
	}
	return openACL
}
