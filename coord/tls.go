package coord

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"
)

// WithTLS returns an Option that makes Connect speak TLS to each server,
// verifying its certificate against the PEM CA bundle in caFile and the
// host name or IP address of the connect string. Use it with servers'
// secureClientPort (ZooKeeper Administrator's Guide, "Quorum TLS" and
// "Client-Server mutual authentication"; server side: Netty connection
// factory and ssl.keyStore). No client certificate is sent. Errors: caFile
// unreadable or holding no PEM certificate (ErrInvalidArgument), naming the
// file.
func WithTLS(caFile string) (Option, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("coord: TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("coord: TLS CA file %s: no PEM certificate in it: %w", caFile, ErrInvalidArgument)
	}
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		d := &tls.Dialer{
			NetDialer: &net.Dialer{Timeout: timeout},
			Config:    &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
		}
		return d.Dial(network, address)
	}
	return func(o *options) { o.dialer = dial }, nil
}
