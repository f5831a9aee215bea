package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAuditUploadToS3: sealed audit segments are uploaded to a bucket on a
// real S3 server, removed locally only after the upload is verified, and
// `countersign audit verify` passes reading the log from the bucket.
func TestAuditUploadToS3(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	srv.CreateBucket(t, "audit-archive")
	ad := newAuditDir(t)
	cfg := baseConfigAudit(t, srv.Port, ad)
	cfg = strings.Replace(cfg, "  checkpoint_interval: 100ms\n", fmt.Sprintf(`  checkpoint_interval: 100ms
  segment_max_age: 1s
  upload:
    bucket: audit-archive
    endpoint: http://127.0.0.1:%d
    region: us-east-1
    interval: 1s
    access_key_id: %s
`, srv.Port, testAccessKey), 1)
	env := append(secretEnv(), "COUNTERSIGN_AUDIT_UPLOAD_SECRET_ACCESS_KEY="+testSecretKey)
	cs := startCountersign(t, cfg, env...)
	sr := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()}

	// Sign for a few seconds so that several segments seal and upload.
	admin := srv.AdminClient()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, _, ierr, _ := cs.sign(t, "", sr); st != http.StatusOK {
			t.Fatalf("sign: %d %+v", st, ierr)
		}
		out, err := admin.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("audit-archive")})
		if err == nil && countSegments(out) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 segments uploaded in 30 s: %v\n%s", err, cs.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Uploaded segments are gone locally (only verified uploads are
	// removed); the segment being written stays.
	local, _ := filepath.Glob(filepath.Join(ad.Dir, "seg-*.jsonl"))
	out, _ := admin.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("audit-archive")})
	if len(local) == 0 || len(local) >= countSegments(out)+1 {
		t.Fatalf("%d local segments, %d uploaded: uploaded segments were not removed locally", len(local), countSegments(out))
	}

	// Graceful stop: seal, final checkpoint, upload of what was sealed.
	cs.cmd.Process.Signal(os.Interrupt)
	if err := cs.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, cs.log.String())
	}
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	for _, source := range []string{"bucket", "both"} {
		cmd := exec.Command(servers.CountersignBin, "audit", "verify", "-config", cfgPath, "-source", source, "-dir", ad.Dir, "-pubkey", ad.VerifierKeyFile)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("audit verify -source %s: %v\n%s", source, err, out)
		}
	}
	// The local directory alone no longer starts at seq 0.
	if out, err := exec.Command(servers.CountersignBin, "audit", "verify", "-dir", ad.Dir, "-pubkey", ad.VerifierKeyFile).CombinedOutput(); err == nil {
		t.Fatalf("local-only verify passed although early segments were removed:\n%s", out)
	}
}

func countSegments(out *s3.ListObjectsV2Output) int {
	n := 0
	for _, o := range out.Contents {
		if strings.HasSuffix(*o.Key, ".jsonl") && !strings.Contains(*o.Key, "checkpoints") {
			n++
		}
	}
	return n
}
