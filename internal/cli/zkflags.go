package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
)

// ZKAuthHelp is the --zk-auth flag's help text.
const ZKAuthHelp = "authenticate to ZooKeeper as SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD; " +
	"the crawl's znodes are then created readable and writable by these credentials only, " +
	"and every command of the crawl needs the same value (prefer the environment variable: " +
	"a command line is visible to other local users)"

// ZKTLSHelp is the --zk-tls-ca flag's help text.
const ZKTLSHelp = "connect to ZooKeeper with TLS (the servers' secureClientPort), " +
	"verifying their certificates against the PEM CA certificates in this file; plain TCP when empty"

// ZKFlags adds --zk-auth (env ZKCRAWL_ZK_AUTH) and --zk-tls-ca (env
// ZKCRAWL_ZK_TLS_CA) to fs and returns a function that, once fs is parsed,
// gives the coord.Config they ask for: its Username and Password from
// --zk-auth, its TLS from --zk-tls-ca, the zero Config when both are
// empty; the caller adds its logger and the rest. Its error is a usage
// error naming the flag and the problem, never the credentials.
func ZKFlags(fs *pflag.FlagSet) func() (coord.Config, error) {
	auth := fs.String("zk-auth", "", ZKAuthHelp)
	caFile := fs.String("zk-tls-ca", "", ZKTLSHelp)
	return func() (coord.Config, error) {
		var cfg coord.Config
		if *auth != "" {
			user, pass, err := parseZKAuth(*auth)
			if err != nil {
				return coord.Config{}, Usage("--zk-auth: %v", err)
			}
			cfg.Username, cfg.Password = user, pass
		}
		if *caFile != "" {
			tc, err := zkTLS(*caFile)
			if err != nil {
				return coord.Config{}, Usage("--zk-tls-ca: %v", err)
			}
			cfg.TLS = tc
		}
		return cfg, nil
	}
}

// parseZKAuth parses a --zk-auth value, "SCHEME:CREDENTIALS", into the
// digest user and password of coord.Config (ZooKeeper Programmer's Guide,
// "Builtin ACL Schemes": digest credentials are "USER:PASSWORD", split at
// the first ':'). Errors name the problem, never the credentials: no
// scheme, a scheme other than digest (go-zookeeper has no SASL client),
// digest credentials without "USER:" or with an empty user or password.
func parseZKAuth(spec string) (user, password string, err error) {
	scheme, cred, ok := strings.Cut(spec, ":")
	if !ok || scheme == "" {
		return "", "", fmt.Errorf("want SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD")
	}
	if scheme != "digest" {
		return "", "", fmt.Errorf("auth scheme %q: only digest is supported (go-zookeeper has no SASL)", scheme)
	}
	user, password, ok = strings.Cut(cred, ":")
	if !ok || user == "" || password == "" {
		return "", "", fmt.Errorf("digest credentials want USER:PASSWORD, both non-empty")
	}
	return user, password, nil
}

// zkTLS returns the coord.Config.TLS of a --zk-tls-ca file: its PEM CA
// certificates as the roots, TLS 1.2 at least. Errors: the file
// unreadable, or holding no PEM certificate, naming the file.
func zkTLS(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS CA file %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
