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

// ZKAuthFlag adds --zk-auth (env ZKCRAWL_ZK_AUTH) to fs and returns a
// function that, once fs is parsed, gives the coord.Connect options it asks
// for: coord.WithAuth when set, none when empty. Its error is a usage error
// naming the flag and the problem, never the credentials.
func ZKAuthFlag(fs *pflag.FlagSet) func() ([]coord.Option, error) {
	auth := fs.String("zk-auth", "", ZKAuthHelp)
	return func() ([]coord.Option, error) {
		if *auth == "" {
			return nil, nil
		}
		a, err := coord.ParseAuth(*auth)
		if err != nil {
			return nil, Usage("--zk-auth: %v", err)
		}
		return []coord.Option{coord.WithAuth(a)}, nil
	}
}
