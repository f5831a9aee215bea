package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/testsupport"
)

const (
	testAccessKey = "CSE2EACCESSKEY"
	testSecretKey = "cse2e-secret-key-not-used-anywhere-else"
	testRegion    = "us-east-1"
)

// s3Server is a running S3 server (versitygw unless a test runs on each
// backend), with this module's client helpers.
type s3Server struct{ *testsupport.S3Server }

// startS3 runs versitygw (see testsupport.Servers.StartS3).
func startS3(t testing.TB, extraArgs ...string) *s3Server {
	t.Helper()
	return &s3Server{servers.StartS3(t, extraArgs...)}
}

// backend is an S3 implementation that the signing suite and the oracle
// run against: parser differentials depend on the server.
type backend struct {
	name  testsupport.Backend
	start func(t testing.TB) *s3Server
}

var backends = []backend{
	{testsupport.Versitygw, func(t testing.TB) *s3Server { return startS3(t) }},
	{testsupport.SeaweedFS, func(t testing.TB) *s3Server { return &s3Server{servers.StartSeaweedFS(t)} }},
}

// signerProc is a running countersign as a client sees it: its URL, its
// log, and the bearer token that sign and post send.
type signerProc struct {
	url   string // http://127.0.0.1:PORT
	log   *testsupport.LockedBuffer
	token string // bearer token sign and post send
	cmd   *exec.Cmd
}

// startCountersign writes config (YAML text) and runs `countersign serve
// -config`, signing as defaultToken.
func startCountersign(t testing.TB, config string, env ...string) *signerProc {
	t.Helper()
	p := servers.StartCountersign(t, config, env...)
	return &signerProc{url: p.URL, log: p.Log, token: defaultToken(), cmd: p.Cmd}
}

// baseConfig is a config for a versitygw on port, with the e2e policy and
// a fresh audit directory.
func baseConfig(t testing.TB, port int) string {
	t.Helper()
	return baseConfigAudit(t, port, newAuditDir(t))
}

// baseConfigAudit is baseConfig with the given audit directory.
func baseConfigAudit(t testing.TB, port int, audit *testsupport.AuditDir) string {
	t.Helper()
	policyDir, err := filepath.Abs("testdata/policy")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`listen: 127.0.0.1:0
audit:
  dir: %[7]q
  node_id: e2e
  checkpoint_key_file: %[8]q
  hmac_key_file: %[9]q
  checkpoint_interval: 100ms
auth:
  issuer: %[4]s
  audience: [%[5]s]
  jwks_file: %[6]q
endpoints:
  - name: versitygw
    scheme: http
    host: localhost
    port: %[1]d
    virtual_host_domain: localhost   # versitygw runs with --virtual-domain localhost
    regions: [us-east-1]
  - name: versitygw-ip
    scheme: http
    host: 127.0.0.1
    port: %[1]d
    addressing: path
    regions: [us-east-1]
credentials:
  source: static
  access_key_id: %[2]s
policy:
  paths: [%[3]q]
`, port, testAccessKey, policyDir, testIssuer, testAudience, testIdP.WriteJWKS(t), audit.Dir, audit.SignerKeyFile, audit.HMACKeyFile)
}

// secretEnv passes the secret the way operators should: via environment.
func secretEnv() []string {
	return []string{"COUNTERSIGN_SECRET_ACCESS_KEY=" + testSecretKey}
}

// signRequest is the JSON body of a RemoteSignRequest.
type signRequest struct {
	Region     string              `json:"region"`
	URI        string              `json:"uri"`
	Method     string              `json:"method"`
	Headers    map[string][]string `json:"headers"`
	Properties map[string]string   `json:"properties,omitempty"`
	Body       *string             `json:"body,omitempty"`
}

type signResult struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}

type icebergError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// as returns a view of p that authenticates with token ("" sends none).
func (p *signerProc) as(token string) *signerProc {
	c := *p
	c.token = token
	return &c
}

// sign POSTs a sign request. It returns the status, the decoded result (on
// 200) or error (otherwise), and the response's Cache-Control.
func (p *signerProc) sign(t testing.TB, route string, sr signRequest) (int, *signResult, *icebergError, http.Header) {
	t.Helper()
	body, err := json.Marshal(sr)
	if err != nil {
		t.Fatal(err)
	}
	return p.post(t, route, body)
}

func (p *signerProc) post(t testing.TB, route string, body []byte) (int, *signResult, *icebergError, http.Header) {
	t.Helper()
	if route == "" {
		route = "/v1/aws/s3/sign"
	}
	req, err := http.NewRequest("POST", p.url+route, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		var res signResult
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatalf("sign response is not JSON: %v\n%s", err, data)
		}
		return resp.StatusCode, &res, nil, resp.Header
	}
	var ie icebergError
	if err := json.Unmarshal(data, &ie); err != nil {
		t.Fatalf("error response (%d) is not Iceberg's error model: %v\n%s", resp.StatusCode, err, data)
	}
	if ie.Error.Code != resp.StatusCode || ie.Error.Message == "" || ie.Error.Type == "" {
		t.Fatalf("error response (%d) incomplete: %s", resp.StatusCode, data)
	}
	return resp.StatusCode, nil, &ie, resp.Header
}

// httpClient sends requests to versitygw for any host name by dialing the
// loopback port directly, so "lake.localhost:PORT" works without DNS.
func (s *s3Server) httpClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: s.LoopbackTransport()}
}

// send performs the signed request exactly as a client would: the returned
// URI and headers, and the body.
func (s *s3Server) send(t testing.TB, method, uri string, headers map[string][]string, body []byte) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, uri, rd)
	if err != nil {
		t.Fatal(err)
	}
	// Send the path exactly as given, without Go re-escaping it.
	if u, ok := strings.CutPrefix(uri, "http://"); ok {
		if i := strings.IndexByte(u, '/'); i >= 0 {
			req.URL.Opaque = "//" + u[:i] + strings.SplitN(u[i:], "?", 2)[0]
		}
	}
	for name, values := range headers {
		switch strings.ToLower(name) {
		case "host":
			req.Host = values[0]
			continue
		case "content-length":
			continue // set from the body by net/http
		}
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	req.ContentLength = int64(len(body))
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// startCountersignWithPolicy starts countersign on baseConfig with policy
// (one authz.rego) in place of the shipped test policy.
func startCountersignWithPolicy(t testing.TB, port int, policy string) *signerProc {
	t.Helper()
	policyDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(policyDir, "authz.rego"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	shipped, _ := filepath.Abs("testdata/policy")
	cfg := baseConfig(t, port)
	if !strings.Contains(cfg, fmt.Sprintf("%q", shipped)) {
		t.Fatal("base configuration's policy path not found; update this test")
	}
	return startCountersign(t, strings.Replace(cfg, fmt.Sprintf("%q", shipped), fmt.Sprintf("%q", policyDir), 1), secretEnv()...)
}
