package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/signer"
)

// TestVersionDeleteDeniedByGrantsExample: the shipped grants example gives
// group etl "delete" under lake/wh/db/t/ — what snapshot expiry needs.
// Deleting a key there is signed; removing one of its versions for good
// (DELETE ?versionId, a DeleteObjects <VersionId>) is decided as
// s3:DeleteObjectVersion, denied, and recorded with the version. Reading
// and copying from a version are reads, decided and recorded with it.
func TestVersionDeleteDeniedByGrantsExample(t *testing.T) {
	dir := t.TempDir()
	s := newExampleServer(t, dir, "../deploy/policies/lib", "../deploy/policies/grants")
	etl := "Bearer " + mintToken("etl-job", time.Now().Add(time.Hour), "etl")
	ana := "Bearer " + mintToken("ana", time.Now().Add(time.Hour), "analysts")
	const obj = "http://localhost:7070/lake/wh/db/t/data/old.parquet"
	sign := func(who, method, uri, headers, body string) response {
		t.Helper()
		in := map[string]any{"region": "us-east-1", "uri": uri, "method": method, "headers": map[string][]string{}}
		if headers != "" {
			name, v, _ := strings.Cut(headers, ": ")
			in["headers"] = map[string][]string{name: {v}}
		}
		if body != "" {
			in["body"] = body
		}
		b, _ := json.Marshal(in)
		return doAs(t, s, who, "POST", "/v1/aws/s3/sign", string(b))
	}
	for _, tc := range []struct {
		name, who, method, uri, headers, body string
		status                                int
	}{
		{"delete", etl, "DELETE", obj, "", "", 200},
		{"delete version", etl, "DELETE", obj + "?versionId=3HL4kqtJlcpXroDTDmJ%2Bgq", "", "", 403},
		{"delete null version", etl, "DELETE", obj + "?versionId=null", "", "", 403},
		{"delete keys", etl, "POST", "http://localhost:7070/lake?delete", "", `<Delete><Object><Key>wh/db/t/data/a</Key></Object></Delete>`, 200},
		{"delete key versions", etl, "POST", "http://localhost:7070/lake?delete", "",
			`<Delete><Object><Key>wh/db/t/data/a</Key></Object><Object><Key>wh/db/t/data/b</Key><VersionId>v2</VersionId></Object></Delete>`, 403},
		{"read version", ana, "GET", obj + "?versionId=v1", "", "", 200},
		{"copy from version", etl, "PUT", "http://localhost:7070/lake/wh/db/t/data/new.parquet", "x-amz-copy-source: lake/wh/db/t/data/old.parquet?versionId=v1", "", 200},
	} {
		r := sign(tc.who, tc.method, tc.uri, tc.headers, tc.body)
		if r.status != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.name, r.status, tc.status, r.raw)
		}
		if tc.status == 403 && !strings.Contains(r.raw, "access denied") {
			t.Errorf("%s: %s", tc.name, r.raw)
		}
	}

	fsys, err := audit.DirFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = audit.Query(context.Background(), fsys, audit.Filter{Kind: audit.KindAccess}, func(rec *audit.Record, _ []byte) error {
		got = append(got, fmt.Sprintf("%s %s %s %s %q %s", rec.Operation, rec.Action, rec.Access, rec.Key, rec.VersionID, rec.Decision))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`DeleteObject s3:DeleteObject delete wh/db/t/data/old.parquet "" allow`,
		`DeleteObject s3:DeleteObjectVersion delete_version wh/db/t/data/old.parquet "3HL4kqtJlcpXroDTDmJ+gq" deny`,
		`DeleteObject s3:DeleteObjectVersion delete_version wh/db/t/data/old.parquet "null" deny`,
		`DeleteObjects s3:DeleteObject delete wh/db/t/data/a "" allow`,
		`DeleteObjects s3:DeleteObject delete wh/db/t/data/a "" allow`,
		`DeleteObjects s3:DeleteObjectVersion delete_version wh/db/t/data/b "v2" deny`,
		`GetObject s3:GetObjectVersion read wh/db/t/data/old.parquet "v1" allow`,
		`CopyObject s3:PutObject write wh/db/t/data/new.parquet "" allow`,
		`CopyObject s3:GetObjectVersion read wh/db/t/data/old.parquet "v1" allow`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// newExampleServer is newTestServer with a shipped example policy (its
// directory and the library, as policy.paths) and the audit log in
// auditDir.
func newExampleServer(t testing.TB, auditDir string, policyPaths ...string) *Server {
	t.Helper()
	engine, err := policy.Load(context.Background(), policy.Options{Paths: policyPaths})
	if err != nil {
		t.Fatal(err)
	}
	c := testClassifier(t, false)
	authn := testAuthenticator(t)
	creds := credentials.NewStaticCredentialsProvider("AKTEST", "secret", "")
	h, err := NewHandler(Stages{Authenticator: authn, Classifier: c, Authorizer: engine, Signer: signer.New(creds, signer.Options{}), Audit: openTestAuditIn(t, auditDir)}, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(h, Config{})
}
