package e2e

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestVersionDelete runs the shipped combined example policy against
// versitygw with a versioned bucket (posix --versioning-dir). Group etl's
// "delete" grant on wh/db/t/ (what snapshot expiry needs) deletes a key:
// versitygw leaves a delete marker and the versions stay. Removing a
// version for good — DELETE ?versionId, or a DeleteObjects <VersionId> —
// is refused, nothing is signed, and the version is still there; versitygw
// itself would have executed it (the admin client shows that last).
// Reading an old version is a read, signed and served.
func TestVersionDelete(t *testing.T) {
	srv := &s3Server{servers.StartS3Versioned(t)}
	srv.CreateBucket(t, "lake")
	admin := srv.AdminClient()
	ctx := t.Context()
	if _, err := admin.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("lake"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatalf("enable versioning: %v", err)
	}
	cs := startCountersign(t, combinedPolicyConfig(t, srv.Port), secretEnv()...)
	const key = "wh/db/t/data/old.parquet"
	var versions []string
	for _, data := range []string{"v1-bytes", "v2-bytes"} {
		out, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(key), Body: strings.NewReader(data)})
		if err != nil || aws.ToString(out.VersionId) == "" {
			t.Fatalf("put %s: %v (version %q)", data, err, aws.ToString(out.VersionId))
		}
		versions = append(versions, aws.ToString(out.VersionId))
	}
	liveVersions := func() []string {
		t.Helper()
		out, err := admin.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("lake"), Prefix: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		var vs []string
		for _, v := range out.Versions {
			vs = append(vs, aws.ToString(v.VersionId))
		}
		return vs
	}
	has := func(vs []string, v string) bool {
		for _, x := range vs {
			if x == v {
				return true
			}
		}
		return false
	}

	p := styles(srv.Port)[0]
	etl := cs.as(testIdP.Mint("etl-job", []string{"etl"}, nil))
	uri := p.object("lake", key)

	// A plain delete is granted: a delete marker, both versions stay.
	status, res, ierr, _ := etl.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "DELETE", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("delete: %d %+v", status, ierr)
	}
	if st, b := srv.send(t, "DELETE", res.URI, res.Headers, nil); st != http.StatusNoContent {
		t.Fatalf("S3 delete: %d %s", st, b)
	}
	if vs := liveVersions(); !has(vs, versions[0]) || !has(vs, versions[1]) {
		t.Fatalf("a plain delete removed versions: %v", vs)
	}

	// Removing a version for good is refused, however it is asked for.
	vuri := uri + "?versionId=" + awsEscape(versions[0])
	status, res, ierr, _ = etl.sign(t, "", signRequest{Region: testRegion, URI: vuri, Method: "DELETE", Headers: javaHeaders()})
	if status != http.StatusForbidden || res != nil || !strings.Contains(ierr.Error.Message, "DeleteObject") {
		t.Fatalf("DELETE ?versionId: %d %+v", status, ierr)
	}
	body := []byte(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>` + key + `</Key><VersionId>` + versions[1] + `</VersionId></Object></Delete>`)
	bs := string(body)
	status, res, ierr, _ = etl.sign(t, "", signRequest{Region: testRegion, URI: p.bucket("lake") + "?delete", Method: "POST",
		Headers: javaHeaders("Content-MD5", md5Base64(body)), Body: &bs})
	if status != http.StatusForbidden || res != nil {
		t.Fatalf("DeleteObjects <VersionId>: %d %+v", status, ierr)
	}
	if vs := liveVersions(); !has(vs, versions[0]) || !has(vs, versions[1]) {
		t.Fatalf("versions after the refusals: %v", vs)
	}

	// The first version is still readable, through countersign.
	ana := cs.as(testIdP.Mint("ana", []string{"analysts"}, nil))
	status, res, ierr, _ = ana.sign(t, "", signRequest{Region: testRegion, URI: vuri, Method: "GET", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("GET ?versionId: %d %+v", status, ierr)
	}
	if st, b := srv.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || !bytes.Equal(b, []byte("v1-bytes")) {
		t.Fatalf("S3 GET ?versionId: %d %s", st, b)
	}

	// What the refusal prevented: versitygw removes a version for good.
	if _, err := admin.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lake"), Key: aws.String(key), VersionId: aws.String(versions[0])}); err != nil {
		t.Fatal(err)
	}
	if vs := liveVersions(); has(vs, versions[0]) {
		t.Fatalf("versitygw kept version %s after a versioned delete: %v", versions[0], vs)
	}
}
