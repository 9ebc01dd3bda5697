package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// zkConfig parses args with ZKFlags and returns its result.
func zkConfig(t *testing.T, args ...string) (user, pass string, tls bool, err error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	get := ZKFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := get()
	return cfg.Username, cfg.Password, cfg.TLS != nil, err
}

func TestZKFlagsAuth(t *testing.T) {
	if user, pass, _, err := zkConfig(t, "--zk-auth", "digest:crawler:pa:ss"); err != nil || user != "crawler" || pass != "pa:ss" {
		t.Errorf("--zk-auth digest:crawler:pa:ss = %q %q %v, want crawler, pa:ss", user, pass, err)
	}
	if user, pass, tls, err := zkConfig(t); err != nil || user != "" || pass != "" || tls {
		t.Errorf("no flags = %q %q %v %v, want the zero Config", user, pass, tls, err)
	}
	for in, want := range map[string]string{
		"digest":          "SCHEME:CREDENTIALS",
		"sasl:bob":        "only digest",
		"digest:bob":      "USER:PASSWORD",
		"digest::secret":  "USER:PASSWORD",
		"digest:bob:":     "USER:PASSWORD",
		":digest:bob:pwd": "SCHEME:CREDENTIALS",
	} {
		_, _, _, err := zkConfig(t, "--zk-auth", in)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "--zk-auth") || !strings.Contains(err.Error(), want) {
			t.Errorf("--zk-auth %q: %v, want a usage error naming the flag, about %s", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("--zk-auth %q: the error shows the credentials: %v", in, err)
		}
	}
}

func TestZKFlagsTLS(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "missing.pem"): "no such file",
		notPEM:                            "no PEM certificate in it",
	} {
		_, _, _, err := zkConfig(t, "--zk-tls-ca", file)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "--zk-tls-ca") || !strings.Contains(err.Error(), want) {
			t.Errorf("--zk-tls-ca %s: %v, want a usage error naming the flag, about %s", file, err, want)
		}
	}
}
