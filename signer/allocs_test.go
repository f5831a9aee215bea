//go:build !race

// Allocation counts are not meaningful under the race detector, so these
// tests are built only without it; make unit runs them in a second,
// race-free pass.

package signer

import (
	"context"
	"testing"

	"github.com/countersign/countersign/s3req"
)

// TestSignAllocs holds the hot path to its measured allocation (the SDK's
// signer made 44): the one box of the result (signedBox: the string of the
// date, Authorization and digests, the added header values, the
// signed-header list, the returned header slice). Header names the client
// spells with capitals (Range, If-Match here) are lowered into the state's
// buffer, without allocating.
func TestSignAllocs(t *testing.T) {
	s := New(staticCreds(testToken), Options{})
	r := &s3req.Request{
		Method: "GET", Region: "us-east-1", Scheme: "https",
		Host:    "lake.s3.us-east-1.amazonaws.com",
		RawPath: "/warehouse/db/events/data/00042-17-7f3c9a1e-00001.parquet",
		Headers: hdrs(
			"amz-sdk-request", "attempt=1; max=4",
			"Range", "bytes=4-1048579",
			"If-Match", `"9b2cf535f27731c974343645a3985328"`,
			"x-amz-expected-bucket-owner", "111122223333",
		),
		ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
	}
	assertSignAllocs(t, s, r, "", 1)
}

// TestSignWriteAllocs holds a multipart write's part to the same one
// allocation: capitalised signed header names (Content-Type) and a
// query sorted by keys and values longer than 32 bytes (uploadId) cost
// none.
func TestSignWriteAllocs(t *testing.T) {
	s := New(staticCreds(""), Options{})
	r := &s3req.Request{
		Method: "PUT", Region: "us-east-1", Scheme: "https",
		Host:     "lake.s3.us-east-1.amazonaws.com",
		RawPath:  "/warehouse/db/events/data/00042-17-7f3c9a1e-00001.parquet",
		RawQuery: "uploadId=2~abcdefghijklmnopqrstuvwxyz0123456789ABCDEF&partNumber=7",
		Headers: hdrs(
			"amz-sdk-request", "attempt=1; max=4",
			"Content-Length", "8388608",
			"Content-Type", "application/octet-stream",
			"Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==",
		),
		ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
	}
	assertSignAllocs(t, s, r, " for a part", 1)
}

// assertSignAllocs fails t if s.Sign(r) allocates more than most times per
// call, averaged over 200 calls (a failed Sign fails t too); what, after
// "per call", names the request in the message.
func assertSignAllocs(t *testing.T, s *Signer, r *s3req.Request, what string, most float64) {
	t.Helper()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := s.Sign(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > most {
		t.Errorf("Sign allocates %.0f times per call%s, want at most %.0f", allocs, what, most)
	}
	// Into the caller's storage, the result's box is not allocated. (One
	// Storage for all the calls: each result is dropped before the next.)
	out := new(Storage)
	allocs = testing.AllocsPerRun(200, func() {
		if _, err := s.SignInto(ctx, r, Caller{}, out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > most-1 {
		t.Errorf("SignInto allocates %.0f times per call%s, want at most %.0f", allocs, what, most-1)
	}
}
