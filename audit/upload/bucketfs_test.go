package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/countersign/countersign/audit"
)

func putObject(t testing.TB, c *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	}); err != nil {
		t.Fatal(err)
	}
}

func TestBucketFS(t *testing.T) {
	g := startGateway(t, false)
	g.createBucket(bucket, false)
	admin := g.admin()
	big := make([]byte, 3*readBlock+123)
	for i := range big {
		big[i] = byte(i * 7)
	}
	putObject(t, admin, bucket, "p/a.txt", []byte("hello\n"))
	putObject(t, admin, bucket, "p/big", big)
	putObject(t, admin, bucket, "p/sub/b.txt", []byte("b"))
	putObject(t, admin, bucket, "p/sub/c/d.txt", []byte("d"))
	putObject(t, admin, bucket, "pq/outside", []byte("x"))
	putObject(t, admin, bucket, "other/x", []byte("x"))

	client, err := NewClient(context.Background(), g.config(bucket))
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := BucketFS(context.Background(), client, bucket, "p/")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "a.txt", "big", "sub/b.txt", "sub/c/d.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing: %v", err)
	}
	if _, err := fs.ReadDir(fsys, "nodir"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("readdir missing: %v", err)
	}

	// ReadAt across block boundaries and past the end.
	f, err := fsys.Open("big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ra := f.(io.ReaderAt)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		off := rng.Int64N(int64(len(big)))
		n := rng.IntN(2 * readBlock)
		p := make([]byte, n)
		got, err := ra.ReadAt(p, off)
		want := min(n, len(big)-int(off))
		if got != want || !bytes.Equal(p[:got], big[off:off+int64(got)]) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", n, off, got, err)
		}
		if (want < n) != (err == io.EOF) {
			t.Fatalf("ReadAt(%d, %d) error %v", n, off, err)
		}
	}

	// A bucket that does not exist fails at once.
	if _, err := BucketFS(context.Background(), client, "no-such-bucket", "p/"); err == nil {
		t.Fatal("BucketFS on a missing bucket succeeded")
	}
}

// breakingTransport cuts the first full-object GET's body after limit
// bytes, like a connection reset mid-download.
type breakingTransport struct {
	base  http.RoundTripper
	limit int64
	armed atomic.Bool
}

func (b *breakingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && r.Header.Get("Range") == "" && strings.Contains(r.URL.Path, "/big") && b.armed.CompareAndSwap(true, false) {
		resp.Body = &breakingBody{ReadCloser: resp.Body, left: b.limit}
	}
	return resp, err
}

type breakingBody struct {
	io.ReadCloser
	left int64
}

func (b *breakingBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func TestBucketFSResumesBrokenDownload(t *testing.T) {
	g := startGateway(t, false)
	g.createBucket(bucket, false)
	big := make([]byte, 5*readBlock)
	for i := range big {
		big[i] = byte(i * 13)
	}
	putObject(t, g.admin(), bucket, "p/big", big)
	tr := &breakingTransport{base: http.DefaultTransport, limit: readBlock + 17}
	tr.armed.Store(true)
	client, err := newClient(context.Background(), g.config(bucket), &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := BucketFS(context.Background(), client, bucket, "p/")
	if err != nil {
		t.Fatal(err)
	}
	got, err := fs.ReadFile(fsys, "big")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("resumed download differs")
	}
	if tr.armed.Load() {
		t.Fatal("the download was never broken")
	}
}

func TestUnionFS(t *testing.T) {
	local := fstest.MapFS{
		"seg-2.jsonl": {Data: []byte("local 2")},
		"seg-3.jsonl": {Data: []byte("local 3")},
		"d/x":         {Data: []byte("local x")},
	}
	remote := fstest.MapFS{
		"seg-1.jsonl": {Data: []byte("remote 1")},
		"seg-2.jsonl": {Data: []byte("remote 2")},
		"d/y":         {Data: []byte("remote y")},
	}
	u := UnionFS(local, remote)
	if err := fstest.TestFS(u, "seg-1.jsonl", "seg-2.jsonl", "seg-3.jsonl", "d/x", "d/y"); err != nil {
		t.Fatal(err)
	}
	if b, _ := fs.ReadFile(u, "seg-2.jsonl"); string(b) != "local 2" {
		t.Fatalf("seg-2 from %q, want the first layer", b)
	}
	if _, err := u.Open("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open nope: %v", err)
	}
	// An error other than "does not exist" is never hidden by a layer.
	broken := UnionFS(local, failingFS{})
	if _, err := fs.ReadDir(broken, "."); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("readdir with a failing layer: %v", err)
	}
	if _, err := broken.Open("seg-1.jsonl"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open with a failing layer: %v", err)
	}
}

