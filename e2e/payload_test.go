package e2e

import (
	"net/http"
	"slices"
	"testing"
)

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// TestEmptyPutBindsEmptyBody is the regression test for the zero
// Content-Length finding (SECURITY.md): SigV4 signers sign content-length
// only when it is positive, so an empty PUT signed with UNSIGNED-PAYLOAD let
// its holder write a body of any length. countersign signs the empty
// payload's hash instead, and the S3 server refuses any other body.
func TestEmptyPutBindsEmptyBody(t *testing.T) {
	h := newHarness(t)
	st := styles(h.s3.Port)[0]
	uri := st.object("lake", "wh/db/t/data/_SUCCESS")

	status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "PUT", Headers: javaHeaders("Content-Length", "0")})
	if status != http.StatusOK {
		t.Fatalf("sign empty PUT: status %d: %+v", status, ierr)
	}
	if got := res.Headers["x-amz-content-sha256"]; !slices.Equal(got, []string{emptySHA256}) {
		t.Fatalf("empty PUT signed with x-amz-content-sha256 %v, want the empty payload's hash", got)
	}
	if !slices.Contains(signedHeaders(t, res.Headers), "x-amz-content-sha256") {
		t.Fatal("x-amz-content-sha256 is not signed")
	}

	// The holder of the signature tries to write content with it.
	for _, body := range [][]byte{[]byte("x"), []byte("attacker-chosen content")} {
		if code, out := h.s3.send(t, "PUT", res.URI, res.Headers, body); code < 400 {
			t.Fatalf("signed empty PUT sent with a %d-byte body: S3 answered %d, want a refusal\n%s", len(body), code, out)
		}
		if h.adminExists(t, "lake", "wh/db/t/data/_SUCCESS") {
			t.Fatalf("a %d-byte body was written with a signature for an empty PUT", len(body))
		}
	}
	// The request it was signed for still works.
	if code, out := h.s3.send(t, "PUT", res.URI, res.Headers, []byte{}); code != http.StatusOK {
		t.Fatalf("signed empty PUT: S3 answered %d\n%s", code, out)
	}
	if got := h.adminGet(t, "lake", "wh/db/t/data/_SUCCESS"); len(got) != 0 {
		t.Fatalf("empty PUT wrote %d bytes", len(got))
	}

	// A non-zero length keeps UNSIGNED-PAYLOAD (countersign never sees the
	// body) with the length signed.
	status, res, ierr, _ = h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "PUT", Headers: javaHeaders("Content-Length", "5")})
	if status != http.StatusOK {
		t.Fatalf("sign 5-byte PUT: status %d: %+v", status, ierr)
	}
	if got := res.Headers["x-amz-content-sha256"]; !slices.Equal(got, []string{"UNSIGNED-PAYLOAD"}) {
		t.Fatalf("5-byte PUT signed with x-amz-content-sha256 %v, want UNSIGNED-PAYLOAD", got)
	}
	if !slices.Contains(signedHeaders(t, res.Headers), "content-length") {
		t.Fatalf("5-byte PUT: content-length not signed: %v", signedHeaders(t, res.Headers))
	}
	if code, out := h.s3.send(t, "PUT", res.URI, res.Headers, []byte("123456")); code < 400 {
		t.Fatalf("5-byte PUT sent with 6 bytes: S3 answered %d\n%s", code, out)
	}
}
