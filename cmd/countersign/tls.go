package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSConfig serves the sign API over TLS, optionally verifying client
// certificates (mutual TLS; auth.mtls_principal can then take the
// principal from the certificate).
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile holds the CAs client certificates must chain to.
	ClientCAFile string `yaml:"client_ca_file"`
	// ClientAuth is "none" (default), "verify-if-given" or "require".
	ClientAuth string `yaml:"client_auth"`
}

func (c *TLSConfig) enabled() bool { return c.CertFile != "" || c.KeyFile != "" }

// build returns the listener's tls.Config, or nil when TLS is off. Errors
// name the key.
func (c *TLSConfig) build() (*tls.Config, error) {
	if !c.enabled() {
		if c.ClientCAFile != "" || (c.ClientAuth != "" && c.ClientAuth != "none") {
			return nil, fmt.Errorf("config: tls.client_ca_file and tls.client_auth need tls.cert_file and tls.key_file")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("config: tls.cert_file/tls.key_file: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	switch c.ClientAuth {
	case "", "none":
		if c.ClientCAFile != "" {
			return nil, fmt.Errorf("config: tls.client_ca_file is set but tls.client_auth is none")
		}
		return cfg, nil
	case "verify-if-given":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "require":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("config: tls.client_auth must be none, verify-if-given or require, not %q", c.ClientAuth)
	}
	pem, err := os.ReadFile(c.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("config: tls.client_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("config: tls.client_ca_file: no PEM certificates in %s", c.ClientCAFile)
	}
	cfg.ClientCAs = pool
	return cfg, nil
}
