package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/signer"
)

// Development mode (serve -dev): everything a local try-out needs, generated
// at start, printed once, and never meant for production.
const (
	devIssuer   = "countersign-dev"
	devAudience = "countersign"
	devSubject  = "dev"
	devTokenTTL = 24 * time.Hour
)

// devConfig is serve -dev's embedded default: a local S3-compatible server
// on port 7070 (e.g. versitygw, started as it prints: without a virtual-host
// domain, so path-style only), region us-east-1, HS256 dev tokens, the
// embedded dev policy.
func devConfig() Config {
	return Config{
		Listen: "127.0.0.1:8181",
		Auth:   auth.Config{Issuer: devIssuer, Audience: []string{devAudience}},
		Endpoints: []s3req.Endpoint{
			{Name: "dev", Scheme: "http", Host: "localhost", Port: 7070, Regions: []string{"us-east-1"}},
			{Name: "dev-ip", Scheme: "http", Host: "127.0.0.1", Port: 7070, Addressing: s3req.AddressingPath, Regions: []string{"us-east-1"}},
		},
		Credentials: signer.CredentialsConfig{Source: "static"},
	}
}

// fillDevSecrets generates what -dev needs and the configuration left out:
// throwaway signing keys, a token secret, and an audit log with its own
// keys in a temporary directory, so -dev never needs a secret or a file.
func fillDevSecrets(cfg *Config) error {
	if cfg.Audit.Dir == "" {
		dir, err := os.MkdirTemp("", "countersign-dev-")
		if err != nil {
			return err
		}
		signerKey, verifierKey, hmacKey, err := audit.GenerateKeys("countersign-dev")
		if err != nil {
			return err
		}
		cfg.Audit.Dir = filepath.Join(dir, "audit")
		cfg.Audit.CheckpointKeyFile = filepath.Join(dir, "checkpoint.key")
		cfg.Audit.HMACKeyFile = filepath.Join(dir, "hmac.key")
		for name, content := range map[string]string{
			cfg.Audit.CheckpointKeyFile:          signerKey,
			cfg.Audit.HMACKeyFile:                hmacKey,
			filepath.Join(dir, "checkpoint.pub"): verifierKey,
		} {
			if err := os.WriteFile(name, []byte(content+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	if cfg.Credentials.Source == "static" && cfg.Credentials.AccessKeyID == "" {
		cfg.Credentials.AccessKeyID = "CSDEV" + strings.ToUpper(randomHex(8))
		cfg.Credentials.SecretAccessKey = randomHex(20)
	}
	if !cfg.Auth.Enabled() {
		cfg.Auth.HS256Secret = randomHex(32)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// devToken mints the printed development token with the dev secret.
func devToken(cfg Config) (string, error) {
	tok, err := jwt.NewBuilder().
		Issuer(cfg.Auth.Issuer).
		Audience(cfg.Auth.Audience).
		Subject(devSubject).
		IssuedAt(time.Now()).
		Expiration(time.Now().Add(devTokenTTL)).
		Claim("groups", []string{"dev"}).
		Build()
	if err != nil {
		return "", err
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256(), []byte(cfg.Auth.HS256Secret)))
	if err != nil {
		return "", fmt.Errorf("minting the dev token: %w", err)
	}
	return string(signed), nil
}

func printDevBanner(w io.Writer, cfg Config, addr string) error {
	ep := cfg.Endpoints[0]
	fmt.Fprintf(w, `
countersign is running in DEVELOPMENT mode. Do not use it in production:
it signs with development credentials under an example policy that lets
any authenticated caller use the "warehouse" bucket.

  sign endpoint : http://%[1]s/v1/aws/s3/sign
  S3 endpoint   : %[2]s://%[3]s:%[4]d (regions %[5]s)
  audit log     : %[6]s
                  countersign audit verify -dir %[6]s %[7]s
`, addr, ep.Scheme, ep.Host, ep.Port, strings.Join(ep.Regions, ","), cfg.Audit.Dir, verifierFlag(cfg.Audit.CheckpointKeyFile))
	if strings.HasPrefix(cfg.Credentials.AccessKeyID, "CSDEV") {
		fmt.Fprintf(w, `
Generated signing credentials (start your dev S3 server with them):
  access key id : %s
  secret key    : %s
  e.g. versitygw --access %[1]s --secret %[2]s --port 127.0.0.1:%[3]d posix /tmp/s3data
`, cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, ep.Port)
	}
	token := ""
	if cfg.Auth.HS256Secret != "" {
		var err error
		if token, err = devToken(cfg); err != nil {
			return err
		}
		fmt.Fprintf(w, `
Development bearer token (subject %q, group "dev", valid %s):
  %s
`, devSubject, devTokenTTL, token)
	}
	fmt.Fprintf(w, `
Iceberg catalog properties (Spark/Java):
  s3.remote-signing-enabled=true
  s3.signer.uri=http://%[1]s
  s3.endpoint=%[2]s://%[3]s:%[4]d
  s3.path-style-access=true
  token=%[5]s
PyIceberg (signing works only through its fsspec FileIO):
  py-io-impl=pyiceberg.io.fsspec.FsspecFileIO
  s3.signer=S3V4RestSigner
  s3.signer.uri=http://%[1]s
  s3.endpoint=%[2]s://%[3]s:%[4]d
  token=%[5]s

`, addr, ep.Scheme, ep.Host, ep.Port, token)
	return nil
}

// verifierFlag is the banner's verifier key argument for audit verify:
// the checkpoint.pub that keygen (and -dev's generated setup) writes next
// to the checkpoint key, else the key itself, derived from the checkpoint
// key (public: printing it is harmless).
func verifierFlag(checkpointKeyFile string) string {
	pub := filepath.Join(filepath.Dir(checkpointKeyFile), "checkpoint.pub")
	if _, err := os.Stat(pub); err == nil {
		return "-pubkey " + pub
	}
	if b, err := os.ReadFile(checkpointKeyFile); err == nil {
		if key, err := audit.VerifierKey(string(b)); err == nil {
			return "-pubkey-text " + key
		}
	}
	return "-pubkey-text \"$(countersign audit pubkey -key " + checkpointKeyFile + ")\""
}
