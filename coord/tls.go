package coord

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// tlsDialer returns the dialer of Config.TLS: a TLS connection to each
// server, verified against cfg.RootCAs and, unless cfg.ServerName is set,
// the server's host from the connect string; TLS 1.2 at least unless cfg
// asks for more. No client certificate is sent unless cfg carries one.
func tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		if c.MinVersion < tls.VersionTLS12 {
			c.MinVersion = tls.VersionTLS12
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: c}
		return d.Dial(network, address)
	}
}
