package locks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// certificates writes a CA and a server certificate it signed for
// 127.0.0.1 and localhost; it answers the CA's PEM and the server's files.
func certificates(t *testing.T) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	pemOf := func(kind string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}) }
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leasehold test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pemOf("CERTIFICATE", leafDER), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pemOf("PRIVATE KEY", keyDER), 0o600); err != nil {
		t.Fatal(err)
	}
	return pemOf("CERTIFICATE", caDER), certFile, keyFile
}

// Connect over TLS (leaseholds://) trusting the server's CA with the option CA.
func TestServerConnectOverTLS(t *testing.T) {
	caPEM, cert, key := certificates(t)
	url := strings.Replace(startServer(t, "--tls-cert", cert, "--tls-key", key), "leasehold://", "leaseholds://", 1)
	store := connect(t, url, CA(caPEM))
	lock, _ := OpenLock(store, "l")
	if err := lock.Hold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
		if lease.Fence == 0 {
			return errors.New("no fence")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Connect(ctx, url); err == nil {
		t.Fatal("connected over TLS without trusting the server's CA")
	}
}
