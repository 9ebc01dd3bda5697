package coord_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/testenv"
)

// writeTestPKI writes a CA certificate (ca.pem) and a server key plus
// certificate for 127.0.0.1 signed by it (server.pem, the PEM key store
// ZooKeeper reads) into dir.
func writeTestPKI(t *testing.T, dir string) (caFile, keyStore string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zkcrawl test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caTmpl, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile, keyStore = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	ks := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})...)
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyStore, ks, 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, keyStore
}

// freePort returns a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// caTLS returns a Config.TLS trusting the PEM CA certificate in caFile.
func caTLS(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("%s: no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool}
}

// A client with Config.TLS talks to ZooKeeper's secureClientPort (Netty, a
// PEM key store) and works; one trusting another CA fails the handshake and
// never gets a session.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	caFile, keyStore := writeTestPKI(t, dir)
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Debian's zookeeper.jar lists only part of Netty on its class path;
	// the TLS handler needs the codec and resolver jars too.
	cp := testenv.DefaultClassPath + ":/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"
	srv, err := testenv.StartZooKeeper(ctx, testenv.ZKConfig{ClassPath: cp, ExtraConfig: []string{
		"secureClientPort=" + strconv.Itoa(port),
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + keyStore,
		"ssl.keyStore.type=PEM",
		"ssl.clientAuth=none",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c, err := coord.Connect(ctx, addr, coord.Config{TLS: caTLS(t, caFile), Logger: testenv.Logger()})
	if err != nil {
		t.Fatalf("TLS connect: %v", err)
	}
	if _, err := coord.Store(c, "/tls-check").Write(ctx, []byte("ok"), -1); err != nil {
		t.Errorf("write over TLS: %v", err)
	}
	c.Close()

	otherCA, _ := writeTestPKI(t, t.TempDir())
	short, cancel2 := context.WithTimeout(ctx, 3*time.Second)
	defer cancel2()
	if c, err := coord.Connect(short, addr, coord.Config{TLS: caTLS(t, otherCA), Logger: testenv.Logger()}); err == nil {
		c.Close()
		t.Error("connected with a CA that did not sign the server's certificate")
	}
}
