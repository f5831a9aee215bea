package s3req

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/countersign/countersign/remotesign"
)

func testClassifier(t testing.TB) *Classifier {
	t.Helper()
	c, err := New(Options{Endpoints: []Endpoint{
		{Name: "local", Scheme: "http", Host: "localhost", Port: 7070, VirtualHostDomain: "localhost", Regions: []string{"us-east-1"}},
		{Name: "local-ip", Scheme: "http", Host: "127.0.0.1", Port: 7070, Addressing: AddressingPath, Regions: []string{"us-east-1"}},
		{Name: "minio", Scheme: "https", Host: "s3.example.com", Addressing: AddressingVirtual, VirtualHostDomain: "s3.example.com", Regions: []string{"eu-west-1"}},
		{Name: "aws", AWS: true, Regions: []string{"us-east-1", "eu-central-1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hdrs(kv ...string) remotesign.Headers {
	var h remotesign.Headers
	for i := 0; i+1 < len(kv); i += 2 {
		h = append(h, remotesign.Header{Name: kv[i], Values: []string{kv[i+1]}})
	}
	return h
}

func req(method, uri string, h remotesign.Headers) *remotesign.Request {
	return &remotesign.Request{Method: method, URI: uri, Region: "us-east-1", Headers: h, Provider: "s3"}
}

// TestOperationTable covers every row of the operation table (docs/design.md,
// S3 operations), in
// path-style and virtual-hosted addressing.
func TestOperationTable(t *testing.T) {
	c := testClassifier(t)
	cases := []struct {
		method, pathQuery string
		headers           remotesign.Headers
		op, action        string
		access            Access
		key, prefix       string // prefix "-" means no prefix
	}{
		{"GET", "/k/data/f.parquet", nil, "GetObject", "s3:GetObject", AccessRead, "k/data/f.parquet", "-"},
		{"GET", "/k?x-id=GetObject&versionId=v1&partNumber=2&response-content-type=a%2Fb", nil, "GetObject", "s3:GetObjectVersion", AccessRead, "k", "-"},
		{"GET", "/k?x-id=GetObject&partNumber=2&response-content-type=a%2Fb", nil, "GetObject", "s3:GetObject", AccessRead, "k", "-"},
		{"HEAD", "/k?versionId=null", nil, "HeadObject", "s3:GetObjectVersion", AccessRead, "k", "-"},
		{"HEAD", "/k", nil, "HeadObject", "s3:GetObject", AccessRead, "k", "-"},
		{"PUT", "/k?x-id=PutObject", nil, "PutObject", "s3:PutObject", AccessWrite, "k", "-"},
		{"PUT", "/k", hdrs("x-amz-copy-source", "/lake/src"), "CopyObject", "s3:PutObject", AccessWrite, "k", "-"},
		{"POST", "/k?uploads", nil, "CreateMultipartUpload", "s3:PutObject", AccessWrite, "k", "-"},
		{"POST", "/k?uploads=&x-id=CreateMultipartUpload", nil, "CreateMultipartUpload", "s3:PutObject", AccessWrite, "k", "-"},
		{"PUT", "/k?partNumber=1&uploadId=abc", nil, "UploadPart", "s3:PutObject", AccessWrite, "k", "-"},
		{"PUT", "/k?partNumber=1&uploadId=abc", hdrs("x-amz-copy-source", "lake/src"), "UploadPartCopy", "s3:PutObject", AccessWrite, "k", "-"},
		{"POST", "/k?uploadId=abc", nil, "CompleteMultipartUpload", "s3:PutObject", AccessWrite, "k", "-"},
		{"DELETE", "/k?uploadId=abc", nil, "AbortMultipartUpload", "s3:AbortMultipartUpload", AccessWrite, "k", "-"},
		{"GET", "/k?uploadId=abc&max-parts=10", nil, "ListParts", "s3:ListMultipartUploadParts", AccessRead, "k", "-"},
		{"DELETE", "/k", nil, "DeleteObject", "s3:DeleteObject", AccessDelete, "k", "-"},
		{"DELETE", "/k?versionId=3", nil, "DeleteObject", "s3:DeleteObjectVersion", AccessDeleteVersion, "k", "-"},
		{"DELETE", "/k?versionId=null&x-id=DeleteObject", nil, "DeleteObject", "s3:DeleteObjectVersion", AccessDeleteVersion, "k", "-"},
		{"GET", "/k?tagging&versionId=3", nil, "GetObjectTagging", "s3:GetObjectVersionTagging", AccessRead, "k", "-"},
		{"PUT", "/k?tagging&versionId=3", nil, "PutObjectTagging", "s3:PutObjectVersionTagging", AccessWrite, "k", "-"},
		{"DELETE", "/k?tagging&versionId=3", nil, "DeleteObjectTagging", "s3:DeleteObjectVersionTagging", AccessWrite, "k", "-"},
		{"GET", "/k?acl&versionId=3", nil, "GetObjectAcl", "s3:GetObjectVersionAcl", AccessAdmin, "k", "-"},
		{"PUT", "/k?acl&versionId=3", nil, "PutObjectAcl", "s3:PutObjectVersionAcl", AccessAdmin, "k", "-"},
		{"GET", "/k?attributes&versionId=3", nil, "GetObjectAttributes", "s3:GetObjectVersionAttributes", AccessAdmin, "k", "-"},
		{"POST", "/k?select&versionId=3", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"POST", "/k?uploadId=abc&versionId=3", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"GET", "?versionId=3", nil, OperationUnknown, ActionUnknown, AccessAdmin, "", "-"},
		{"GET", "?list-type=2&prefix=wh%2Fdb%2F&delimiter=%2F&max-keys=10&continuation-token=t&start-after=a&encoding-type=url&fetch-owner=true", nil, "ListObjectsV2", "s3:ListBucket", AccessList, "", "wh/db/"},
		{"GET", "?prefix=wh", nil, "ListObjects", "s3:ListBucket", AccessList, "", "wh"},
		{"GET", "", nil, "ListObjects", "s3:ListBucket", AccessList, "", ""},
		{"GET", "/k?tagging", nil, "GetObjectTagging", "s3:GetObjectTagging", AccessRead, "k", "-"},
		{"PUT", "/k?tagging", nil, "PutObjectTagging", "s3:PutObjectTagging", AccessWrite, "k", "-"},
		{"DELETE", "/k?tagging", nil, "DeleteObjectTagging", "s3:DeleteObjectTagging", AccessWrite, "k", "-"},
		{"HEAD", "", nil, "HeadBucket", "s3:ListBucket", AccessList, "", "-"},
		{"GET", "?location", nil, "GetBucketLocation", "s3:GetBucketLocation", AccessList, "", "-"},
		{"GET", "/k?acl", nil, "GetObjectAcl", "s3:GetObjectAcl", AccessAdmin, "k", "-"},
		{"PUT", "/k?acl", nil, "PutObjectAcl", "s3:PutObjectAcl", AccessAdmin, "k", "-"},
		{"PUT", "?policy", nil, "PutBucketPolicy", "s3:PutBucketPolicy", AccessAdmin, "", "-"},
		{"PUT", "/k?retention", nil, "PutObjectRetention", "s3:PutObjectRetention", AccessAdmin, "k", "-"},
		{"PUT", "/k?legal-hold", nil, "PutObjectLegalHold", "s3:PutObjectLegalHold", AccessAdmin, "k", "-"},
		{"POST", "/k?restore", nil, "RestoreObject", "s3:RestoreObject", AccessAdmin, "k", "-"},
		{"POST", "/k?select&select-type=2", nil, "SelectObjectContent", "s3:GetObject", AccessAdmin, "k", "-"},
		{"POST", "/k?select&select-type=1", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"POST", "/k?select", nil, "SelectObjectContent", "s3:GetObject", AccessAdmin, "k", "-"},
		{"PUT", "?lifecycle", nil, "PutBucketLifecycleConfiguration", "s3:PutLifecycleConfiguration", AccessAdmin, "", "-"},
		{"PUT", "?versioning", nil, "PutBucketVersioning", "s3:PutBucketVersioning", AccessAdmin, "", "-"},
		{"GET", "?uploads", nil, "ListMultipartUploads", "s3:ListBucketMultipartUploads", AccessAdmin, "", ""},
		{"GET", "?versions&prefix=a", nil, "ListObjectVersions", "s3:ListBucketVersions", AccessAdmin, "", "a"},
		{"PUT", "", nil, "CreateBucket", "s3:CreateBucket", AccessAdmin, "", "-"},
		{"DELETE", "", nil, "DeleteBucket", "s3:DeleteBucket", AccessAdmin, "", "-"},
		{"GET", "/k?foo=bar", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"GET", "/k?torrent", nil, "GetObjectTorrent", "s3:GetObjectTorrent", AccessAdmin, "k", "-"},
		{"GET", "/k?uploads", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"GET", "?list-type=1", nil, OperationUnknown, ActionUnknown, AccessAdmin, "", "-"},
		{"GET", "/k?tagging=x", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"PUT", "/k?partNumber=1", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"POST", "/k", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"PATCH", "/k", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"OPTIONS", "/k", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"GET", "/k?tagging&acl", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
		{"GET", "?prefix=a&continuation-token=x", nil, OperationUnknown, ActionUnknown, AccessAdmin, "", "-"},
		{"PUT", "/k?versionId=1", nil, OperationUnknown, ActionUnknown, AccessAdmin, "k", "-"},
	}
	for _, tc := range cases {
		for _, style := range []string{"path", "virtual"} {
			uri := "http://localhost:7070/lake"
			pq := tc.pathQuery
			if style == "virtual" {
				uri = "http://lake.localhost:7070"
				if pq == "" || pq[0] == '?' {
					pq = "/" + pq
				}
			}
			name := style + " " + tc.method + " " + tc.pathQuery
			t.Run(name, func(t *testing.T) {
				r, err := c.Classify(req(tc.method, uri+pq, tc.headers))
				if err != nil {
					t.Fatalf("Classify: %v", err)
				}
				if r.Operation != tc.op || r.Bucket != "lake" || r.Key != tc.key {
					t.Fatalf("got op=%s bucket=%s key=%q, want op=%s bucket=lake key=%q", r.Operation, r.Bucket, r.Key, tc.op, tc.key)
				}
				m := r.Targets[0]
				if m.Action != tc.action || m.Access != tc.access || m.Operation != tc.op {
					t.Fatalf("target = %+v, want action %s access %s", m, tc.action, tc.access)
				}
				switch {
				case tc.prefix == "-" && m.Prefix != nil:
					t.Fatalf("unexpected prefix %q", *m.Prefix)
				case tc.prefix != "-" && (m.Prefix == nil || *m.Prefix != tc.prefix):
					t.Fatalf("prefix = %v, want %q", m.Prefix, tc.prefix)
				}
				wantTargets := 1
				if tc.headers.Has("x-amz-copy-source") {
					wantTargets = 2
				}
				if len(r.Targets) != wantTargets {
					t.Fatalf("targets = %d, want %d", len(r.Targets), wantTargets)
				}
			})
		}
	}
}

func TestCopySourceTarget(t *testing.T) {
	c := testClassifier(t)
	r, err := c.Classify(req("PUT", "http://localhost:7070/lake/dst/b.parquet", hdrs("x-amz-copy-source", "/other/src/a%3Db.parquet?versionId=v7")))
	if err != nil {
		t.Fatal(err)
	}
	src := r.Targets[1]
	if src.Role != "copy-source" || src.Bucket != "other" || src.Key != "src/a=b.parquet" || src.VersionID != "v7" ||
		src.Action != "s3:GetObjectVersion" || src.Access != AccessRead {
		t.Fatalf("copy source target = %+v", src)
	}
	if r.Targets[0].Action != "s3:PutObject" || r.Targets[0].Key != "dst/b.parquet" {
		t.Fatalf("destination target = %+v", r.Targets[0])
	}
}

func TestKeysAndEndpoints(t *testing.T) {
	c := testClassifier(t)
	cases := []struct {
		uri, region, bucket, key, endpoint string
	}{
		{"http://localhost:7070/lake/a%20b%3Dc%2Bd%25e~f/%C3%A9t%C3%A9.parquet", "us-east-1", "lake", "a b=c+d%e~f/été.parquet", "local"},
		{"http://lake.localhost:7070/a%20b", "us-east-1", "lake", "a b", "local"},
		{"http://my.lake.localhost:7070/x", "us-east-1", "my.lake", "x", "local"},
		{"http://127.0.0.1:7070/lake/x", "us-east-1", "lake", "x", "local-ip"},
		{"https://lake.s3.example.com/x", "eu-west-1", "lake", "x", "minio"},
		{"https://lake.s3.example.com:443/x", "eu-west-1", "lake", "x", "minio"},
		{"https://lake.s3.us-east-1.amazonaws.com/x", "us-east-1", "lake", "x", "aws"},
		{"https://s3.eu-central-1.amazonaws.com/lake/x", "eu-central-1", "lake", "x", "aws"},
		{"https://lake.s3.amazonaws.com/x", "us-east-1", "lake", "x", "aws"},
		{"https://lake.s3.dualstack.eu-central-1.amazonaws.com/x", "eu-central-1", "lake", "x", "aws"},
	}
	for _, tc := range cases {
		in := req("GET", tc.uri, nil)
		in.Region = tc.region
		r, err := c.Classify(in)
		if err != nil {
			t.Errorf("%s: %v", tc.uri, err)
			continue
		}
		if r.Bucket != tc.bucket || r.Key != tc.key || r.Endpoint.Name != tc.endpoint {
			t.Errorf("%s: got bucket=%q key=%q endpoint=%s", tc.uri, r.Bucket, r.Key, r.Endpoint.Name)
		}
		if !r.AddContentSHA256 || r.ContentSHA256 != "UNSIGNED-PAYLOAD" {
			t.Errorf("%s: payload hash = %q (add %v)", tc.uri, r.ContentSHA256, r.AddContentSHA256)
		}
	}
}

func deleteBody(keys ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, k := range keys {
		b.WriteString("<Object><Key>" + k + "</Key></Object>")
	}
	b.WriteString("<Quiet>true</Quiet></Delete>")
	return b.String()
}

func md5b64(s string) string {
	sum := md5.Sum([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func TestDeleteObjects(t *testing.T) {
	c := testClassifier(t)
	body := deleteBody("wh/t/a.parquet", "wh/t/b&amp;c.parquet")
	in := req("POST", "http://localhost:7070/lake?delete", hdrs("Content-MD5", md5b64(body)))
	in.Body, in.HasBody = body, true
	r, err := c.Classify(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Targets) != 2 || r.Targets[0].Key != "wh/t/a.parquet" || r.Targets[1].Key != "wh/t/b&c.parquet" {
		t.Fatalf("targets = %+v", r.Targets)
	}
	for _, tg := range r.Targets {
		if tg.Action != "s3:DeleteObject" || tg.Access != AccessDelete || tg.Role != "delete-key" {
			t.Fatalf("target = %+v", tg)
		}
	}
	sum := sha256.Sum256([]byte(body))
	if r.ContentSHA256 != hex.EncodeToString(sum[:]) || !r.AddContentSHA256 {
		t.Fatalf("Content-MD5 does not bind a body: payload hash = %q, want the body's SHA-256", r.ContentSHA256)
	}

	// No binding header: countersign binds the body with its real hash.
	in = req("POST", "http://localhost:7070/lake?delete", nil)
	in.Body, in.HasBody = body, true
	r, err = c.Classify(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.ContentSHA256 != hex.EncodeToString(sum[:]) || !r.AddContentSHA256 {
		t.Fatalf("payload hash = %q, want body hash", r.ContentSHA256)
	}

	// The client's own payload hash of the body, or UNSIGNED-PAYLOAD with
	// a matching x-amz-checksum-sha256, bind it too.
	in = req("POST", "http://localhost:7070/lake?delete", hdrs("x-amz-content-sha256", hex.EncodeToString(sum[:])))
	in.Body, in.HasBody = body, true
	if r, err = c.Classify(in); err != nil || r.AddContentSHA256 || r.ContentSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("client payload hash: %v %+v", err, r)
	}
	in = req("POST", "http://localhost:7070/lake?delete", hdrs("x-amz-checksum-sha256", base64.StdEncoding.EncodeToString(sum[:]), "x-amz-content-sha256", "UNSIGNED-PAYLOAD"))
	in.Body, in.HasBody = body, true
	if r, err = c.Classify(in); err != nil || r.ContentSHA256 != "UNSIGNED-PAYLOAD" {
		t.Fatalf("x-amz-checksum-sha256: %v %+v", err, r)
	}
}

// TestDeleteObjectsWeakBindingRefused: with an unsigned payload, no
// checksum but SHA-256 binds a DeleteObjects body. A CRC is linear, so a
// second body with the same CRC and length (deleting other keys) is cheap
// to compute; MD5 and SHA-1 have practical collisions.
func TestDeleteObjectsWeakBindingRefused(t *testing.T) {
	c := testClassifier(t)
	body := deleteBody("wh/t/a.parquet")
	sumOf := func(alg string) string {
		for _, a := range checksumAlgorithms {
			if a.name == alg {
				h := a.new()
				h.Write([]byte(body))
				return base64.StdEncoding.EncodeToString(h.Sum(nil))
			}
		}
		t.Fatalf("no algorithm %s", alg)
		return ""
	}
	for _, payload := range []string{"UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"} {
		for _, binding := range [][2]string{
			{"Content-MD5", md5b64(body)},
			{"x-amz-checksum-crc32", sumOf("crc32")},
			{"x-amz-checksum-crc32c", sumOf("crc32c")},
			{"x-amz-checksum-crc64nvme", sumOf("crc64nvme")},
			{"x-amz-checksum-sha1", sumOf("sha1")},
		} {
			in := req("POST", "http://localhost:7070/lake?delete", hdrs(binding[0], binding[1], "x-amz-content-sha256", payload))
			in.Body, in.HasBody = body, true
			r, err := c.Classify(in)
			var ce *Error
			if !errors.As(err, &ce) || ce.Status != 400 || !strings.Contains(ce.Msg, "not bound to the signature") ||
				!strings.Contains(ce.Msg, "x-amz-checksum-sha256") {
				t.Fatalf("%s with %s: got %+v, %v; want a 400 saying what to send", binding[0], payload, r, err)
			}
		}
	}
	// Streaming stays refused even with a SHA-256 checksum: the bytes
	// countersign saw are not the aws-chunked body that is sent.
	in := req("POST", "http://localhost:7070/lake?delete", hdrs("x-amz-checksum-sha256", sumOf("sha256"), "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"))
	in.Body, in.HasBody = body, true
	if _, err := c.Classify(in); err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Fatalf("streaming DeleteObjects: %v", err)
	}
	// A mismatching checksum is still refused, before anything is signed.
	in = req("POST", "http://localhost:7070/lake?delete", hdrs("x-amz-checksum-crc32", sumOf("crc32c")))
	in.Body, in.HasBody = body, true
	if _, err := c.Classify(in); err == nil || !strings.Contains(err.Error(), "x-amz-checksum-crc32 does not match") {
		t.Fatalf("mismatching crc32: %v", err)
	}
}

func TestCRC64NVME(t *testing.T) {
	// Catalogue check value of CRC-64/NVME for "123456789".
	h := checksumAlgorithms[2].new()
	h.Write([]byte("123456789"))
	if got := hex.EncodeToString(h.Sum(nil)); got != "ae8b14860a799888" {
		t.Fatalf("crc64nvme check = %s", got)
	}
}

// TestRejects lists malformed and adversarial descriptions. Each must be
// refused with the given status and a message containing the given text.
func TestRejects(t *testing.T) {
	c := testClassifier(t)
	body := deleteBody("a")
	big := deleteBody(strings.Split(strings.Repeat("k,", 1001), ",")[:1001]...)
	cases := []struct {
		name, method, uri string
		headers           remotesign.Headers
		body              *string
		region            string
		status            int
		msg               string
	}{
		{"unknown host", "GET", "http://evil.example:7070/lake/k", nil, nil, "", 403, "not a configured S3 endpoint"},
		{"wrong port", "GET", "http://localhost:7071/lake/k", nil, nil, "", 403, "not a configured"},
		{"wrong scheme", "GET", "https://localhost:7070/lake/k", nil, nil, "", 403, "not a configured"},
		{"default port not configured", "GET", "http://localhost/lake/k", nil, nil, "", 403, "not a configured"},
		{"region not allowed", "GET", "http://localhost:7070/lake/k", nil, nil, "eu-west-1", 403, "region \"eu-west-1\" is not allowed"},
		{"aws region mismatch host", "GET", "https://lake.s3.eu-central-1.amazonaws.com/k", nil, nil, "us-east-1", 403, `is S3's endpoint in region "eu-central-1", but the request's region is "us-east-1"`},
		{"aws region mismatch path style", "GET", "https://s3.dualstack.eu-central-1.amazonaws.com/lake/k", nil, nil, "us-east-1", 403, `region "eu-central-1"`},
		{"aws region not in list", "GET", "https://lake.s3.ap-south-1.amazonaws.com/k", nil, nil, "ap-south-1", 403, "is not allowed"},
		{"aws global endpoint other region", "GET", "https://lake.s3.amazonaws.com/k", nil, nil, "eu-central-1", 403, `region "us-east-1", but the request's region is "eu-central-1"`},
		{"lookalike suffix", "GET", "http://lakelocalhost:7070/k", nil, nil, "", 403, "not a configured"},
		{"suffix attack", "GET", "http://localhost.evil.com:7070/lake/k", nil, nil, "", 403, "not a configured"},
		{"ip literal not configured", "GET", "http://127.0.0.2:7070/lake/k", nil, nil, "", 403, "not a configured"},
		{"short ip form", "GET", "http://127.1:7070/lake/k", nil, nil, "", 403, "not a configured"},
		{"virtual on ip", "GET", "http://lake.127.0.0.1:7070/k", nil, nil, "", 403, "not a configured"},
		{"virtual not allowed", "GET", "http://127.0.0.1:7070/k", nil, nil, "", 400, "bucket name \"k\""},
		{"path style on virtual-only", "GET", "https://s3.example.com/lake/k", nil, nil, "eu-west-1", 403, "not a configured"},
		{"ipv6 literal", "GET", "http://[::1]:7070/lake/k", nil, nil, "", 403, "not a configured"},
		{"ipv6 non canonical", "GET", "http://[0:0::1]:7070/lake/k", nil, nil, "", 400, "canonical"},
		{"userinfo", "GET", "http://user:pw@localhost:7070/lake/k", nil, nil, "", 400, "user information"},
		{"userinfo at host", "GET", "http://localhost:7070@evil.com/lake/k", nil, nil, "", 400, "user information"},
		{"fragment", "GET", "http://localhost:7070/lake/k#x", nil, nil, "", 400, "fragment"},
		{"upper-case host", "GET", "http://LOCALHOST:7070/lake/k", nil, nil, "", 400, "lower-case"},
		{"mixed-case host", "GET", "http://Lake.localhost:7070/k", nil, nil, "", 400, "lower-case"},
		{"trailing dot host", "GET", "http://localhost.:7070/lake/k", nil, nil, "", 400, "dot"},
		{"empty label", "GET", "http://lake..localhost:7070/k", nil, nil, "", 400, "empty label"},
		{"port leading zero", "GET", "http://localhost:07070/lake/k", nil, nil, "", 400, "port"},
		{"port empty", "GET", "http://localhost:/lake/k", nil, nil, "", 400, "port"},
		{"port too big", "GET", "http://localhost:99999/lake/k", nil, nil, "", 400, "port"},
		{"relative uri", "GET", "/lake/k", nil, nil, "", 400, "absolute"},
		{"ftp scheme", "GET", "ftp://localhost:7070/lake/k", nil, nil, "", 400, "absolute"},
		{"upper scheme", "GET", "HTTP://localhost:7070/lake/k", nil, nil, "", 400, "absolute"},
		{"no host", "GET", "http:///lake/k", nil, nil, "", 400, "no host"},
		{"encoded slash in bucket", "GET", "http://localhost:7070/lake%2Fk/x", nil, nil, "", 400, "bucket name"},
		{"encoded slash in key", "GET", "http://localhost:7070/lake/a%2Fb", nil, nil, "", 400, "canonical S3 encoding"},
		{"lower-case hex", "GET", "http://localhost:7070/lake/a%3db", nil, nil, "", 400, "canonical S3 encoding"},
		{"unencoded equals", "GET", "http://localhost:7070/lake/a=b", nil, nil, "", 400, "canonical S3 encoding"},
		{"raw plus in key", "GET", "http://localhost:7070/lake/a+b", nil, nil, "", 400, "raw '+'"},
		{"raw space", "GET", "http://localhost:7070/lake/a b", nil, nil, "", 400, "canonical S3 encoding"},
		{"over-encoded unreserved", "GET", "http://localhost:7070/lake/%61", nil, nil, "", 400, "canonical S3 encoding"},
		{"double encoding", "GET", "http://localhost:7070/lake/a%252e%252e/b", nil, nil, "", 200, ""},
		{"dot-dot segment", "GET", "http://localhost:7070/lake/wh/../other/k", nil, nil, "", 400, `".." path segment`},
		{"dot segment", "GET", "http://localhost:7070/lake/wh/./k", nil, nil, "", 400, `"." path segment`},
		{"encoded dot-dot", "GET", "http://localhost:7070/lake/wh/%2E%2E/k", nil, nil, "", 400, "canonical"},
		{"double slash", "GET", "http://localhost:7070/lake//k", nil, nil, "", 400, "empty path segment"},
		{"trailing slash key", "GET", "http://localhost:7070/lake/dir/", nil, nil, "", 400, "empty path segment"},
		{"empty bucket", "GET", "http://localhost:7070//k", nil, nil, "", 400, "empty bucket"},
		{"nul in key", "GET", "http://localhost:7070/lake/a%00b", nil, nil, "", 400, "control character"},
		{"newline in key", "GET", "http://localhost:7070/lake/a%0Ab", nil, nil, "", 400, "control character"},
		{"invalid utf8 key", "GET", "http://localhost:7070/lake/a%FFb", nil, nil, "", 400, "UTF-8"},
		{"truncated escape", "GET", "http://localhost:7070/lake/a%4", nil, nil, "", 400, "percent escape"},
		{"bad escape", "GET", "http://localhost:7070/lake/a%zz", nil, nil, "", 400, "percent escape"},
		{"key too long", "GET", "http://localhost:7070/lake/" + strings.Repeat("a", 1025), nil, nil, "", 400, "longer than 1024"},
		{"bucket upper", "GET", "http://localhost:7070/Lake/k", nil, nil, "", 400, "bucket name"},
		{"bucket too short", "GET", "http://localhost:7070/ab/k", nil, nil, "", 400, "3 to 63"},
		{"bucket ip", "GET", "http://localhost:7070/10.0.0.1/k", nil, nil, "", 400, "IP address"},
		{"bucket dots", "GET", "http://localhost:7070/a..b/k", nil, nil, "", 400, "not a valid"},
		{"duplicate query key", "GET", "http://localhost:7070/lake/k?versionId=1&versionId=2", nil, nil, "", 400, "more than once"},
		{"duplicate subresource", "GET", "http://localhost:7070/lake/k?tagging&tagging", nil, nil, "", 400, "more than once"},
		{"encoded duplicate", "GET", "http://localhost:7070/lake/k?uploadId=1&upload%49d=2", nil, nil, "", 400, "more than once"},
		{"empty query param", "GET", "http://localhost:7070/lake/k?a&&b", nil, nil, "", 400, "empty parameter"},
		{"nameless query param", "GET", "http://localhost:7070/lake/k?=x", nil, nil, "", 400, "without a name"},
		{"plus in prefix", "GET", "http://localhost:7070/lake?prefix=a+b", nil, nil, "", 400, "raw '+'"},
		{"presign signature", "GET", "http://localhost:7070/lake/k?X-Amz-Signature=abc", nil, nil, "", 400, "presigned"},
		{"presign credential case", "GET", "http://localhost:7070/lake/k?x-amz-credential=abc", nil, nil, "", 400, "presigned"},
		{"presign v2", "GET", "http://localhost:7070/lake/k?AWSAccessKeyId=a&Signature=b&Expires=1", nil, nil, "", 400, "presigned"},
		{"prefix traversal", "GET", "http://localhost:7070/lake?list-type=2&prefix=wh%2F..%2Fother", nil, nil, "", 400, `".." path segment`},
		{"prefix control", "GET", "http://localhost:7070/lake?list-type=2&prefix=a%00", nil, nil, "", 400, "control character"},
		{"host header mismatch", "GET", "http://localhost:7070/lake/k", hdrs("Host", "evil.com"), nil, "", 400, "Host"},
		{"signed streaming payload", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"), nil, "", 400, "not supported"},
		{"bad content sha", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-content-sha256", "abc"), nil, "", 400, "not supported"},
		{"copy source on get", "GET", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source", "lake/a"), nil, "", 400, "only valid"},
		{"copy source no key", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source", "lake"), nil, "", 400, "bucket/key"},
		{"copy source dot-dot", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source", "lake/a/../b"), nil, "", 400, `".."`},
		{"copy source arn", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source", "arn:aws:s3:us-east-1:1:accesspoint/ap/object/k"), nil, "", 400, "ARN"},
		{"copy source extra param", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source", "lake/a?versionId=1&x=2"), nil, "", 400, "versionId"},
		{"copy source plus", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source", "lake/a+b"), nil, "", 400, "raw '+'"},
		{"copy range without source", "PUT", "http://localhost:7070/lake/k", hdrs("x-amz-copy-source-range", "bytes=0-1"), nil, "", 400, "requires"},
		{"delete no body", "POST", "http://localhost:7070/lake?delete", nil, nil, "", 400, "requires the request body"},
		{"delete empty body", "POST", "http://localhost:7070/lake?delete", nil, ptr(""), "", 400, "requires the request body"},
		{"delete md5 mismatch", "POST", "http://localhost:7070/lake?delete", hdrs("Content-MD5", md5b64(body+" ")), &body, "", 400, "Content-MD5 does not match"},
		{"delete crc mismatch", "POST", "http://localhost:7070/lake?delete", hdrs("x-amz-checksum-crc32", "AAAAAA=="), &body, "", 400, "does not match"},
		{"delete sha mismatch", "POST", "http://localhost:7070/lake?delete", hdrs("x-amz-content-sha256", strings.Repeat("0", 64)), &body, "", 400, "does not match"},
		{"delete unbound", "POST", "http://localhost:7070/lake?delete", hdrs("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), &body, "", 400, "not bound"},
		{"delete invalid xml", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object><Key>a</Key></Delete>"), "", 400, "not valid XML"},
		{"delete doctype", "POST", "http://localhost:7070/lake?delete", nil, ptr(`<!DOCTYPE d [<!ENTITY e "x">]><Delete><Object><Key>&e;</Key></Object></Delete>`), "", 400, "directives"},
		{"delete unknown element", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object><Key>a</Key><Prefix>b</Prefix></Object></Delete>"), "", 400, "unexpected element"},
		{"delete wrong root", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Remove><Object><Key>a</Key></Object></Remove>"), "", 400, "unexpected element"},
		{"delete two keys in object", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>"), "", 400, "more than one <Key>"},
		{"delete object without key", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object></Object></Delete>"), "", 400, "no <Key>"},
		{"delete no objects", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Quiet>true</Quiet></Delete>"), "", 400, "no keys"},
		{"delete empty key", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object><Key></Key></Object></Delete>"), "", 400, "empty"},
		{"delete dot-dot key", "POST", "http://localhost:7070/lake?delete", nil, ptr(deleteBody("a/../b")), "", 400, `".."`},
		{"delete too many keys", "POST", "http://localhost:7070/lake?delete", nil, &big, "", 400, "more than 1000 keys"},
		{"delete oversized body", "POST", "http://localhost:7070/lake?delete", nil, ptr(strings.Repeat(" ", 1<<20+1)), "", 400, "larger than"},
		{"delete text outside", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete>junk<Object><Key>a</Key></Object></Delete>"), "", 400, "unexpected text"},
		{"delete second root", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object><Key>a</Key></Object></Delete><Delete><Object><Key>b</Key></Object></Delete>"), "", 400, "unexpected element"},
		{"delete foreign namespace", "POST", "http://localhost:7070/lake?delete", nil, ptr(`<Delete xmlns="urn:x"><Object><Key>a</Key></Object></Delete>`), "", 400, "namespace"},
		{"delete bad quiet", "POST", "http://localhost:7070/lake?delete", nil, ptr("<Delete><Object><Key>a</Key></Object><Quiet>yes</Quiet></Delete>"), "", 400, "Quiet"},
		// Found by a black-box probe: an empty uploadId was signed as
		// AbortMultipartUpload, which Ceph RGW serves as DeleteObject.
		{"abort with empty uploadId", "DELETE", "http://localhost:7070/lake/k?uploadId=", nil, nil, "", 400, "\"uploadId\" is empty"},
		{"abort with valueless uploadId", "DELETE", "http://localhost:7070/lake/k?uploadId", nil, nil, "", 400, "\"uploadId\" is empty"},
		{"list parts with empty uploadId", "GET", "http://localhost:7070/lake/k?uploadId=", nil, nil, "", 400, "\"uploadId\" is empty"},
		{"complete with empty uploadId", "POST", "http://localhost:7070/lake/k?uploadId=", nil, nil, "", 400, "\"uploadId\" is empty"},
		{"upload part with empty uploadId", "PUT", "http://localhost:7070/lake/k?partNumber=1&uploadId=", nil, nil, "", 400, "\"uploadId\" is empty"},
		{"upload part without part number", "PUT", "http://localhost:7070/lake/k?uploadId=u", nil, nil, "", 400, "needs the uri query parameter \"partNumber\""},
		{"part number zero", "PUT", "http://localhost:7070/lake/k?partNumber=0&uploadId=u", nil, nil, "", 400, "\"partNumber\" is \"0\""},
		{"part number leading zero", "PUT", "http://localhost:7070/lake/k?partNumber=01&uploadId=u", nil, nil, "", 400, "\"partNumber\""},
		{"part number not a number", "PUT", "http://localhost:7070/lake/k?partNumber=abc&uploadId=u", nil, nil, "", 400, "\"partNumber\""},
		{"part number too large", "PUT", "http://localhost:7070/lake/k?partNumber=10001&uploadId=u", nil, nil, "", 400, "\"partNumber\""},
		{"part number signed", "GET", "http://localhost:7070/lake/k?partNumber=%2B1", nil, nil, "", 400, "\"partNumber\""},
		{"upload part 10000", "PUT", "http://localhost:7070/lake/k?partNumber=10000&uploadId=u", nil, nil, "", 200, ""},
		{"get part 1", "GET", "http://localhost:7070/lake/k?partNumber=1", nil, nil, "", 200, ""},
		// Found by a black-box probe: "010" was signed as content-length:10
		// and echoed as 010, which the server hashes as sent.
		{"content-length leading zero", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "010"), nil, "", 400, "Content-Length \"010\" is not a length"},
		{"content-length zeros", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "000"), nil, "", 400, "Content-Length"},
		{"content-length plus", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "+10"), nil, "", 400, "Content-Length"},
		{"content-length negative", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "-1"), nil, "", 400, "Content-Length"},
		{"content-length not a number", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "abc"), nil, "", 400, "Content-Length"},
		{"content-length beyond 5 TiB", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "5497558138881"), nil, "", 400, "Content-Length"},
		{"content-length huge", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "99999999999999999999999"), nil, "", 400, "Content-Length"},
		{"content-length 5 TiB", "PUT", "http://localhost:7070/lake/k", hdrs("Content-Length", "5497558138880"), nil, "", 200, ""},
		{"delete content-length not the body's", "POST", "http://localhost:7070/lake?delete", hdrs("Content-Length", "1"), &body, "", 400, "is not the body's length"},
		{"copy source on an unknown operation", "PUT", "http://localhost:7070/lake/k?x-id=PutObject", hdrs("x-amz-copy-source", "/lake/src"), nil, "", 400, "names no operation countersign knows"},
		{"access point alias", "GET", "http://localhost:7070/lake-ap-abcdefgh-s3alias/k", nil, nil, "", 400, "reserves for aliases"},
		{"object lambda alias", "GET", "http://localhost:7070/lake-abcdefgh--ol-s3/k", nil, nil, "", 400, "reserves for aliases"},
		{"punycode prefix", "GET", "http://localhost:7070/xn--lake/k", nil, nil, "", 400, "starts with \"xn--\""},
		{"sthree prefix", "GET", "http://localhost:7070/sthree-lake/k", nil, nil, "", 400, "starts with \"sthree-\""},
		{"directory bucket", "GET", "http://localhost:7070/lake--use1-az4--x-s3/k", nil, nil, "", 200, ""},
		{"delete multi-valued md5", "POST", "http://localhost:7070/lake?delete", remotesign.Headers{{Name: "Content-MD5", Values: []string{md5b64(body), md5b64("x")}}}, &body, "", 400, "exactly one value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := req(tc.method, tc.uri, tc.headers)
			if tc.region != "" {
				in.Region = tc.region
			}
			if tc.body != nil {
				in.Body, in.HasBody = *tc.body, true
			}
			r, err := c.Classify(in)
			if tc.status == 200 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			ce, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %T %v is not *Error", err, err)
			}
			if ce.Status != tc.status || !strings.Contains(ce.Msg, tc.msg) {
				t.Fatalf("got %d %q, want %d containing %q", ce.Status, ce.Msg, tc.status, tc.msg)
			}
			if tc.status == http.StatusBadRequest && len(ce.Msg) > 300 {
				t.Fatalf("message too long: %d bytes", len(ce.Msg))
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestDoubleEncodingIsLiteral(t *testing.T) {
	// %252e decodes once to the literal "%2e": the key holds a percent sign,
	// not a dot, and S3 decodes exactly once too.
	c := testClassifier(t)
	r, err := c.Classify(req("GET", "http://localhost:7070/lake/a%252e%252e/b", nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.Key != "a%2e%2e/b" {
		t.Fatalf("key = %q", r.Key)
	}
}

func TestAllowUnsafeKeys(t *testing.T) {
	c, err := New(Options{AllowUnsafeKeys: true, Endpoints: []Endpoint{{Scheme: "http", Host: "localhost", Port: 7070, Regions: []string{"us-east-1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Classify(req("GET", "http://localhost:7070/lake/dir/", nil))
	if err != nil || r.Key != "dir/" {
		t.Fatalf("got %v %v", r, err)
	}
}

func TestEndpointValidate(t *testing.T) {
	bad := []Endpoint{
		{Host: "localhost"},
		{Host: "localhost", Regions: []string{"US_EAST"}},
		{Host: "localhost", Regions: []string{"r"}, Scheme: "ftp"},
		{Host: "localhost", Regions: []string{"r"}, Addressing: "weird"},
		{Host: "Localhost", Regions: []string{"r"}},
		{Host: "localhost:80", Regions: []string{"r"}},
		{AWS: true, Host: "x", Regions: []string{"r"}},
		{Regions: []string{"r"}},
		{Host: "127.0.0.1", Addressing: AddressingVirtual, Regions: []string{"r"}},
		{Host: "localhost", Port: 70000, Regions: []string{"r"}},
	}
	for i, e := range bad {
		if err := e.Validate(); err == nil {
			t.Errorf("case %d: %+v accepted", i, e)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("no endpoints accepted")
	}
}

// TestPayloadHash: the client's x-amz-content-sha256 is kept; a declared
// zero length gets the empty payload's hash (SigV4 signers leave a zero
// content-length unsigned, so UNSIGNED-PAYLOAD would let any body through);
// anything else gets UNSIGNED-PAYLOAD.
func TestPayloadHash(t *testing.T) {
	c := testClassifier(t)
	const uri = "http://localhost:7070/lake/wh/db/t/data/a.parquet"
	for _, tc := range []struct {
		name    string
		headers remotesign.Headers
		want    string
		add     bool
	}{
		{"no length", nil, "UNSIGNED-PAYLOAD", true},
		{"zero length", hdrs("Content-Length", "0"), EmptySHA256, true},
		{"zero length, lowercase name", hdrs("content-length", "0"), EmptySHA256, true},
		{"positive length", hdrs("Content-Length", "10"), "UNSIGNED-PAYLOAD", true},
		{"positive length with a zero", hdrs("Content-Length", "100"), "UNSIGNED-PAYLOAD", true},
		{"zero length, client hash", hdrs("Content-Length", "0", "x-amz-content-sha256", "UNSIGNED-PAYLOAD"), "UNSIGNED-PAYLOAD", false},
		{"client hash", hdrs("x-amz-content-sha256", strings.Repeat("a", 64)), strings.Repeat("a", 64), false},
	} {
		for _, method := range []string{"PUT", "GET"} {
			r, err := c.Classify(req(method, uri, tc.headers))
			if err != nil {
				t.Fatalf("%s %s: %v", method, tc.name, err)
			}
			if r.ContentSHA256 != tc.want || r.AddContentSHA256 != tc.add {
				t.Errorf("%s %s: payload hash %q (add %v), want %q (add %v)", method, tc.name, r.ContentSHA256, r.AddContentSHA256, tc.want, tc.add)
			}
		}
	}
	if sum := sha256.Sum256(nil); hex.EncodeToString(sum[:]) != EmptySHA256 {
		t.Fatal("EmptySHA256 is not the SHA-256 of nothing")
	}
}

// TestIsIPAddr: isIPAddr agrees with netip.ParseAddr.
func TestIsIPAddr(t *testing.T) {
	for _, s := range []string{"", "127.0.0.1", "1.2.3", "01.2.3.4", "256.1.1.1", "::1", "fe80::1%eth0", "::ffff:1.2.3.4",
		"localhost", "s3.example.com", "1s3.example", "1.2.3.4.", "bucket-1", "10.0.0.1a", "1:2", "1.2.3.4:80"} {
		_, err := netip.ParseAddr(s)
		if got := isIPAddr(s); got != (err == nil) {
			t.Errorf("isIPAddr(%q) = %v, netip.ParseAddr err = %v", s, got, err)
		}
	}
}

func FuzzIsIPAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::1", "localhost", "1.2.3.4.", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := netip.ParseAddr(s)
		if got := isIPAddr(s); got != (err == nil) {
			t.Fatalf("isIPAddr(%q) = %v, netip.ParseAddr err = %v", s, got, err)
		}
	})
}
