package upload

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/countersign/countersign/audit"
)

const bucket = "audit-archive"

// newSetup is how most upload tests start: versitygw with the test bucket
// (no Object Lock), an empty log directory, and log keys.
func newSetup(t testing.TB) (*gateway, string, logKeys) {
	g := startGateway(t, false)
	g.createBucket(bucket, false)
	return g, t.TempDir(), newLogKeys(t)
}

func newUploader(t testing.TB, cfg Config, dir string, rec *recorder) *Uploader {
	t.Helper()
	opts := Options{NodeID: testNode, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond}
	if rec != nil {
		opts.OnUploaded, opts.OnFailure = rec.onUploaded, rec.onFailure
	}
	u, err := New(context.Background(), cfg, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

func openBucketFS(t testing.TB, g *gateway, prefix string) fs.FS {
	t.Helper()
	client, err := NewClient(context.Background(), g.config(bucket))
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := BucketFS(context.Background(), client, bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// verifyFS runs audit.Verify and fails the test on error.
func verifyFS(t testing.TB, what string, fsys fs.FS, k logKeys, partial bool) *audit.VerifyResult {
	t.Helper()
	res, err := audit.Verify(fsys, audit.VerifyOptions{Verifiers: k.verifiers, Partial: partial})
	if err != nil {
		t.Fatalf("verify %s: %v", what, err)
	}
	return res
}

// TestUploadSealedSegments is the whole path: a real log seals segments,
// they arrive in the bucket, only verified ones leave the disk, the
// current segment stays, and the log verifies from the bucket, from the
// disk (partial) and from both; the log keeps working across a restart
// with its old segments gone.
func TestUploadSealedSegments(t *testing.T) {
	g, dir, k := newSetup(t)
	rec := &recorder{}
	up := newUploader(t, g.config(bucket), dir, rec)
	l := openTestLog(t, dir, k, up.Notify, nil)
	up.Start(context.Background())

	l.appendUntilSeals(5)
	if err := up.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	cur := l.currentFirst()
	local := localSegments(t, dir)
	if len(local) != 1 || local[0].First != cur || !local[0].HasRecords || !local[0].HasCheckpoints {
		t.Fatalf("local segments after upload: %v, want only the current one (%s)", segmentNames(local), audit.SegmentName(cur))
	}
	keys := g.keys(bucket, testNode+"/")
	if len(keys) < 15 || len(keys)%3 != 0 { // records, index, checkpoints
		t.Fatalf("bucket keys: %v", keys)
	}
	for _, key := range keys {
		if strings.HasSuffix(key, audit.SegmentName(cur)) || strings.HasSuffix(key, audit.CheckpointsName(cur)) {
			t.Fatalf("the current segment was uploaded: %s", key)
		}
	}
	uploaded, failures := rec.snapshot()
	if len(uploaded) != len(keys)/3 || len(failures) != 0 {
		t.Fatalf("OnUploaded %v, OnFailure %v, for %d objects", uploaded, failures, len(keys))
	}
	if up.Pending() != 0 || up.LastError() != nil {
		t.Fatalf("Pending %d, LastError %v", up.Pending(), up.LastError())
	}

	// The bucket alone: the log from seq 0 to where the current segment
	// starts, complete (not Partial).
	bfs := openBucketFS(t, g, testNode+"/")
	res := verifyFS(t, "bucket", bfs, k, false)
	if res.First != 0 || res.Next != cur || res.Segments != len(keys)/3 {
		t.Fatalf("bucket verify: first %d next %d segments %d, want 0, %d, %d", res.First, res.Next, res.Segments, cur, len(keys)/3)
	}
	// The disk alone is the tail: it verifies only as a partial log.
	if _, err := audit.Verify(os.DirFS(dir), audit.VerifyOptions{Verifiers: k.verifiers}); err == nil {
		t.Fatal("the local tail verified as a whole log")
	}
	verifyFS(t, "local, partial", os.DirFS(dir), k, true)
	// Both: the whole log, every record.
	union := UnionFS(os.DirFS(dir), bfs)
	res = verifyFS(t, "union", union, k, false)
	if total := l.Stats().TreeSize; res.First != 0 || res.Next != total || countRecords(t, union) != total {
		t.Fatalf("union verify: %d..%d, want 0..%d", res.First, res.Next, total)
	}

	// Shutdown seals the current segment: it is uploaded (sealed) but stays
	// on disk, because the next start resumes from it.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.keys(bucket, testNode+"/"), testNode+"/"+audit.CheckpointsName(cur)) {
		t.Fatal("the segment sealed at shutdown was not uploaded")
	}
	if local := localSegments(t, dir); len(local) != 1 || local[0].First != cur {
		t.Fatalf("local segments after shutdown: %v", segmentNames(local))
	}

	// Restart with only that segment on disk: the log resumes, and the
	// next pass removes the segment it resumed from.
	l2 := openTestLog(t, dir, k, up.Notify, nil)
	defer l2.Close()
	l2.appendUntilSeals(1)
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if local := localSegments(t, dir); len(local) != 1 || local[0].First != l2.currentFirst() {
		t.Fatalf("local segments after restart: %v", segmentNames(local))
	}
	res = verifyFS(t, "union after restart", UnionFS(os.DirFS(dir), bfs), k, false)
	if res.Next != l2.Stats().TreeSize {
		t.Fatalf("union after restart ends at %d, log at %d", res.Next, l2.Stats().TreeSize)
	}
	uploaded, _ = rec.snapshot()
	seen := map[string]bool{}
	for _, n := range uploaded {
		if seen[n] {
			t.Fatalf("OnUploaded twice for %s: %v", n, uploaded)
		}
		seen[n] = true
	}
}

// TestUploadBackground: without Flush, seals and the interval drive it.
func TestUploadBackground(t *testing.T) {
	g, dir, k := newSetup(t)
	up := newUploader(t, g.config(bucket), dir, nil)
	up.Start(context.Background())
	l := openTestLog(t, dir, k, up.Notify, nil)
	defer l.Close()
	l.appendUntilSeals(3)
	cur := l.currentFirst()
	eventually(t, 10*time.Second, "only the current segment left on disk", func() bool {
		local := localSegments(t, dir)
		return len(local) == 1 && local[0].First == cur
	})
	res := verifyFS(t, "bucket", openBucketFS(t, g, testNode+"/"), k, false)
	if res.Next != cur {
		t.Fatalf("bucket ends at %d, want %d", res.Next, cur)
	}
}

// TestUploadOutage: the S3 server goes away mid-way (after some segments
// were uploaded). Nothing more is removed, the failure shows and is
// retried; when the server is back (same port and data), everything
// arrives and no record is lost.
func TestUploadOutage(t *testing.T) {
	g, dir, k := newSetup(t)
	rec := &recorder{}
	up := newUploader(t, g.config(bucket), dir, rec)
	up.Start(context.Background())
	l := openTestLog(t, dir, k, up.Notify, nil)
	defer l.Close()

	l.appendUntilSeals(2)
	uploadedUpTo := l.currentFirst()
	eventually(t, 10*time.Second, "the first segments uploaded", func() bool {
		local := localSegments(t, dir)
		return len(local) == 1 && local[0].First == uploadedUpTo
	})

	g.stop()
	l.appendUntilSeals(3)
	eventually(t, 20*time.Second, "failed passes after the seals", func() bool {
		_, failures := rec.snapshot()
		return len(failures) >= 2 && up.LastError() != nil
	})
	during := localSegments(t, dir)
	if len(during) < 4 || during[0].First != uploadedUpTo {
		t.Fatalf("local segments during the outage: %v, want every one since %s", segmentNames(during), audit.SegmentName(uploadedUpTo))
	}
	// Every finished one is pending (a pass that started before the last
	// seal may have counted one fewer: wait for the next).
	eventually(t, 10*time.Second, "Pending to count every finished segment", func() bool {
		return up.Pending() == len(during)-1
	})
	t.Logf("during the outage: %v", up.LastError())

	g.restart()
	cur := l.currentFirst()
	eventually(t, 30*time.Second, "the upload to recover", func() bool {
		local := localSegments(t, dir)
		return up.LastError() == nil && len(local) == 1 && local[0].First == cur
	})
	if up.Pending() != 0 {
		t.Fatalf("Pending %d after recovery", up.Pending())
	}
	bfs := openBucketFS(t, g, testNode+"/")
	if res := verifyFS(t, "bucket", bfs, k, false); res.Next != cur {
		t.Fatalf("bucket ends at %d, want %d", res.Next, cur)
	}
	union := UnionFS(os.DirFS(dir), bfs)
	res := verifyFS(t, "union", union, k, false)
	if total := l.Stats().TreeSize; res.Next != total || countRecords(t, union) != total {
		t.Fatalf("union has %d records, the log %d", res.Next, total)
	}
}

// dropFirstPut performs the first PutObject but reports a failure, as when
// the connection breaks after the server stored the object.
type dropFirstPut struct {
	base    http.RoundTripper
	dropped atomic.Bool
}

func (d *dropFirstPut) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPut && d.dropped.CompareAndSwap(false, true) {
		resp.Body.Close()
		return nil, errors.New("injected: connection reset after the request was sent")
	}
	return resp, err
}

// TestUploadLostResponse: an upload that reached the bucket but whose
// answer was lost is found there by the retry and verified, not replaced
// and not reported as a conflict.
func TestUploadLostResponse(t *testing.T) {
	g, dir, k := newSetup(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(2)
	tr := &dropFirstPut{base: http.DefaultTransport}
	rec := &recorder{}
	up, err := New(context.Background(), g.config(bucket), dir, Options{
		NodeID: testNode, HTTPClient: &http.Client{Transport: tr},
		OnUploaded: rec.onUploaded, OnFailure: rec.onFailure,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	// The SDK retries the PUT itself; If-None-Match makes the retry fail
	// with 412 (the object is there now); the uploader then finds its own
	// bytes there, which verifies.
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !tr.dropped.Load() {
		t.Fatal("no answer was dropped")
	}
	if local := localSegments(t, dir); len(local) != 1 {
		t.Fatalf("local: %v", segmentNames(local))
	}
	if uploaded, _ := rec.snapshot(); len(uploaded) != 2 {
		t.Fatalf("uploaded: %v", uploaded)
	}
	verifyFS(t, "bucket", openBucketFS(t, g, testNode+"/"), k, false)
}

// TestUploadWrongCredentials: refused requests keep every local file.
func TestUploadWrongCredentials(t *testing.T) {
	g, dir, k := newSetup(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(2)
	before := localSegments(t, dir)

	cfg := g.config(bucket)
	cfg.SecretAccessKey = "not-the-secret"
	bad := newUploader(t, cfg, dir, nil)
	err := bad.Flush(context.Background())
	if err == nil || !isStatus(err, 403) {
		t.Fatalf("flush with a wrong secret: %v", err)
	}
	if bad.LastError() == nil || bad.Pending() != len(before)-1 {
		t.Fatalf("LastError %v, Pending %d", bad.LastError(), bad.Pending())
	}
	if after := localSegments(t, dir); !slices.Equal(segmentNames(after), segmentNames(before)) {
		t.Fatalf("local segments changed: %v -> %v", segmentNames(before), segmentNames(after))
	}
	if keys := g.keys(bucket, ""); len(keys) != 0 {
		t.Fatalf("objects written with a wrong secret: %v", keys)
	}

	good := newUploader(t, g.config(bucket), dir, nil)
	if err := good.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := localSegments(t, dir); len(after) != 1 {
		t.Fatalf("local segments: %v", segmentNames(after))
	}
}

// TestUploadConflict: an object already in the bucket with other bytes is
// never overwritten, and the local segment is kept.
func TestUploadConflict(t *testing.T) {
	g, dir, k := newSetup(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(2)
	before := localSegments(t, dir)
	key := testNode + "/" + audit.SegmentName(0)
	other := "another node's segment\n"
	if _, err := g.admin().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(other),
	}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	up := newUploader(t, g.config(bucket), dir, rec)
	err := up.Flush(context.Background())
	if !errors.Is(err, ErrConflict) || !errors.Is(up.LastError(), ErrConflict) {
		t.Fatalf("flush: %v", err)
	}
	if _, failures := rec.snapshot(); len(failures) != 1 {
		t.Fatalf("OnFailure calls: %v", failures)
	}
	if after := localSegments(t, dir); !slices.Equal(segmentNames(after), segmentNames(before)) {
		t.Fatalf("local segments changed: %v -> %v", segmentNames(before), segmentNames(after))
	}
	// Not overwritten, and nothing after it uploaded (the bucket stays a
	// contiguous run of the log).
	out, err := g.admin().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	if aws.ToInt64(out.ContentLength) != int64(len(other)) {
		t.Fatal("the conflicting object was overwritten")
	}
	if keys := g.keys(bucket, ""); len(keys) != 1 {
		t.Fatalf("bucket: %v", keys)
	}
}

// TestUploadKeepLocal: files stay, are uploaded once, and a pass that
// finds them verified does not hash or upload them again.
func TestUploadKeepLocal(t *testing.T) {
	g, dir, k := newSetup(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(3)
	cfg := g.config(bucket)
	cfg.KeepLocal = true
	rec := &recorder{}
	up := newUploader(t, cfg, dir, rec)
	for range 2 {
		if err := up.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	local := localSegments(t, dir)
	uploaded, _ := rec.snapshot()
	if want := segmentNames(local[:len(local)-1]); !slices.Equal(uploaded, want) {
		t.Fatalf("uploaded %v, want %v", uploaded, want)
	}
	if keys := g.keys(bucket, ""); len(keys) != 3*(len(local)-1) {
		t.Fatalf("bucket: %v", keys)
	}
	verifyFS(t, "local", os.DirFS(dir), k, false)
}

// TestUploadInterruptedRemoval: a crash between removing a segment's two
// files leaves one; the next pass checks both are in the bucket and
// removes it. If the other is not in the bucket, nothing is touched.
func TestUploadInterruptedRemoval(t *testing.T) {
	g, dir, k := newSetup(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(3)
	cfg := g.config(bucket)
	cfg.KeepLocal = true
	if err := newUploader(t, cfg, dir, nil).Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Segment 0: records removed, checkpoints left (as by a crash).
	if err := os.Remove(filepath.Join(dir, audit.SegmentName(0))); err != nil {
		t.Fatal(err)
	}
	up := newUploader(t, g.config(bucket), dir, nil)
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if local := localSegments(t, dir); len(local) != 1 {
		t.Fatalf("local: %v", segmentNames(local))
	}

	// A leftover whose partner is not in the bucket stays.
	dir2 := t.TempDir()
	l2 := openTestLog(t, dir2, k, nil, nil)
	l2.appendUntilSeals(2)
	l2.Close()
	if err := os.Remove(filepath.Join(dir2, audit.SegmentName(0))); err != nil {
		t.Fatal(err)
	}
	cfg2 := g.config(bucket)
	cfg2.Prefix = "other/"
	err := newUploader(t, cfg2, dir2, nil).Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "missing both") {
		t.Fatalf("flush: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir2, audit.CheckpointsName(0))); err != nil {
		t.Fatalf("the leftover checkpoints file was removed: %v", err)
	}
}

// TestUploadAbandonedSegment: a write failure abandons a segment (with
// zero padding and no seal); it is finished once the recovery segment has
// its first record, is uploaded as it is, and the bucket copy verifies.
func TestUploadAbandonedSegment(t *testing.T) {
	g, dir, k := newSetup(t)
	var arm atomic.Bool
	up := newUploader(t, g.config(bucket), dir, nil)
	l := openTestLog(t, dir, k, up.Notify, flakyOpen(&arm))
	defer l.Close()
	l.appendUntilSeals(1)
	arm.Store(true)
	if err := l.Append(context.Background(), accessRecord(1000)); !errors.Is(err, audit.ErrUnavailable) {
		t.Fatalf("append during the fault: %v", err)
	}
	eventually(t, 10*time.Second, "the log to recover", func() bool { return l.Healthy() == nil })
	l.appendUntilSeals(2)
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if local := localSegments(t, dir); len(local) != 1 {
		t.Fatalf("local: %v", segmentNames(local))
	}
	bfs := openBucketFS(t, g, testNode+"/")
	res := verifyFS(t, "bucket", bfs, k, false)
	if len(res.Abandoned) != 1 {
		t.Fatalf("abandoned segments in the bucket: %+v", res.Abandoned)
	}
	union := UnionFS(os.DirFS(dir), bfs)
	if res := verifyFS(t, "union", union, k, false); res.Next != l.Stats().TreeSize {
		t.Fatalf("union ends at %d, log at %d", res.Next, l.Stats().TreeSize)
	}
}

// TestUploadObjectLock: with object_lock_mode, every object carries the
// retention (read back with GetObjectRetention), versitygw refuses to
// delete a locked version, and a bucket without Object Lock makes the
// upload fail with the local files kept.
func TestUploadObjectLock(t *testing.T) {
	g := startGateway(t, true)
	g.createBucket(bucket, true)
	g.createBucket("no-lock", false)
	dir := t.TempDir()
	k := newLogKeys(t)
	l := openTestLog(t, dir, k, nil, nil)
	defer l.Close()
	l.appendUntilSeals(2)
	before := localSegments(t, dir)

	// A bucket without Object Lock: refused, nothing removed.
	cfg := g.config("no-lock")
	cfg.ObjectLockMode, cfg.Retention = LockCompliance, time.Hour
	err := newUploader(t, cfg, dir, nil).Flush(context.Background())
	if err == nil {
		t.Fatal("upload with object lock to a bucket without it succeeded")
	}
	t.Logf("without Object Lock on the bucket: %v", err)
	if after := localSegments(t, dir); !slices.Equal(segmentNames(after), segmentNames(before)) {
		t.Fatalf("local segments changed: %v -> %v", segmentNames(before), segmentNames(after))
	}

	cfg = g.config(bucket)
	cfg.ObjectLockMode, cfg.Retention = LockCompliance, time.Hour
	start := time.Now()
	up := newUploader(t, cfg, dir, nil)
	if err := up.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := g.keys(bucket, testNode+"/")
	if len(keys) != 3*(len(before)-1) {
		t.Fatalf("bucket: %v", keys)
	}
	admin := g.admin()
	for _, key := range keys {
		ret, err := admin.GetObjectRetention(context.Background(), &s3.GetObjectRetentionInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObjectRetention %s: %v", key, err)
		}
		until := aws.ToTime(ret.Retention.RetainUntilDate)
		if ret.Retention.Mode != types.ObjectLockRetentionModeCompliance ||
			until.Before(start.Add(time.Hour-time.Second)) || until.After(time.Now().Add(time.Hour+2*time.Second)) {
			t.Fatalf("%s: retention %s until %s", key, ret.Retention.Mode, until)
		}
	}
	// The lock holds: deleting the version is refused.
	head, err := admin.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(keys[0])})
	if err != nil {
		t.Fatal(err)
	}
	if head.VersionId == nil {
		t.Fatal("no version id in a lock-enabled bucket")
	}
	_, err = admin.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(keys[0]), VersionId: head.VersionId})
	if err == nil {
		t.Fatal("deleting a locked version succeeded")
	}
	t.Logf("deleting a locked version: %v", err)
	verifyFS(t, "bucket", openBucketFS(t, g, testNode+"/"), k, false)
}
