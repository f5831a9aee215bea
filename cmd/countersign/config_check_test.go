package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkTestEnv keeps the machine's environment out of config check: no
// COUNTERSIGN_* overrides, no AWS shared configuration or profile.
func checkTestEnv(t *testing.T) {
	t.Helper()
	for _, o := range envOverrides(&Config{}) {
		t.Setenv(o.name, "")
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "missing-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "missing-credentials"))
}

// runCheck writes text to a file and runs "config check" on it.
func runCheck(t *testing.T, text string, flags ...string) (code int, stdout, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	code = runConfigCheck(context.Background(), append(flags, path), &o, &e)
	return code, o.String(), e.String()
}

// checkTestValid is a complete configuration that needs no network, no
// files and no AWS environment. The broken cases edit one line of it.
const checkTestValid = `listen: 0.0.0.0:8181
auth:
  issuer: https://idp.example.com/
  audience: [countersign]
  jwks_file: /etc/countersign/jwks.json
  leeway: 30s
endpoints:
  - name: aws
    aws: true
    regions: [us-east-1]
  - name: internal
    scheme: https
    host: s3.internal.example
    regions: [us-east-1]
credentials:
  source: default
policy:
  paths: [/nonexistent/policy]
audit:
  dir: /var/lib/countersign/audit
  checkpoint_key_file: /etc/countersign/audit/checkpoint.key
  hmac_key_file: /etc/countersign/audit/hmac.key
limits:
  read_timeout: 10s
  max_body_bytes: 1114112
`

func TestConfigCheckExamplePasses(t *testing.T) {
	checkTestEnv(t)
	var o, e bytes.Buffer
	code := runConfigCheck(context.Background(), []string{"../../deploy/countersign.example.yaml"}, &o, &e)
	if code != 0 || o.String() != "ok\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, o.String(), e.String())
	}
	// The base configuration is valid too, and the policy it names is
	// not loaded (it does not exist).
	if code, out, errOut := runCheck(t, checkTestValid); code != 0 || out != "ok\n" {
		t.Fatalf("valid base: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestConfigCheckNamesTheKey(t *testing.T) {
	checkTestEnv(t)
	dir := t.TempDir()
	cert, key := checkTestCert(t, dir)
	cases := []struct {
		name    string
		old     string // replaced in checkTestValid
		new     string
		want    []string // all must appear in the error
		wantNot string
	}{
		{name: "unknown key with line",
			old: "  read_timeout: 10s\n", new: "  read_timeout: 10s\n  max_body: 3\n",
			want: []string{`[25:3] unknown field "max_body"`}},
		{name: "unknown top-level key with line",
			old: "listen: 0.0.0.0:8181\n", new: "listen: 0.0.0.0:8181\nendpoint: []\n",
			want: []string{`[2:1] unknown field "endpoint"`}},
		{name: "bad endpoint scheme",
			old: "    scheme: https\n", new: "    scheme: ftp\n",
			want: []string{"endpoints[1]", "scheme", `"ftp"`}},
		{name: "virtual addressing without the server's domain",
			old: "    host: s3.internal.example\n", new: "    host: s3.internal.example\n    addressing: virtual\n",
			want: []string{"endpoints[1]", "virtual_host_domain", "addressing: path"}},
		{name: "virtual_host_domain not a host name",
			old: "    host: s3.internal.example\n", new: "    host: s3.internal.example\n    virtual_host_domain: S3.Internal\n",
			want: []string{"endpoints[1]", "virtual_host_domain", `"S3.Internal"`}},
		{name: "bad endpoint region",
			old: "    regions: [us-east-1]\n  - name: internal", new: "    regions: [US_EAST]\n  - name: internal",
			want: []string{"endpoints[0]", "region", `"US_EAST"`}},
		{name: "missing auth",
			old: "auth:\n  issuer: https://idp.example.com/\n  audience: [countersign]\n  jwks_file: /etc/countersign/jwks.json\n  leeway: 30s\n", new: "",
			want: []string{"auth.jwks_url", "auth.mtls_principal"}},
		{name: "auth key sources combined",
			old: "  jwks_file: /etc/countersign/jwks.json\n", new: "  jwks_file: /etc/countersign/jwks.json\n  jwks_url: https://idp.example.com/jwks\n",
			want: []string{"auth.jwks_url", "auth.jwks_file", "mutually exclusive"}},
		{name: "negative duration",
			old: "  leeway: 30s\n", new: "  leeway: -1s\n",
			want: []string{"auth.leeway"}},
		{name: "policy paths and bundle",
			old: "  paths: [/nonexistent/policy]\n", new: "  paths: [/nonexistent/policy]\n  bundle:\n    url: https://bundles.example.com/b.tar.gz\n",
			want: []string{"policy", "paths, bundle.url, bundle.file"}},
		{name: "no policy",
			old: "policy:\n  paths: [/nonexistent/policy]\n", new: "",
			want: []string{"policy.paths", "policy.bundle"}},
		{name: "bad tls.client_auth",
			old: "limits:\n", new: "tls:\n  cert_file: " + cert + "\n  key_file: " + key + "\n  client_ca_file: " + cert + "\n  client_auth: optional\nlimits:\n",
			want: []string{"tls.client_auth", `"optional"`}},
		{name: "tls client_auth without certificate",
			old: "limits:\n", new: "tls:\n  client_auth: require\nlimits:\n",
			want: []string{"tls.client_auth", "tls.cert_file"}},
		{name: "bad duration",
			old: "  read_timeout: 10s\n", new: "  read_timeout: 10 seconds\n",
			want: []string{"[24:17] limits.read_timeout", `"10 seconds"`}},
		{name: "duration without unit",
			old: "  read_timeout: 10s\n", new: "  read_timeout: 10\n",
			want: []string{"[24:17] limits.read_timeout", "not a duration"}},
		{name: "wrong type",
			old: "  max_body_bytes: 1114112\n", new: "  max_body_bytes: 1MiB\n",
			want: []string{"[25:19]", "max_body_bytes"}},
		{name: "missing audit",
			old: "audit:\n  dir: /var/lib/countersign/audit\n", new: "audit:\n",
			want: []string{"audit.dir is required"}},
		{name: "bad audit duration",
			old: "  dir: /var/lib/countersign/audit\n", new: "  dir: /var/lib/countersign/audit\n  segment_max_age: 1 hour\n",
			want: []string{"audit.segment_max_age", `"1 hour"`}},
		{name: "audit value out of range",
			old: "  dir: /var/lib/countersign/audit\n", new: "  dir: /var/lib/countersign/audit\n  segment_max_age: 10ms\n",
			want: []string{"audit.segment_max_age"}},
		{name: "credentials key for another source",
			old: "  source: default\n", new: "  source: default\n  role_arn: arn:aws:iam::123456789012:role/x\n",
			want: []string{"credentials.role_arn", "assume-role"}},
		{name: "credentials source",
			old: "  source: default\n", new: "  source: instance\n",
			want: []string{"credentials.source", `"instance"`}},
		{name: "listen without port",
			old: "listen: 0.0.0.0:8181\n", new: "listen: 0.0.0.0\n",
			want: []string{"config: listen", "host:port"}},
		{name: "request timeout not below the shutdown grace period",
			old: "  read_timeout: 10s\n", new: "  read_timeout: 10s\n  request_timeout: 1m\n",
			want: []string{"limits.request_timeout (1m0s)", "limits.shutdown_grace_period (30s)"}},
		{name: "listen missing",
			old: "listen: 0.0.0.0:8181\n", new: "",
			want: []string{"listen is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(checkTestValid, tc.old) {
				t.Fatalf("case edits %q, which the base configuration lacks", tc.old)
			}
			text := strings.Replace(checkTestValid, tc.old, tc.new, 1)
			code, out, errOut := runCheck(t, text)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and no stdout", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error does not contain %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestConfigCheckAppliesEnvironment(t *testing.T) {
	checkTestEnv(t)
	// A static key from the environment with source "default" is the
	// half-edited configuration serve refuses.
	t.Setenv("COUNTERSIGN_ACCESS_KEY_ID", "AKIAEXAMPLE")
	code, _, errOut := runCheck(t, checkTestValid)
	if code != 1 || !strings.Contains(errOut, "credentials.access_key_id") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	static := strings.Replace(checkTestValid, "  source: default\n", "  source: static\n", 1)
	t.Setenv("COUNTERSIGN_ACCESS_KEY_ID", "")
	if code, _, errOut := runCheck(t, static); code != 1 || !strings.Contains(errOut, "credentials.access_key_id is required") {
		t.Fatalf("static without keys: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("COUNTERSIGN_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("COUNTERSIGN_SECRET_ACCESS_KEY", "secret")
	if code, _, errOut := runCheck(t, static); code != 0 {
		t.Fatalf("static with keys from the environment: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigCheckTLS(t *testing.T) {
	checkTestEnv(t)
	cert, key := checkTestCert(t, t.TempDir())
	text := strings.Replace(checkTestValid, "limits:\n", "tls:\n  cert_file: "+cert+"\n  key_file: "+key+"\n  client_ca_file: "+cert+"\n  client_auth: require\nlimits:\n", 1)
	if code, _, errOut := runCheck(t, text); code != 0 {
		t.Fatalf("valid mutual TLS: exit %d, stderr %q", code, errOut)
	}
	missing := strings.Replace(text, "cert_file: "+cert, "cert_file: "+cert+".missing", 1)
	if code, _, errOut := runCheck(t, missing); code != 1 || !strings.Contains(errOut, "tls.cert_file") {
		t.Fatalf("missing certificate: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigCheckLoadPolicy(t *testing.T) {
	checkTestEnv(t)
	lib, err := filepath.Abs("../../deploy/policies/lib")
	if err != nil {
		t.Fatal(err)
	}
	combined, err := filepath.Abs("../../deploy/policies/combined")
	if err != nil {
		t.Fatal(err)
	}
	good := strings.Replace(checkTestValid, "/nonexistent/policy", lib+", "+combined, 1)
	if code, out, errOut := runCheck(t, good, "-load-policy"); code != 0 || out != "ok\n" {
		t.Fatalf("shipped policy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	vending, err := filepath.Abs("../../deploy/policies/vending")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCheck(t, strings.Replace(checkTestValid, "/nonexistent/policy", lib+", "+vending, 1), "-load-policy"); code != 0 || out != "ok\n" {
		t.Fatalf("shipped vending example: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Flags may follow the file too.
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(good), 0o600)
	var o, e bytes.Buffer
	if code := runConfigCheck(context.Background(), []string{path, "-load-policy"}, &o, &e); code != 0 {
		t.Fatalf("flag after file: exit %d, stderr %q", code, e.String())
	}

	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "authz.rego"), []byte("package countersign.authz\n\nallow if {\n"), 0o600)
	bad := strings.Replace(checkTestValid, "/nonexistent/policy", broken, 1)
	// Without -load-policy the policy is not read...
	if code, _, errOut := runCheck(t, bad); code != 0 {
		t.Fatalf("policy not loaded without -load-policy: exit %d, stderr %q", code, errOut)
	}
	// ...with it, a compile error fails the check and names the file.
	code, _, errOut := runCheck(t, bad, "-load-policy")
	if code != 1 || !strings.Contains(errOut, "authz.rego") {
		t.Fatalf("broken policy: exit %d, stderr %q", code, errOut)
	}
	// A missing path is an error only when loading.
	if code, _, errOut := runCheck(t, checkTestValid, "-load-policy"); code != 1 || !strings.Contains(errOut, "/nonexistent/policy") {
		t.Fatalf("missing policy path: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigCheckUsage(t *testing.T) {
	var o, e bytes.Buffer
	for _, args := range [][]string{nil, {"a.yaml", "b.yaml"}, {"-nope", "a.yaml"}} {
		o.Reset()
		e.Reset()
		if code := runConfigCheck(context.Background(), args, &o, &e); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code := runConfigCheck(context.Background(), []string{filepath.Join(t.TempDir(), "missing.yaml")}, &o, &e); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	if code := runConfigCmd(context.Background(), []string{"lint"}, &o, &e); code != 2 {
		t.Errorf("unknown subcommand: exit %d, want 2", code)
	}
	if code := runConfigCmd(context.Background(), nil, &o, &e); code != 2 {
		t.Errorf("no subcommand: exit %d, want 2", code)
	}
}

// checkTestCert writes a self-signed ECDSA certificate and key (PEM) to
// dir, usable as listener certificate and client CA alike.
func checkTestCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "countersign-check-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
