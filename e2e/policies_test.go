package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// combinedPolicyConfig runs countersign with the shipped example policy
// deploy/policies/combined (group grants + table scope + guardrails),
// loaded with the library deploy/policies/lib.
func combinedPolicyConfig(t *testing.T, port int) string {
	t.Helper()
	lib, err := filepath.Abs("../deploy/policies/lib")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("../deploy/policies/combined")
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, port)
	i := strings.Index(cfg, "policy:\n")
	return cfg[:i] + "policy:\n  paths: [" + quote(lib) + ", " + quote(dir) + "]\n"
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// TestExamplePolicyTables drives the shipped combined example policy
// through the HTTP endpoint with versitygw behind it.
func TestExamplePolicyTables(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, combinedPolicyConfig(t, srv.Port), secretEnv()...)
	h := &harness{s3: srv, cs: cs, ctx: t.Context()}
	for _, k := range []string{"wh/db/t/data/a.parquet", "wh/db/t/data/b.parquet", "wh/db/t2/data/c.parquet", "wh/db/other/d.parquet"} {
		h.adminPut(t, "lake", k, []byte("PAR1"))
	}
	p := styles(srv.Port)[0]
	const routeT, routeT2 = "/v1/prod/namespaces/db/tables/t/sign", "/v1/prod/namespaces/db/tables/t2/sign"

	analyst := cs.as(testIdP.Mint("ana", []string{"analysts"}, nil))
	get := func(key string) signRequest {
		return signRequest{Region: testRegion, URI: p.object("lake", key), Method: "GET", Headers: javaHeaders()}
	}

	// Allowed: the analyst reads a file of table t through t's route, and
	// the S3 server serves it.
	status, res, ierr, _ := analyst.sign(t, routeT, get("wh/db/t/data/a.parquet"))
	if status != http.StatusOK {
		t.Fatalf("analyst on t: %d %+v", status, ierr)
	}
	if st, body := srv.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || string(body) != "PAR1" {
		t.Fatalf("S3: %d %s", st, body)
	}

	// The same token for the table next door, and t's file through t2's
	// route: refused, nothing signed.
	for _, tc := range []struct{ route, key string }{
		{routeT2, "wh/db/t/data/a.parquet"},
		{routeT, "wh/db/t2/data/c.parquet"},
		{routeT, "wh/db/other/d.parquet"},
	} {
		status, res, ierr, _ := analyst.sign(t, tc.route, get(tc.key))
		if status != http.StatusForbidden || res != nil || !strings.Contains(ierr.Error.Message, tc.key) {
			t.Fatalf("%s %s: %d %+v", tc.route, tc.key, status, ierr)
		}
	}

	// A principal without grants gets nothing.
	nobody := cs.as(testIdP.Mint("mallory", []string{"visitors"}, nil))
	if status, res, _, _ := nobody.sign(t, routeT, get("wh/db/t/data/a.parquet")); status != http.StatusForbidden || res != nil {
		t.Fatalf("visitor: %d", status)
	}
	// Writes by a read-only principal are refused.
	put := signRequest{Region: testRegion, URI: p.object("lake", "wh/db/t/data/new.parquet"), Method: "PUT", Headers: javaHeaders()}
	if status, res, _, _ := analyst.sign(t, routeT, put); status != http.StatusForbidden || res != nil {
		t.Fatalf("analyst write: %d", status)
	}

	// DeleteObjects with one key outside the grant is refused whole.
	etl := cs.as(testIdP.Mint("etl-job", []string{"etl"}, nil))
	body := deleteXML("wh/db/t/data/a.parquet", "wh/db/t/data/b.parquet", "wh/db/other/d.parquet")
	bs := string(body)
	del := signRequest{Region: testRegion, URI: p.bucket("lake") + "?delete", Method: "POST",
		Headers: javaHeaders("Content-MD5", md5Base64(body)), Body: &bs}
	status, res, ierr, _ = etl.sign(t, routeT, del)
	if status != http.StatusForbidden || res != nil || !strings.Contains(ierr.Error.Message, "wh/db/other/d.parquet") {
		t.Fatalf("mixed DeleteObjects: %d %+v", status, ierr)
	}
	for _, k := range []string{"wh/db/t/data/a.parquet", "wh/db/t/data/b.parquet", "wh/db/other/d.parquet"} {
		if !h.adminExists(t, "lake", k) {
			t.Fatalf("%s was deleted", k)
		}
	}
	// Without the foreign key it is signed and S3 deletes both.
	body = deleteXML("wh/db/t/data/a.parquet", "wh/db/t/data/b.parquet")
	bs = string(body)
	del.Body, del.Headers = &bs, javaHeaders("Content-MD5", md5Base64(body))
	status, res, ierr, _ = etl.sign(t, routeT, del)
	if status != http.StatusOK {
		t.Fatalf("DeleteObjects within the grant: %d %+v", status, ierr)
	}
	if st, b := srv.send(t, "POST", res.URI, res.Headers, body); st != http.StatusOK {
		t.Fatalf("S3 DeleteObjects: %d %s", st, b)
	}
	if h.adminExists(t, "lake", "wh/db/t/data/a.parquet") || !h.adminExists(t, "lake", "wh/db/other/d.parquet") {
		t.Fatal("DeleteObjects deleted the wrong objects")
	}
}
