package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const (
	testAccessKey = "CSE2EACCESSKEY"
	testSecretKey = "cse2e-secret-key-not-used-anywhere-else"
	testRegion    = "us-east-1"
)

// s3Server is a running versitygw.
type s3Server struct {
	port int
	dir  string
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startS3 runs versitygw on a free loopback port with a fresh posix root,
// virtual-hosted buckets under "localhost", and stops it when the test ends.
func startS3(t testing.TB, extraArgs ...string) *s3Server {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		args := append([]string{"--access", testAccessKey, "--secret", testSecretKey,
			"--port", fmt.Sprintf("127.0.0.1:%d", port), "--virtual-domain", "localhost", "--quiet"}, extraArgs...)
		args = append(args, "posix", data)
		cmd := exec.Command(versitygwBin, args...)
		var logBuf lockedBuffer
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := waitPort(port, 10*time.Second); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			lastErr = fmt.Errorf("versitygw did not start: %v\n%s", err, logBuf.String())
			continue
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		return &s3Server{port: port, dir: dir}
	}
	t.Fatal(lastErr)
	return nil
}

func waitPort(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// adminClient talks to versitygw directly with the storage keys, for test
// setup (creating buckets) and for checking results independently of
// countersign.
func (s *s3Server) adminClient() *s3.Client {
	return s3.New(s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(fmt.Sprintf("http://127.0.0.1:%d", s.port)),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
	})
}

func (s *s3Server) createBucket(t testing.TB, name string) {
	t.Helper()
	_, err := s.adminClient().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
}

// signerProc is a running countersign.
type signerProc struct {
	url   string // http://127.0.0.1:PORT
	log   *lockedBuffer
	token string // bearer token sign and post send
	cmd   *exec.Cmd
}

// startCountersign writes config (YAML text; "POLICY" is replaced with the
// policy directory) and runs `countersign serve -config`.
func startCountersign(t testing.TB, config string, env ...string) *signerProc {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "countersign.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(countersignBin, "serve", "-config", cfgPath)
	cmd.Env = append(os.Environ(), env...)
	logBuf := &lockedBuffer{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = logBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			logBuf.WriteString(line + "\n")
			if sent {
				continue
			}
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "countersign serving" {
				addrc <- rec.Addr
				sent = true
			}
		}
		close(addrc)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	select {
	case addr, ok := <-addrc:
		if !ok {
			t.Fatalf("countersign exited before serving:\n%s", logBuf.String())
		}
		return &signerProc{url: "http://" + addr, log: logBuf, token: defaultToken(), cmd: cmd}
	case <-time.After(60 * time.Second):
		t.Fatalf("countersign did not start:\n%s", logBuf.String())
	}
	return nil
}

// baseConfig is a config for a versitygw on port, with the e2e policy and
// a fresh audit directory.
func baseConfig(t testing.TB, port int) string {
	t.Helper()
	return baseConfigAudit(t, port, newAuditDir(t))
}

// baseConfigAudit is baseConfig with the given audit directory.
func baseConfigAudit(t testing.TB, port int, audit *auditDir) string {
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
`, port, testAccessKey, policyDir, testIssuer, testAudience, writeJWKS(t), audit.dir, audit.signerKeyFile, audit.hmacKeyFile)
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

// s3HTTP sends requests to versitygw for any host name by dialing the
// loopback port directly, so "lake.localhost:PORT" works without DNS.
func (s *s3Server) httpClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, "127.0.0.1:"+strconv.Itoa(s.port))
			},
			DisableCompression: true,
		},
	}
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

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
