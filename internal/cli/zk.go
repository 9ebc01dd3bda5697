package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// CheckZK validates a --zk connect string before anything dials:
// "host:port[,host:port...][/chroot]" (the ZooKeeper client's connect string
// format, ZooKeeper Programmer's Guide, "Connecting to ZooKeeper"), every
// port a number 1..65535. It returns a usage error naming --zk and the
// offending server, so "--zk 127.0.0.1:abc" is rejected at once instead of
// being retried until a timeout.
func CheckZK(s string) error {
	hostPart := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hostPart = s[:i]
	}
	n := 0
	for _, h := range strings.Split(hostPart, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			return Usage("--zk %q: server %q: want host:port", s, h)
		}
		if host == "" {
			return Usage("--zk %q: server %q: the host is empty", s, h)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return Usage("--zk %q: server %q: port %q is not a number from 1 to 65535", s, h, port)
		}
		n++
	}
	if n == 0 {
		return Usage("--zk %q: no server given; want host:port[,host:port...][/chroot]", s)
	}
	return nil
}

// ZKConnectError turns a failed connect to the ZooKeeper ensemble servers
// (tried for waited) into one line an operator can act on: the address, how
// long it was tried, the last connection error, and the flag that fixes it
// (--zk, or ZKCRAWL_ZK). Errors other than a deadline (a cancelled context,
// a rejected chroot) are only prefixed with the address.
func ZKConnectError(servers string, waited time.Duration, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot reach ZooKeeper at %s within %v: check that it runs there, or fix --zk (or %s): %w",
			servers, waited, EnvName("zk"), err)
	}
	return fmt.Errorf("connect to ZooKeeper %s: %w", servers, err)
}
