package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestCheckZK(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:2181", "zk1:2181,zk2:2181,zk3:2181/team-a", "[::1]:2181", " a:1 , b:65535 "} {
		if err := CheckZK(ok); err != nil {
			t.Errorf("CheckZK(%q) = %v, want nil", ok, err)
		}
	}
	for in, want := range map[string]string{
		"127.0.0.1:abc":   `port "abc" is not a number`,
		"127.0.0.1:0":     `port "0" is not a number from 1 to 65535`,
		"127.0.0.1:70000": `port "70000"`,
		"127.0.0.1":       `want host:port`,
		":2181":           `the host is empty`,
		"":                `no server given`,
		"/chroot":         `no server given`,
	} {
		err := CheckZK(in)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--zk") {
			t.Errorf("CheckZK(%q) = %v, want a usage error naming --zk and containing %q", in, err, want)
		}
	}
}

func TestZKConnectError(t *testing.T) {
	cause := fmt.Errorf("coord: Connect: no session established (last attempt: connection refused): %w", context.DeadlineExceeded)
	msg := ZKConnectError("127.0.0.1:1", 5*time.Second, cause).Error()
	for _, want := range []string{"cannot reach ZooKeeper at 127.0.0.1:1 within 5s", "--zk", "ZKCRAWL_ZK", "connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message %q spans several lines", msg)
	}
	other := ZKConnectError("h:1", time.Second, errors.New("chroot refused"))
	if !strings.Contains(other.Error(), "h:1") || strings.Contains(other.Error(), "cannot reach") {
		t.Errorf("non-deadline error = %v", other)
	}
}

func TestVersion(t *testing.T) {
	old := buildRevision
	defer func() { buildRevision = old }()
	buildRevision = "0123456789abcdef0123.dirty"
	if v := Version(); !strings.Contains(v, "+0123456789ab.dirty") {
		t.Errorf("Version() = %q, want the revision's first 12 digits and .dirty", v)
	}
	if l := VersionLine("seeder"); !strings.HasPrefix(l, "seeder (zkcrawl) ") || !strings.Contains(l, "revision 0123456789abcdef0123") {
		t.Errorf("VersionLine = %q", l)
	}
	fs := NewFlagSet("crawlctl status", "u", "a", "")
	if err := Parse(fs, []string{"--version"}, func(string) (string, bool) { return "", false }); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--version: Parse = %v, want ErrHelp (exit 0)", err)
	}
}
