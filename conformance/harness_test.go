package conformance

// The processes come from testsupport (shared with the e2e module); this
// file holds this module's keys and configuration, and its clients of the
// storage for independent checks.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/countersign/countersign/conformance/remotesigning"
	"github.com/countersign/countersign/testsupport"
)

const (
	testAccessKey = "CSCONFACCESSKEY"
	testSecretKey = "csconf-secret-key-not-used-anywhere-else"
	testRegion    = "us-east-1"
)

// s3Server is a running versitygw, with this module's client helpers.
type s3Server struct{ *testsupport.S3Server }

// startS3 runs versitygw (see testsupport.Servers.StartS3).
func startS3(t testing.TB, extraArgs ...string) *s3Server {
	t.Helper()
	return &s3Server{servers.StartS3(t, extraArgs...)}
}

// endpoint is the S3 endpoint clients use; countersign's configuration
// allows it in path-style and virtual-hosted addressing.
func (s *s3Server) endpoint() string { return fmt.Sprintf("http://localhost:%d", s.Port) }

// httpClient sends requests for any host name ("lake.localhost:PORT"
// included) to versitygw's loopback port, so no name resolution is needed.
func (s *s3Server) httpClient() *http.Client {
	tr := s.LoopbackTransport()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Timeout: 2 * time.Minute, Transport: tr}
}

// readSigned has signer sign a GET of location (s3://bucket/key, a table's
// metadata file) on s's path-style endpoint and sends it as signed: the
// store's status and body, or the signer's error.
func (s *s3Server) readSigned(ctx context.Context, t testing.TB, signer *remotesigning.Client, location string) (int, []byte, error) {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "s3" {
		t.Fatalf("not an s3:// location: %q", location)
	}
	res, err := signer.Sign(ctx, remotesigning.Request{Region: testRegion, Method: "GET", Provider: "s3",
		URI: fmt.Sprintf("http://127.0.0.1:%d/%s%s", s.Port, u.Host, u.Path), Headers: map[string][]string{}})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", res.URI, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range res.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body, nil
}

func (s *s3Server) adminPut(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	_, err := s.AdminClient().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("admin put %s: %v", key, err)
	}
}

func (s *s3Server) adminGet(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := s.AdminClient().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("admin get %s: %v", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (s *s3Server) adminExists(t testing.TB, bucket, key string) bool {
	t.Helper()
	_, err := s.AdminClient().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

// adminList returns every key under prefix, sorted.
func (s *s3Server) adminList(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.AdminClient(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("admin list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	return keys
}

// signerProc is a running countersign as a client sees it.
type signerProc struct {
	url string // http://127.0.0.1:PORT
	log *testsupport.LockedBuffer
	// stop sends SIGINT, which countersign handles as SIGTERM (finish
	// in-flight requests, seal the audit segment with a final checkpoint),
	// and waits for the process (killing it after 10 s); the test's cleanup
	// calls it too. Nil for a signerProc that does not own a process.
	stop func()
}

// startCountersign writes config (YAML text) and runs `countersign serve
// -config`. A failed test logs countersign's output.
func startCountersign(t testing.TB, config string, env ...string) *signerProc {
	t.Helper()
	p := servers.StartCountersign(t, config, env...)
	t.Cleanup(func() {
		p.Stop() // first, so the log is complete
		if t.Failed() {
			t.Logf("countersign log:\n%s", p.Log.String())
		}
	})
	return &signerProc{url: p.URL, log: p.Log, stop: p.Stop}
}

// newAuditDir makes an audit directory's keys, named for this module.
func newAuditDir(t testing.TB) *testsupport.AuditDir {
	t.Helper()
	return testsupport.NewAuditDir(t, "countersign-conformance")
}

// baseConfig is a countersign config for a versitygw on port, with the
// conformance policy (testdata/policy) and a fresh audit log, plus extra
// YAML lines.
func baseConfig(t testing.TB, port int, extra string) string {
	t.Helper()
	config, _ := baseConfigWithAudit(t, port, extra)
	return config
}

// baseConfigWithAudit is baseConfig, also returning the audit directory
// and keys the configuration names.
func baseConfigWithAudit(t testing.TB, port int, extra string) (string, *testsupport.AuditDir) {
	t.Helper()
	policyDir, err := filepath.Abs("testdata/policy")
	if err != nil {
		t.Fatal(err)
	}
	audit := newAuditDir(t)
	return fmt.Sprintf(`listen: 127.0.0.1:0
audit:
  dir: %[7]q
  node_id: conformance
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
credentials:
  source: static
  access_key_id: %[2]s
policy:
  paths: [%[3]q]
`, port, testAccessKey, policyDir, testIssuer, testAudience, testIdP.WriteJWKS(t), audit.Dir, audit.SignerKeyFile, audit.HMACKeyFile) + extra, audit
}

// secretEnv passes the storage secret through the environment.
func secretEnv() []string {
	return []string{"COUNTERSIGN_SECRET_ACCESS_KEY=" + testSecretKey}
}

// wrongSecretEnv makes countersign sign with a secret versitygw does not
// know for the access key.
func wrongSecretEnv() []string {
	return []string{"COUNTERSIGN_SECRET_ACCESS_KEY=" + testSecretKey + "-wrong"}
}
