package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestDeleteObjectsBodyBoundToSignature: a caller who got "delete a" signed
// must not be able to send a body that deletes something else.
func TestDeleteObjectsBodyBoundToSignature(t *testing.T) {
	h := newHarness(t)
	for _, k := range []string{"wh/t/a.parquet", "wh/t/precious.parquet"} {
		h.adminPut(t, "lake", k, []byte("x"))
	}
	uri := styles(h.s3.Port)[0].bucket("lake") + "?delete"
	signedBody := deleteXML("wh/t/a.parquet")
	evilBody := deleteXML("wh/t/precious.parquet")

	for _, binding := range []struct {
		name    string
		headers map[string][]string
	}{
		{"Content-MD5", javaHeaders("Content-Type", "application/xml", "Content-MD5", md5Base64(signedBody))},
		{"x-amz-checksum-crc32", javaHeaders("Content-Type", "application/xml", "x-amz-checksum-crc32", crc32Base64(signedBody))},
	} {
		t.Run(binding.name, func(t *testing.T) {
			sb := string(signedBody)
			status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "POST", Headers: binding.headers, Body: &sb})
			if status != http.StatusOK {
				t.Fatalf("sign: %d %+v", status, ierr)
			}
			// Same length, different key: only the binding header catches it.
			evil := bytes.Replace(evilBody, []byte("precious"), []byte("precious"), 1)
			st, body := h.s3.send(t, "POST", res.URI, res.Headers, evil)
			if st < 400 {
				t.Fatalf("S3 accepted a body that differs from the signed one: %d %s", st, body)
			}
			if !h.adminExists(t, "lake", "wh/t/precious.parquet") {
				t.Fatal("the unsigned key was deleted")
			}
		})
	}

	// A body whose binding header does not match is refused before signing.
	sb := string(signedBody)
	status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "POST",
		Headers: javaHeaders("Content-MD5", md5Base64(evilBody)), Body: &sb})
	if status != http.StatusBadRequest || res != nil || !strings.Contains(ierr.Error.Message, "Content-MD5") {
		t.Fatalf("mismatched Content-MD5: %d %+v", status, ierr)
	}
}

