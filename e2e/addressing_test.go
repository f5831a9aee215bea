package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestVirtualHostWithoutServerDomain is the regression test for
// "addressing: auto" on a custom endpoint (SECURITY.md). versitygw runs
// WITHOUT --virtual-domain, as MinIO without MINIO_DOMAIN or Ceph without
// rgw_dns_name would, and countersign with an endpoint that names no
// virtual-host domain (the old configuration shape, which still loads). A
// caller allowed only bucket "lake" asks for lake.localhost/other/secret:
// countersign used to decide it as bucket "lake", key "other/secret", and
// versitygw served bucket "other". Now the request is refused, and the
// path-style form is decided as the bucket the server serves.
func TestVirtualHostWithoutServerDomain(t *testing.T) {
	srv := &s3Server{servers.StartS3PathOnly(t)}
	srv.CreateBucket(t, "lake")
	srv.CreateBucket(t, "other")
	h := &harness{s3: srv, ctx: context.Background()}
	h.adminPut(t, "other", "secret", []byte("other bucket's secret"))
	h.adminPut(t, "lake", "wh/f.parquet", []byte("PAR1"))

	cfg := baseConfig(t, srv.Port)
	const domainLine = "    virtual_host_domain: localhost   # versitygw runs with --virtual-domain localhost\n"
	if !strings.Contains(cfg, domainLine) {
		t.Fatal("base configuration no longer names the virtual-host domain; update this test")
	}
	h.cs = startCountersign(t, strings.Replace(cfg, domainLine, "", 1), secretEnv()...)

	// The cross-bucket read.
	uri := fmt.Sprintf("http://lake.localhost:%d/other/secret", srv.Port)
	status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "GET", Headers: javaHeaders()})
	if status == http.StatusOK {
		code, body := srv.send(t, "GET", res.URI, res.Headers, nil)
		t.Fatalf("signed %s as bucket lake; versitygw answered %d: %q", uri, code, body)
	}
	if status != http.StatusForbidden || !strings.Contains(ierr.Error.Message, "virtual_host_domain") {
		t.Fatalf("sign %s: status %d %+v, want 403 naming virtual_host_domain", uri, status, ierr)
	}

	// Path-style is what the server serves: decided as bucket "other",
	// which the policy denies.
	status, _, ierr, _ = h.cs.sign(t, "", signRequest{Region: testRegion, URI: fmt.Sprintf("http://localhost:%d/other/secret", srv.Port), Method: "GET", Headers: javaHeaders()})
	if status != http.StatusForbidden || !strings.Contains(ierr.Error.Message, "arn:aws:s3:::other/secret") {
		t.Fatalf("path-style read of other/secret: status %d %+v, want a policy denial of arn:aws:s3:::other/secret", status, ierr)
	}

	// And the allowed bucket still works path-style.
	status, res, ierr, _ = h.cs.sign(t, "", signRequest{Region: testRegion, URI: fmt.Sprintf("http://localhost:%d/lake/wh/f.parquet", srv.Port), Method: "GET", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("path-style read of lake: status %d %+v", status, ierr)
	}
	if code, body := srv.send(t, "GET", res.URI, res.Headers, nil); code != http.StatusOK || string(body) != "PAR1" {
		t.Fatalf("path-style read of lake: versitygw answered %d %q", code, body)
	}
}
