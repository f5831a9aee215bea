package upload

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The S3 tests run a real versitygw: $VERSITYGW if set, else one built
// once from the pinned tools module (as the e2e tests do; the build cache
// makes later runs take seconds).

const (
	testAccessKey = "uploadtestaccess"
	testSecretKey = "uploadtestsecret0123456789"
	testRegion    = "us-east-1"
)

var (
	gwOnce     sync.Once
	gwBin      string
	gwErr      error
	gwBuildDir string // removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if gwBuildDir != "" {
		os.RemoveAll(gwBuildDir)
	}
	os.Exit(code)
}

func versitygw(t testing.TB) string {
	t.Helper()
	gwOnce.Do(func() {
		if gwBin = os.Getenv("VERSITYGW"); gwBin != "" {
			return
		}
		dir, err := os.MkdirTemp("", "countersign-upload-test-")
		if err != nil {
			gwErr = err
			return
		}
		gwBuildDir = dir
		gwBin = filepath.Join(dir, "versitygw")
		cmd := exec.Command("go", "build", "-o", gwBin, "github.com/versity/versitygw/cmd/versitygw")
		cmd.Dir = filepath.Join("..", "..", "tools")
		if out, err := cmd.CombinedOutput(); err != nil {
			gwErr = fmt.Errorf("building versitygw (set VERSITYGW to a binary to skip this): %v\n%s", err, out)
		}
	})
	if gwErr != nil {
		t.Fatal(gwErr)
	}
	return gwBin
}

// gateway is a versitygw on a loopback port with a posix root. It can be
// stopped and started again on the same port and data, to test outages.
type gateway struct {
	t          testing.TB
	port       int
	data       string
	versioning string // "" unless started with versioning (Object Lock)
	cmd        *exec.Cmd
	out        *lockedBuffer
}

// startGateway starts versitygw; versioning enables the posix backend's
// versioning directory, which its Object Lock needs to behave like S3's
// (a lock-enabled bucket is versioned).
func startGateway(t testing.TB, versioning bool) *gateway {
	t.Helper()
	dir := t.TempDir()
	g := &gateway{t: t, data: filepath.Join(dir, "data")}
	if err := os.Mkdir(g.data, 0o755); err != nil {
		t.Fatal(err)
	}
	if versioning {
		g.versioning = filepath.Join(dir, "versions")
		if err := os.Mkdir(g.versioning, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		g.port = freePort(t)
		if err = g.start(); err == nil {
			t.Cleanup(g.stop)
			return g
		}
	}
	t.Fatal(err)
	return nil
}

func (g *gateway) start() error {
	args := []string{"--access", testAccessKey, "--secret", testSecretKey,
		"--port", fmt.Sprintf("127.0.0.1:%d", g.port), "--quiet", "posix"}
	if g.versioning != "" {
		args = append(args, "--versioning-dir", g.versioning)
	}
	args = append(args, g.data)
	g.out = &lockedBuffer{}
	g.cmd = exec.Command(versitygw(g.t), args...)
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	if err := g.cmd.Start(); err != nil {
		return err
	}
	if err := waitPort(g.port, 15*time.Second); err != nil {
		g.stop()
		return fmt.Errorf("versitygw did not start: %v\n%s", err, g.out.String())
	}
	return nil
}

// stop kills the gateway (an outage, as far as clients can tell).
func (g *gateway) stop() {
	if g.cmd != nil && g.cmd.Process != nil {
		g.cmd.Process.Kill()
		g.cmd.Wait()
	}
	g.cmd = nil
}

// restart starts it again on the same port and data.
func (g *gateway) restart() {
	g.t.Helper()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err = g.start(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the port may still be in TIME_WAIT use
	}
}

func (g *gateway) endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", g.port) }

// admin is an S3 client for setup and independent checks.
func (g *gateway) admin() *s3.Client {
	return s3.New(s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(g.endpoint()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
	})
}

func (g *gateway) createBucket(name string, objectLock bool) {
	g.t.Helper()
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if objectLock {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	if _, err := g.admin().CreateBucket(context.Background(), in); err != nil {
		g.t.Fatalf("create bucket %s: %v", name, err)
	}
}

// config is an upload configuration for this gateway.
func (g *gateway) config(bucket string) Config {
	return Config{
		Bucket:          bucket,
		Endpoint:        g.endpoint(),
		Region:          testRegion,
		AccessKeyID:     testAccessKey,
		SecretAccessKey: testSecretKey,
		Interval:        time.Second,
	}
}

// keys lists the object keys under prefix.
func (g *gateway) keys(bucket, prefix string) []string {
	g.t.Helper()
	var out []string
	pages := s3.NewListObjectsV2Paginator(g.admin(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			g.t.Fatal(err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out
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
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