// TestRefusedRequestsAreNotSigned: hosts, regions, buckets and operations
// outside the configuration get 403 and no signature.
func TestRefusedRequestsAreNotSigned(t *testing.T) {
	h := newHarness(t)
	port := h.s3.Port
	p := styles(port)[0]
	cases := []struct {
		name, method, uri, region string
		headers                   map[string][]string
		msg                       string
	}{
		{"unknown host", "GET", "http://evil.example:1234/lake/k", testRegion, nil, "not a configured S3 endpoint"},
		{"right host wrong port", "GET", strings.Replace(p.object("lake", "k"), "localhost:"+itoa(port), "localhost:"+itoa(port^1), 1), testRegion, nil, "not a configured"},
		{"https to http endpoint", "GET", strings.Replace(p.object("lake", "k"), "http://", "https://", 1), testRegion, nil, "not a configured"},
		{"region not allowed", "GET", p.object("lake", "k"), "eu-west-1", nil, "region \"eu-west-1\" is not allowed"},
		{"denied bucket", "GET", p.object("private", "k"), testRegion, nil, "GetObject on arn:aws:s3:::private/k"},
		{"denied key", "GET", p.object("lake", "denied/k"), testRegion, nil, "GetObject on arn:aws:s3:::lake/denied/k"},
		{"admin: put acl", "PUT", p.object("lake", "k") + "?acl", testRegion, nil, "PutObjectAcl"},
		{"admin: bucket policy", "PUT", p.bucket("lake") + "?policy", testRegion, nil, "PutBucketPolicy"},
		{"admin: create bucket", "PUT", p.bucket("newbucket"), testRegion, nil, "CreateBucket"},
		{"admin: list buckets", "GET", "http://localhost:" + itoa(port) + "/", testRegion, nil, "ListBuckets"},
		{"unknown parameter", "GET", p.object("lake", "k") + "?foo=bar", testRegion, nil, "Unknown"},
		{"copy from denied bucket", "PUT", p.object("lake", "k"), testRegion, javaHeaders("x-amz-copy-source", "private/secret"), "copy source"},
		{"delete with denied key", "POST", p.bucket("lake") + "?delete", testRegion, nil, "arn:aws:s3:::lake/denied/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sr := signRequest{Region: tc.region, URI: tc.uri, Method: tc.method, Headers: tc.headers}
			if sr.Headers == nil {
				sr.Headers = javaHeaders()
			}
			if strings.HasSuffix(tc.uri, "?delete") {
				b := deleteXML("wh/ok.parquet", "denied/x", "wh/ok2.parquet")
				s := string(b)
				sr.Body = &s
				sr.Headers = javaHeaders("Content-MD5", md5Base64(b))
			}
			status, res, ierr, _ := h.cs.sign(t, "", sr)
			if status != http.StatusForbidden || res != nil {
				t.Fatalf("status %d result %+v, want 403 and no signature", status, res)
			}
			if ierr.Error.Type != "ForbiddenException" || !strings.Contains(ierr.Error.Message, tc.msg) {
				t.Fatalf("error %+v, want message containing %q", ierr.Error, tc.msg)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestMalformedRequests: every malformed request gets 400 with a message
// naming the problem, and the server keeps serving.
func TestMalformedRequests(t *testing.T) {
	h := newHarness(t)
	obj := styles(h.s3.Port)[0].object("lake", "k")
	cases := []struct {
		name, body, msg string
		status          int
	}{
		{"not json", `{"region":`, "invalid sign request", 400},
		{"not an object", `[1,2]`, "invalid sign request", 400},
		{"missing region", `{"uri":"` + obj + `","method":"GET","headers":{}}`, `"region"`, 400},
		{"missing uri", `{"region":"us-east-1","method":"GET","headers":{}}`, `"uri"`, 400},
		{"missing headers", `{"region":"us-east-1","uri":"` + obj + `","method":"GET"}`, `"headers"`, 400},
		{"bad method", `{"region":"us-east-1","uri":"` + obj + `","method":"FETCH","headers":{}}`, `"method"`, 400},
		{"header not array", `{"region":"us-east-1","uri":"` + obj + `","method":"GET","headers":{"Range":"bytes=0-1"}}`, "Range", 400},
		{"other provider", `{"region":"us-east-1","uri":"` + obj + `","method":"GET","headers":{},"provider":"gcs"}`, "provider", 400},
		{"crlf in header", `{"region":"us-east-1","uri":"` + obj + `","method":"GET","headers":{"X-A":["a\r\nHost: evil"]}}`, "X-A", 400},
		{"relative uri", `{"region":"us-east-1","uri":"/lake/k","method":"GET","headers":{}}`, "absolute", 400},
		{"presigned uri", `{"region":"us-east-1","uri":"` + obj + `?X-Amz-Signature=00","method":"GET","headers":{}}`, "presigned", 400},
		{"encoded slash", `{"region":"us-east-1","uri":"` + obj + `%2Fx","method":"GET","headers":{}}`, "canonical S3 encoding", 400},
		{"dot segments", `{"region":"us-east-1","uri":"` + obj + `/../x","method":"GET","headers":{}}`, `".."`, 400},
		{"client already signed", `{"region":"us-east-1","uri":"` + obj + `","method":"GET","headers":{"Authorization":["AWS4-HMAC-SHA256 x"]}}`, "Authorization", 400},
		{"delete without body", `{"region":"us-east-1","uri":"` + strings.TrimSuffix(obj, "k") + `?delete","method":"POST","headers":{}}`, "body", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, res, ierr, _ := h.cs.post(t, "", []byte(tc.body))
			if status != tc.status || res != nil {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if !strings.Contains(ierr.Error.Message, tc.msg) {
				t.Fatalf("message %q does not name %q", ierr.Error.Message, tc.msg)
			}
		})
	}
	// An oversized body is refused from its Content-Length, before it is read.
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.cs.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 4<<20)
	resp0, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body0, _ := io.ReadAll(resp0.Body)
	if resp0.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body0), "larger than the configured limit") {
		t.Fatalf("oversized: %d %s", resp0.StatusCode, body0)
	}

	// Wrong method and unknown routes use the same error model.
	resp, err := http.Get(h.cs.url + "/v1/aws/s3/sign")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET sign route: %d", resp.StatusCode)
	}
	if st, _, _, _ := h.cs.post(t, "/v1/aws/s3/signx", []byte("{}")); st != http.StatusNotFound {
		t.Fatalf("unknown route: %d", st)
	}
	// Still alive and ready.
	resp, err = http.Get(h.cs.url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz after malformed input: %v %v", err, resp)
	}
	resp.Body.Close()
}

// TestTableRoutes: the Iceberg 1.11 per-table routes sign like the legacy
// one, with and without a prefix, including multi-level namespaces.
func TestTableRoutes(t *testing.T) {
	h := newHarness(t)
	h.adminPut(t, "lake", "wh/db/t/data/f.parquet", []byte("PAR1"))
	uri := styles(h.s3.Port)[0].object("lake", "wh/db/t/data/f.parquet")
	for _, route := range []string{
		"/v1/aws/s3/sign",
		"/v1/namespaces/db/tables/t/sign",
		"/v1/prod/namespaces/db/tables/t/sign",
		"/v1/prod%2Fwh/namespaces/a%1Fb/tables/t/sign",
	} {
		status, res, ierr, _ := h.cs.sign(t, route, signRequest{Region: testRegion, URI: uri, Method: "GET", Headers: javaHeaders()})
		if status != http.StatusOK {
			t.Fatalf("%s: %d %+v", route, status, ierr)
		}
		if st, body := h.s3.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || string(body) != "PAR1" {
			t.Fatalf("%s: S3 answered %d %s", route, st, body)
		}
	}
	for _, route := range []string{
		"/v1/namespaces//tables/t/sign",
		"/v1/namespaces/db/tables/t/sign/x",
		"/v1/a/b/namespaces/db/tables/t/sign",
		"/v1/namespaces/a%1F%1Fb/tables/t/sign",
		"/v1/namespaces/db/tables/t%C3%28/sign",
	} {
		if st, _, _, _ := h.cs.sign(t, route, signRequest{Region: testRegion, URI: uri, Method: "GET", Headers: javaHeaders()}); st != http.StatusNotFound {
			t.Fatalf("%s: status %d, want 404", route, st)
		}
	}
}
