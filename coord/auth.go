package coord

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// ErrNotAuthorized means a znode's ACL refused this client (ZooKeeper
// NoAuth): the crawl was created with credentials this client did not give
// (WithAuth), or gave others.
var ErrNotAuthorized = errors.New("coord: not authorized by the znode's ACL")

// Auth is one ZooKeeper authentication: a scheme and its credentials, sent
// with AddAuth on every connection of the session (ZooKeeper Programmer's
// Guide, "ZooKeeper access control using ACLs", "Builtin ACL Schemes").
type Auth struct {
	// Scheme is the authentication scheme; only "digest" is supported
	// (go-zookeeper has no SASL client).
	Scheme string
	// Credentials are the scheme's credentials; for digest "USER:PASSWORD".
	Credentials []byte
}

// ParseAuth parses "SCHEME:CREDENTIALS", e.g. "digest:crawler:s3cret".
// Errors (wrapping ErrInvalidArgument) name the input's problem: no scheme,
// a scheme other than digest, digest credentials without "USER:" or with an
// empty user or password. The credentials never appear in the error.
func ParseAuth(s string) (Auth, error) {
	scheme, cred, ok := strings.Cut(s, ":")
	if !ok || scheme == "" {
		return Auth{}, fmt.Errorf("coord: auth: want SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD: %w", ErrInvalidArgument)
	}
	if scheme != "digest" {
		return Auth{}, fmt.Errorf("coord: auth scheme %q: only digest is supported (go-zookeeper has no SASL): %w", scheme, ErrInvalidArgument)
	}
	user, pass, ok := strings.Cut(cred, ":")
	if !ok || user == "" || pass == "" {
		return Auth{}, fmt.Errorf("coord: auth: digest credentials want USER:PASSWORD, both non-empty: %w", ErrInvalidArgument)
	}
	return Auth{Scheme: scheme, Credentials: []byte(cred)}, nil
}

// WithAuth makes Connect authenticate the session with a (zk.Conn.AddAuth,
// resent by go-zookeeper after every reconnect before any other request) and
// create every znode with a creator-only ACL: see Client.ACL. Without it
// znodes are world:anyone with all permissions.
func WithAuth(a Auth) Option {
	return func(o *options) { o.auth = &a }
}

// openACL is the ACL of a Client without WithAuth (world:anyone, all
// permissions). Create znodes with Client.ACL, never with this directly.
var openACL = zk.WorldACL(zk.PermAll)

// creatorACL gives all permissions to the identities the creating session
// authenticated as, and nothing to anyone else (ZooKeeper's "auth" scheme:
// "uses the current user, credentials, and scheme").
var creatorACL = zk.AuthACL(zk.PermAll)

// ACL returns the ACL every znode this client creates must carry: creator-only
// (scheme "auth", all permissions for the session's authenticated identity)
// when the client was connected WithAuth, world:anyone otherwise. Every create
// in coord, and in any code that creates znodes through a Client's Conn, uses
// this one accessor, so a crawl created with credentials cannot be read or
// changed by a client without them.
func (c *Client) ACL() []zk.ACL {
	if c.auth != nil {
		return creatorACL
	}
	return openACL
}

// Authenticated reports whether the client was connected WithAuth.
func (c *Client) Authenticated() bool { return c.auth != nil }
