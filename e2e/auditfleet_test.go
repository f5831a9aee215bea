package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAuditFleetVerify: three nodes' logs (countersign audit generate,
// uploaded by the real uploader) in one Object Lock bucket on versitygw.
// `audit fleet verify` passes, and names the node and the segment when
// one segment is deleted, one record altered, or one node's checkpoint
// chain forked (a local copy that disagrees with the bucket, and forked
// segments written over the bucket's, which Object Lock keeps as older
// versions).
func TestAuditFleetVerify(t *testing.T) {
	srv := servers.StartS3Versioned(t)
	admin := srv.AdminClient()
	ctx := context.Background()
	base := t.TempDir()
	keys := filepath.Join(base, "keys")
	cs := func(t *testing.T, wantExit int, args ...string) string {
		t.Helper()
		cmd := exec.Command(servers.CountersignBin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantExit {
			t.Fatalf("countersign %s: exit %d, want %d\n%s", strings.Join(args, " "), code, wantExit, out.String())
		}
		return out.String()
	}
	cs(t, 0, "audit", "keygen", "-name", "fleet-e2e", "-out", keys)
	pub := filepath.Join(keys, "checkpoint.pub")

	// fleet is one bucket with three nodes' logs, generated into gen and
	// uploaded with Object Lock.
	type fleet struct {
		bucket, cfg, gen string
	}
	newFleet := func(t *testing.T, bucket string) fleet {
		t.Helper()
		if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
		f := fleet{bucket: bucket, cfg: filepath.Join(base, bucket+".yaml"), gen: filepath.Join(base, bucket)}
		if err := os.WriteFile(f.cfg, []byte(fmt.Sprintf(`audit:
  upload:
    bucket: %s
    endpoint: http://127.0.0.1:%d
    region: %s
    object_lock_mode: COMPLIANCE
    retention: 1h
    access_key_id: %s
    secret_access_key: %s
`, bucket, srv.Port, testRegion, testAccessKey, testSecretKey)), 0o600); err != nil {
			t.Fatal(err)
		}
		cs(t, 0, "audit", "generate", "-out", f.gen, "-keys", keys, "-records", "9000", "-span", "240h", "-upload", f.cfg)
		return f
	}
	verify := func(t *testing.T, f fleet, wantExit int, extra ...string) string {
		t.Helper()
		return cs(t, wantExit, append([]string{"audit", "fleet", "verify", "-config", f.cfg, "-pubkey", pub}, extra...)...)
	}
	segKeys := func(t *testing.T, f fleet, node, ext string) []string {
		t.Helper()
		res, err := admin.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(f.bucket), Prefix: aws.String(node + "/")})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, o := range res.Contents {
			if strings.HasSuffix(aws.ToString(o.Key), ext) {
				ks = append(ks, aws.ToString(o.Key))
			}
		}
		sort.Strings(ks)
		if len(ks) < 5 {
			t.Fatalf("%s: %d %s objects", node, len(ks), ext)
		}
		return ks
	}
	onlyNode := func(t *testing.T, out, node string) {
		t.Helper()
		for _, n := range []string{"node-1", "node-2", "node-3"} {
			if n != node && (strings.Contains(out, "FAIL "+n) || !strings.Contains(out, "ok "+n+":")) {
				t.Fatalf("%s blamed, or not verified:\n%s", n, out)
			}
		}
	}

	t.Run("intact", func(t *testing.T) {
		f := newFleet(t, "fleet-intact")
		out := verify(t, f, 0)
		for _, n := range []string{"ok node-1:", "ok node-2:", "ok node-3:", "ok: 3 nodes"} {
			if !strings.Contains(out, n) {
				t.Fatalf("fleet verify: no %q:\n%s", n, out)
			}
		}
		t.Logf("fleet verify:\n%s", out)
		// Every sealed segment was uploaded with its index.
		if jsonl, idx := segKeys(t, f, "node-1", ".jsonl"), segKeys(t, f, "node-1", ".index"); len(idx) != len(jsonl) {
			t.Fatalf("%d segments, %d indexes in the bucket", len(jsonl), len(idx))
		}
		if !strings.Contains(out, "indexes verified") {
			t.Fatalf("no index verified:\n%s", out)
		}
	})

	// One segment deleted (a delete marker over the locked version).
	t.Run("deleted segment", func(t *testing.T) {
		f := newFleet(t, "fleet-deleted")
		key := segKeys(t, f, "node-1", ".jsonl")[3]
		for _, k := range []string{key, strings.TrimSuffix(key, ".jsonl") + ".checkpoints"} {
			if _, err := admin.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(k)}); err != nil {
				t.Fatal(err)
			}
		}
		out := verify(t, f, 1)
		name := filepath.Base(key)
		mustFail(t, out, "FAIL node-1: "+name+": deleted (a delete marker", "FAIL node-1: seg-", "are missing (segment dropped or truncated)")
		onlyNode(t, out, "node-1")
		t.Logf("deleted %s and its checkpoints:\n%s", key, out)
		// Without the versions, the gap alone is found.
		out = verify(t, f, 1, "-versions=false")
		mustFail(t, out, "FAIL node-1: seg-", "are missing (segment dropped or truncated)")
	})

	// One record altered (a new version of a segment object).
	t.Run("altered record", func(t *testing.T) {
		f := newFleet(t, "fleet-altered")
		key := segKeys(t, f, "node-3", ".jsonl")[2]
		obj, err := admin.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(obj.Body)
		obj.Body.Close()
		lines := bytes.SplitAfter(b.Bytes(), []byte("\n"))
		if !bytes.Contains(lines[4], []byte(`"decision":"allow"`)) {
			t.Fatalf("line 5 is not an allowed access: %s", lines[4])
		}
		lines[4] = bytes.Replace(lines[4], []byte(`"decision":"allow"`), []byte(`"decision":"deny"`), 1)
		if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key), Body: bytes.NewReader(bytes.Join(lines, nil))}); err != nil {
			t.Fatal(err)
		}
		out := verify(t, f, 1)
		name := filepath.Base(key)
		mustFail(t, out, "FAIL node-3: "+name+": the copies differ from line 5 on", "FAIL node-3: "+name+":", "does not match the signed checkpoint")
		onlyNode(t, out, "node-3")
		t.Logf("altered %s line 5:\n%s", key, out)
		out = verify(t, f, 1, "-versions=false")
		mustFail(t, out, "FAIL node-3: "+name+":", "does not match the signed checkpoint")
	})

	// node-2's chain forked: its log continued twice from the same point,
	// one continuation uploaded, the other on the node's disk; then the
	// other one also written over the bucket's objects.
	t.Run("forked chain", func(t *testing.T) {
		f := newFleet(t, "fleet-forked")
		gen := f.gen
		fork := filepath.Join(base, "fork")
		if err := os.MkdirAll(fork, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(gen, "node-2"), fork).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		cs(t, 0, "audit", "generate", "-out", gen, "-keys", keys, "-node", "node-2", "-records", "2000", "-seed", "2", "-start", "2026-11-20", "-span", "48h", "-upload", f.cfg)
		cs(t, 0, "audit", "generate", "-out", fork, "-keys", keys, "-node", "node-2", "-records", "2000", "-seed", "3", "-start", "2026-11-20", "-span", "48h")
		verify(t, f, 0)
		out := verify(t, f, 1, "-dir", "node-2="+filepath.Join(fork, "node-2"))
		mustFail(t, out, "FAIL node-2: seg-", ".checkpoints: checkpoint chain forked")
		onlyNode(t, out, "node-2")
		t.Logf("node-2's disk forked from the bucket:\n%s", out)

		// The forked files written over the bucket's: new versions; the
		// locked originals stay, and are compared.
		ents, err := os.ReadDir(filepath.Join(fork, "node-2"))
		if err != nil {
			t.Fatal(err)
		}
		// The bucket's node-2 becomes the forked log: the fork's files
		// written (over the same keys: new versions), the original's
		// later segments deleted (delete markers).
		forked := map[string]bool{}
		first := ""
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "seg-") {
				continue
			}
			forked["node-2/"+e.Name()] = true
			if first == "" || e.Name() < first {
				first = e.Name()
			}
			b, err := os.ReadFile(filepath.Join(fork, "node-2", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String("node-2/" + e.Name()), Body: bytes.NewReader(b)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range append(segKeys(t, f, "node-2", ".jsonl"), segKeys(t, f, "node-2", ".checkpoints")...) {
			if !forked[k] && k > "node-2/"+first {
				if _, err := admin.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(k)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		out = verify(t, f, 1)
		mustFail(t, out, "FAIL node-2: seg-", "versionId=", "checkpoint chain forked")
		onlyNode(t, out, "node-2")
		t.Logf("forked segments written over the bucket's:\n%s", out)
		// Without the versions, the bucket's current objects alone are a
		// valid log: only the older versions show the fork.
		verify(t, f, 0, "-versions=false")
	})
}

func mustFail(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("fleet verify output lacks %q:\n%s", w, out)
		}
	}
}
