package cli

import (
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
// gives the coord.Connect options they ask for: coord.WithAuth and
// coord.WithTLS when set, none when empty. Its error is a usage error
// naming the flag and the problem, never the credentials.
func ZKFlags(fs *pflag.FlagSet) func() ([]coord.Option, error) {
	auth := fs.String("zk-auth", "", ZKAuthHelp)
	caFile := fs.String("zk-tls-ca", "", ZKTLSHelp)
	return func() ([]coord.Option, error) {
		var opts []coord.Option
		if *auth != "" {
			opt, err := coord.WithAuth(*auth)
			if err != nil {
				return nil, Usage("--zk-auth: %v", err)
			}
			opts = append(opts, opt)
		}
		if *caFile != "" {
			opt, err := coord.WithTLS(*caFile)
			if err != nil {
				return nil, Usage("--zk-tls-ca: %v", err)
			}
			opts = append(opts, opt)
		}
		return opts, nil
	}
}
