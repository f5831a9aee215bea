package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// issue returns a PEM certificate and key signed by the CA.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// TestMutualTLSIdentity: over mutual TLS, a client certificate's subject
// CN is the principal when no bearer token is sent.
func TestMutualTLSIdentity(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	dir := t.TempDir()
	ca := newCA(t, "countersign-e2e-ca")
	serverCert, serverKey := ca.issue(t, "countersign", true)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	policyDir := filepath.Join(dir, "policy")
	os.Mkdir(policyDir, 0o755)
	write("policy/authz.rego", []byte("package countersign.authz\n\ndefault allow := false\n\nallow if {\n\tinput.principal.id == \"spark-prod\"\n\tinput.resource.bucket == \"lake\"\n}\n"))
	cfg := baseConfig(t, srv.Port)
	cfg = cfg[:strings.Index(cfg, "policy:\n")] + "policy:\n  paths: [" + quote(policyDir) + "]\n"
	cfg = strings.Replace(cfg, "auth:\n", "auth:\n  mtls_principal: subject-cn\n", 1)
	cfg += "tls:\n  cert_file: " + quote(write("server.pem", serverCert)) + "\n  key_file: " + quote(write("server.key", serverKey)) +
		"\n  client_ca_file: " + quote(write("ca.pem", ca.pem())) + "\n  client_auth: verify-if-given\n"
	cs := startCountersign(t, cfg, secretEnv()...)
	url := strings.Replace(cs.url, "http://", "https://", 1) + "/v1/aws/s3/sign"

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(certPEM, keyPEM []byte) *http.Client {
		tc := &tls.Config{RootCAs: roots}
		if certPEM != nil {
			c, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{c}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	body, _ := json.Marshal(signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()})
	post := func(c *http.Client) (int, string, error) {
		resp, err := c.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	spark, sparkKey := ca.issue(t, "spark-prod", false)
	if st, b, err := post(client(spark, sparkKey)); err != nil || st != http.StatusOK || !strings.Contains(b, "Authorization") {
		t.Fatalf("spark-prod certificate: %d %s %v", st, b, err)
	}
	other, otherKey := ca.issue(t, "spark-dev", false)
	if st, b, err := post(client(other, otherKey)); err != nil || st != http.StatusForbidden {
		t.Fatalf("spark-dev certificate: %d %s %v", st, b, err)
	}
	if st, b, err := post(client(nil, nil)); err != nil || st != http.StatusUnauthorized {
		t.Fatalf("no certificate: %d %s %v", st, b, err)
	}
	rogue := newCA(t, "rogue")
	rc, rk := rogue.issue(t, "spark-prod", false)
	// Go's client withholds a certificate the server's CA list does not
	// name, so the rogue certificate either fails the handshake or never
	// arrives; it must never authenticate.
	if st, b, err := post(client(rc, rk)); err == nil && st != http.StatusUnauthorized {
		t.Fatalf("certificate from another CA accepted: %d %s", st, b)
	}
	// Forced onto the wire, it fails the handshake.
	forced := client(nil, nil)
	forced.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := tls.X509KeyPair(rc, rk)
		return &c, err
	}
	if st, b, err := post(forced); err == nil {
		t.Fatalf("forced rogue certificate accepted: %d %s", st, b)
	}
}
