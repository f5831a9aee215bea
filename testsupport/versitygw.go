package testsupport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Servers starts the programs of one test module. Main fills in the
// binaries; the module sets the rest, which differs between modules.
type Servers struct {
	CountersignBin string
	VersitygwBin   string
	WeedBin        string // SeaweedFS, when Build.SeaweedFS asked for it
	// AccessKey and SecretKey are versitygw's root credentials, which
	// countersign signs with in most tests.
	AccessKey, SecretKey string
	Region               string
}

// S3Server is a running S3 server: versitygw, or SeaweedFS.
type S3Server struct {
	Port    int
	Dir     string // its temporary directory; objects are under Dir/data
	Backend Backend
	// IcebergURL is SeaweedFS's Iceberg REST catalog's base URI
	// (http://127.0.0.1:PORT) when SeaweedFSOptions.Iceberg started it.
	IcebergURL string
	servers    *Servers
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WaitPort waits until something accepts connections on the loopback port.
func WaitPort(port int, timeout time.Duration) error {
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

// StartS3 runs versitygw on a free loopback port with a fresh posix root,
// virtual-hosted buckets under "localhost", and stops it when the test ends.
// Another process may take the port between FreePort and versitygw's bind,
// so a failed start is retried on a new port.
func (s *Servers) StartS3(t testing.TB, extraArgs ...string) *S3Server {
	t.Helper()
	return s.startS3(t, []string{"--virtual-domain", "localhost"}, false, extraArgs)
}

// StartS3Versioned is StartS3 with the posix backend's object versioning
// available (--versioning-dir): a bucket's versioning can then be enabled
// with PutBucketVersioning.
func (s *Servers) StartS3Versioned(t testing.TB, extraArgs ...string) *S3Server {
	t.Helper()
	return s.startS3(t, []string{"--virtual-domain", "localhost"}, true, extraArgs)
}

// StartS3PathOnly is StartS3 without a virtual-host domain: like MinIO
// without MINIO_DOMAIN or Ceph without rgw_dns_name, versitygw then serves
// "<anything>.localhost/b/k" as bucket b.
func (s *Servers) StartS3PathOnly(t testing.TB, extraArgs ...string) *S3Server {
	t.Helper()
	return s.startS3(t, nil, false, extraArgs)
}

func (s *Servers) startS3(t testing.TB, addressing []string, versioned bool, extraArgs []string) *S3Server {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	var posixArgs []string
	if versioned {
		versions := filepath.Join(dir, "versions")
		if err := os.Mkdir(versions, 0o755); err != nil {
			t.Fatal(err)
		}
		posixArgs = []string{"--versioning-dir", versions}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		args := append([]string{"--access", s.AccessKey, "--secret", s.SecretKey,
			"--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet"}, addressing...)
		args = append(args, extraArgs...)
		args = append(append(append(args, "posix"), posixArgs...), data)
		cmd := exec.Command(s.VersitygwBin, args...)
		var logBuf LockedBuffer
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := WaitPort(port, 10*time.Second); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			lastErr = fmt.Errorf("versitygw did not start: %v\n%s", err, logBuf.String())
			continue
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		return &S3Server{Port: port, Dir: dir, Backend: Versitygw, servers: s}
	}
	t.Fatal(lastErr)
	return nil
}

// AdminClient talks to the server directly with the root keys, for test
// setup (creating buckets) and for checking results independently of
// countersign.
func (s *S3Server) AdminClient() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.servers.Region,
		BaseEndpoint: aws.String(fmt.Sprintf("http://127.0.0.1:%d", s.Port)),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.servers.AccessKey, s.servers.SecretKey, ""),
	})
}

// CreateBucket creates a bucket with the root keys.
func (s *S3Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	_, err := s.AdminClient().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
}

// LoopbackTransport is an HTTP transport that sends requests for any host
// name ("lake.localhost:PORT" included) to the server's loopback port, so
// no name resolution is needed, and leaves bodies as sent.
func (s *S3Server) LoopbackTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, "127.0.0.1:"+strconv.Itoa(s.Port))
		},
		DisableCompression: true,
	}
}
