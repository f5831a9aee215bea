package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopySourceWhitespaceBypass is the regression test for a
// non-canonical x-amz-copy-source (SECURITY.md). The policy denies one
// exact key and a suffix. A copy source with a trailing space or tab used
// to be decided as another key ("wh/secret.parquet "), and signed; HTTP
// and SigV4 trim the value, so versitygw copied the denied object. Two
// header lines and a comma-joined line sign alike. countersign now refuses
// every such spelling before the policy is asked.
func TestCopySourceWhitespaceBypass(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	h := &harness{s3: srv, ctx: t.Context()}
	h.adminPut(t, "lake", "wh/secret.parquet", []byte("secret"))
	h.adminPut(t, "lake", "wh/db.key", []byte("key material"))
	h.adminPut(t, "lake", "wh/open.parquet", []byte("open"))

	policyDir := t.TempDir()
	policy := `package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.resource.bucket == "lake"
	input.resource.key != "wh/secret.parquet"
	not endswith(input.resource.key, ".key")
}
`
	if err := os.WriteFile(filepath.Join(policyDir, "authz.rego"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	shipped, _ := filepath.Abs("testdata/policy")
	cfg := baseConfig(t, srv.Port)
	if !strings.Contains(cfg, fmt.Sprintf("%q", shipped)) {
		t.Fatal("base configuration's policy path not found; update this test")
	}
	h.cs = startCountersign(t, strings.Replace(cfg, fmt.Sprintf("%q", shipped), fmt.Sprintf("%q", policyDir), 1), secretEnv()...)

	P := styles(srv.Port)[0]
	copyTo := func(dst string, src []string) (int, *signResult, *icebergError) {
		status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", dst), Method: "PUT",
			Headers: map[string][]string{"x-amz-copy-source": src, "User-Agent": {"e2e"}}})
		return status, res, ierr
	}

	// The canonical spellings are decided as what they name.
	if status, _, ierr := copyTo("wh/out0", []string{"lake/wh/secret.parquet"}); status != http.StatusForbidden {
		t.Fatalf("copy of the denied key: %d %+v", status, ierr)
	}
	status, res, ierr := copyTo("wh/out1", []string{"lake/wh/open.parquet"})
	if status != http.StatusOK {
		t.Fatalf("copy of an allowed key: %d %+v", status, ierr)
	}
	if code, out := srv.send(t, "PUT", res.URI, res.Headers, nil); code != http.StatusOK {
		t.Fatalf("allowed copy: versitygw %d\n%s", code, out)
	}

	for i, src := range [][]string{
		{"lake/wh/secret.parquet "},
		{"lake/wh/secret.parquet\t"},
		{" lake/wh/secret.parquet"},
		{"lake/wh/db.key "},
		{"lake/wh/open.parquet,lake/wh/secret.parquet"},
		{"lake/wh/open.parquet", "lake/wh/secret.parquet"},
	} {
		dst := fmt.Sprintf("wh/stolen%d", i)
		status, res, ierr := copyTo(dst, src)
		if status == http.StatusOK {
			code, out := srv.send(t, "PUT", res.URI, res.Headers, nil)
			if h.adminExists(t, "lake", dst) {
				t.Errorf("copy source %q signed and executed (versitygw %d): %s now holds %q\n%s", src, code, dst, h.adminGet(t, "lake", dst), out)
			} else {
				t.Errorf("copy source %q signed (versitygw %d)", src, code)
			}
			continue
		}
		if status != http.StatusBadRequest || !strings.Contains(ierr.Error.Message, "x-amz-copy-source") {
			t.Errorf("copy source %q: %d %+v, want 400 naming x-amz-copy-source", src, status, ierr)
		}
	}
}