type failingFS struct{}

func (failingFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("bucket unreachable")}
}

// TestUploadChecksum: S3 checks the SHA-256 the uploader sends (a wrong
// one is refused), HEAD reports it, and an object stored without a SHA-256
// (here: the same bytes put by someone else) is verified by reading it
// back instead.
func TestUploadChecksum(t *testing.T) {
	g, dir, k := newSetup(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(2)
	up := newUploader(t, g.config(bucket), dir, nil)

	seg0 := filepath.Join(dir, audit.SegmentName(0))
	data, err := os.ReadFile(seg0)
	if err != nil {
		t.Fatal(err)
	}
	wrong := sha256.Sum256([]byte("not these bytes"))
	if _, _, err := up.put(context.Background(), seg0, "probe/seg", int64(len(data)), wrong[:]); err == nil || !isStatus(err, http.StatusBadRequest) {
		t.Fatalf("put with a wrong checksum: %v", err)
	}

	chk0, err := os.ReadFile(filepath.Join(dir, audit.CheckpointsName(0)))
	if err != nil {
		t.Fatal(err)
	}
	// Segment 0's records, put by someone else without a SHA-256.
	putObject(t, g.admin(), bucket, testNode+"/"+audit.SegmentName(0), data)
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if local := localSegments(t, dir); len(local) != 1 {
		t.Fatalf("local: %v", segmentNames(local))
	}
	head, err := g.admin().HeadObject(context.Background(), &s3.HeadObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(testNode + "/" + audit.CheckpointsName(0)), ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(chk0)
	if got, want := aws.ToString(head.ChecksumSHA256), base64.StdEncoding.EncodeToString(sum[:]); got != want {
		t.Fatalf("HEAD reports SHA-256 %q, want %q", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := []Config{
		{},
		{Bucket: "b-1"},
		{Bucket: "bkt", Prefix: "nodes/a/", Endpoint: "https://minio.local:9000", Region: "eu-west-1", Interval: time.Minute},
		{Bucket: "bkt", ObjectLockMode: LockGovernance, Retention: 24 * time.Hour},
		{Bucket: "bkt", ObjectLockMode: LockCompliance, Retention: 61362 * time.Hour, KeepLocal: true},
		{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s"},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := map[string]Config{
		"audit.upload.bucket":            {Bucket: "a/b"},
		"audit.upload.prefix":            {Bucket: "bkt", Prefix: "/abs"},
		"audit.upload.endpoint":          {Bucket: "bkt", Endpoint: "minio:9000"},
		"audit.upload.object_lock_mode":  {Bucket: "bkt", ObjectLockMode: "governance", Retention: time.Hour},
		"audit.upload.retention ":        {Bucket: "bkt", ObjectLockMode: LockCompliance},
		"audit.upload.retention is set":  {Bucket: "bkt", Retention: time.Hour},
		"audit.upload.interval":          {Bucket: "bkt", Interval: time.Millisecond},
		"audit.upload.access_key_id and": {Bucket: "bkt", AccessKeyID: "a"},
	}
	for want, c := range bad {
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want an error naming %q", c, err, want)
		}
	}
	if got := (Config{}).KeyPrefix("node-7"); got != "node-7/" {
		t.Errorf("default prefix %q", got)
	}
	if got := (Config{Prefix: "x/"}).KeyPrefix("node-7"); got != "x/" {
		t.Errorf("prefix %q", got)
	}
	if _, err := New(context.Background(), Config{}, t.TempDir(), Options{NodeID: "n"}); err == nil {
		t.Error("New with upload off succeeded")
	}
	if _, err := New(context.Background(), Config{Bucket: "bkt", Endpoint: "http://127.0.0.1:1"}, t.TempDir(), Options{}); err == nil {
		t.Error("New without prefix or node id succeeded")
	}
}
