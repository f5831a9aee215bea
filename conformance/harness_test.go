package conformance

// Helpers copied from the e2e module (a different module, so its test files
// cannot be imported): versitygw and countersign processes on loopback
// ports, and admin access to the storage for independent checks.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/mod/sumdb/note"
)

const (
	testAccessKey = "CSCONFACCESSKEY"
	testSecretKey = "csconf-secret-key-not-used-anywhere-else"
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

// endpoint is the S3 endpoint clients use; countersign's configuration
// allows it in path-style and virtual-hosted addressing.
func (s *s3Server) endpoint() string { return fmt.Sprintf("http://localhost:%d", s.port) }

// httpClient sends requests for any host name ("lake.localhost:PORT"
// included) to versitygw's loopback port, so no name resolution is needed.
func (s *s3Server) httpClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, "127.0.0.1:"+strconv.Itoa(s.port))
			},
			DisableCompression:  true,
			MaxIdleConnsPerHost: 64,
		},
	}
}

// adminClient talks to versitygw directly with the storage keys, for test
// setup and for checking results independently of countersign.
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

func (s *s3Server) adminPut(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	_, err := s.adminClient().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("admin put %s: %v", key, err)
	}
}

func (s *s3Server) adminGet(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := s.adminClient().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
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
	_, err := s.adminClient().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

// adminList returns every key under prefix, sorted.
func (s *s3Server) adminList(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.adminClient(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
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

// signerProc is a running countersign.
type signerProc struct {
	url string // http://127.0.0.1:PORT
	log *lockedBuffer
	// stop sends SIGINT, which countersign handles as SIGTERM (finish
	// in-flight requests, seal the audit segment with a final checkpoint),
	// and waits for the process (killing it after 10 s); the test's cleanup
	// calls it too. Nil for a signerProc that does not own a process.
	stop func()
}

// startCountersign writes config (YAML text) and runs `countersign serve
// -config`.
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
		sc.Buffer(make([]byte, 64<<10), 4<<20)
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
	stop := sync.OnceFunc(func() {
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
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("countersign log:\n%s", logBuf.String())
		}
	})
	select {
	case addr, ok := <-addrc:
		if !ok {
			t.Fatalf("countersign exited before serving:\n%s", logBuf.String())
		}
		return &signerProc{url: "http://" + addr, log: logBuf, stop: stop}
	case <-time.After(60 * time.Second):
		t.Fatalf("countersign did not start:\n%s", logBuf.String())
	}
	return nil
}

// auditDir is a countersign audit directory with its keys.
type auditDir struct {
	dir             string
	signerKeyFile   string
	verifierKeyFile string // for countersign audit verify -pubkey
	hmacKeyFile     string
}

// newAuditDir makes keys the way `countersign audit keygen` does (an
// Ed25519 note key and 32 random bytes for the token HMAC).
func newAuditDir(t testing.TB) *auditDir {
	t.Helper()
	base := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, "countersign-conformance")
	if err != nil {
		t.Fatal(err)
	}
	var h [32]byte
	rand.Read(h[:])
	a := &auditDir{
		dir:             filepath.Join(base, "audit"),
		signerKeyFile:   filepath.Join(base, "checkpoint.key"),
		verifierKeyFile: filepath.Join(base, "checkpoint.pub"),
		hmacKeyFile:     filepath.Join(base, "hmac.key"),
	}
	for name, content := range map[string]string{a.signerKeyFile: skey, a.verifierKeyFile: vkey, a.hmacKeyFile: hex.EncodeToString(h[:])} {
		if err := os.WriteFile(name, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a
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
func baseConfigWithAudit(t testing.TB, port int, extra string) (string, *auditDir) {
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
    regions: [us-east-1]
credentials:
  source: static
  access_key_id: %[2]s
policy:
  paths: [%[3]q]
`, port, testAccessKey, policyDir, testIssuer, testAudience, writeJWKS(t), audit.dir, audit.signerKeyFile, audit.hmacKeyFile) + extra, audit
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
