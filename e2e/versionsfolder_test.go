package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestVersionsFolderRefused: SeaweedFS keeps an object's versions as the
// files of "<key>.versions/" and serves each as a key of its own. With a
// policy denying wh/v/pii.parquet, a signed GetObject of
// wh/v/pii.parquet.versions/v_<id> (decided as another key, s3:GetObject)
// answered that version of the denied object. Such keys are now refused
// on every backend; the allowed neighbour is still read.
func TestVersionsFolderRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b.name), func(t *testing.T) {
			var srv *s3Server
			if b.name == "versitygw" {
				srv = &s3Server{servers.StartS3Versioned(t)}
			} else {
				srv = b.start(t)
			}
			srv.CreateBucket(t, "lake")
			admin := srv.AdminClient()
			h := &harness{s3: srv, ctx: t.Context()}
			if _, err := admin.PutBucketVersioning(h.ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("lake"),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, data := range []string{"pii v1", "pii v2"} {
				out, err := admin.PutObject(h.ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/v/pii.parquet"), Body: strings.NewReader(data)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, aws.ToString(out.VersionId))
			}
			h.adminPut(t, "lake", "wh/v/ok.parquet", []byte("ok"))
			h.cs = startCountersignWithPolicy(t, srv.Port, `package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.resource.bucket == "lake"
	input.resource.key != "wh/v/pii.parquet"
}
`)
			P := styles(srv.Port)[0]
			get := func(key string) (int, *signResult, *icebergError) {
				status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", awsEscape(key)), Method: "GET",
					Headers: map[string][]string{"User-Agent": {"e2e"}}})
				return status, res, ierr
			}
			for _, id := range ids {
				for _, key := range []string{"wh/v/pii.parquet.versions/v_" + id, "wh/v/pii.parquet.versions/" + id} {
					status, res, ierr := get(key)
					if status == http.StatusOK {
						code, body := srv.send(t, "GET", res.URI, res.Headers, nil)
						t.Errorf("GET %s signed; %s answered %d %q", key, b.name, code, body)
						continue
					}
					if status != http.StatusBadRequest || !strings.Contains(ierr.Error.Message, ".versions") {
						t.Errorf("GET %s: %d %+v, want 400 naming the versions folder", key, status, ierr)
					}
				}
			}
			// The negative: the allowed object is signed and read.
			status, res, ierr := get("wh/v/ok.parquet")
			if status != http.StatusOK {
				t.Fatalf("GET of the allowed object: %d %+v", status, ierr)
			}
			if code, body := srv.send(t, "GET", res.URI, res.Headers, nil); code != http.StatusOK || !bytes.Equal(body, []byte("ok")) {
				t.Fatalf("GET of the allowed object: %s %d %q", b.name, code, body)
			}
		})
	}
}

// TestUploadFolderRefused: versitygw's posix backend keeps the parts of a
// multipart upload under the bucket's ".sgwtmp" folder and serves them as
// keys: with a policy denying wh/u/pii.parquet, a signed GET of
// .sgwtmp/multipart/<sha256 of the key>/<upload id>/1 (decided as another
// key) answered the in-progress part of the denied object's upload, and a
// PUT there would replace it. Such keys are now refused. (SeaweedFS's
// ".uploads" is refused by the same rule; its part files are not served
// under a name a client can know.)
func TestUploadFolderRefused(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	admin := srv.AdminClient()
	h := &harness{s3: srv, ctx: t.Context()}
	const key = "wh/u/pii.parquet"
	cu, err := admin.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("lake"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UploadPart(h.ctx, &s3.UploadPartInput{Bucket: aws.String("lake"), Key: aws.String(key), UploadId: cu.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("in-progress pii")}); err != nil {
		t.Fatal(err)
	}
	h.adminPut(t, "lake", "wh/u/ok.parquet", []byte("ok"))
	h.cs = startCountersignWithPolicy(t, srv.Port, `package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.resource.bucket == "lake"
	input.resource.key != "wh/u/pii.parquet"
}
`)
	P := styles(srv.Port)[0]
	part := fmt.Sprintf(".sgwtmp/multipart/%x/%s/1", sha256.Sum256([]byte(key)), aws.ToString(cu.UploadId))
	for _, method := range []string{"GET", "PUT"} {
		hdr := map[string][]string{"User-Agent": {"e2e"}}
		var body []byte
		if method == "PUT" {
			body = []byte("replaced")
			hdr["Content-Length"] = []string{"8"}
		}
		status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", awsEscape(part)), Method: method, Headers: hdr})
		if status == http.StatusOK {
			code, out := srv.send(t, method, res.URI, res.Headers, body)
			t.Errorf("%s %s signed; versitygw answered %d %q", method, part, code, out)
			continue
		}
		if status != http.StatusBadRequest || !strings.Contains(ierr.Error.Message, ".sgwtmp") {
			t.Errorf("%s %s: %d %+v, want 400 naming the folder", method, part, status, ierr)
		}
	}
	// The negative: the allowed object is signed and read.
	status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", "wh/u/ok.parquet"), Method: "GET",
		Headers: map[string][]string{"User-Agent": {"e2e"}}})
	if status != http.StatusOK {
		t.Fatalf("GET of the allowed object: %d %+v", status, ierr)
	}
	if code, out := srv.send(t, "GET", res.URI, res.Headers, nil); code != http.StatusOK || string(out) != "ok" {
		t.Fatalf("GET of the allowed object: %d %q", code, out)
	}
}
