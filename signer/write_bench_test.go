package signer

import (
	"context"
	"testing"

	"github.com/countersign/countersign/s3req"
)

// BenchmarkSignWritePart is one part of a multipart write as countersign
// bench sends it (bench/workload.go): signed headers the Java SDK spells
// with capitals (Content-Length, Content-Type), which the canonical
// request lower-cases.
func BenchmarkSignWritePart(b *testing.B) {
	s := New(staticCreds(""), Options{})
	r := &s3req.Request{
		Method: "PUT", Region: "us-east-1", Scheme: "http",
		Host:     "127.0.0.1:7070",
		RawPath:  "/lake/wh/db/t3/data/ts_day=2026-11-30/00042-7-6f1c2d3e-00001.parquet",
		RawQuery: "partNumber=2&uploadId=2~abcdefghijklmnopqrstuvwxyz012345",
		Headers: hdrs(
			"amz-sdk-invocation-id", "7b1c3a44-5d6e-4f10-9a2b-3c4d5e6f7a8b",
			"amz-sdk-request", "attempt=1; max=4",
			"Content-Length", "8388608",
			"Content-Type", "application/octet-stream",
			"Expect", "100-continue",
			"User-Agent", "aws-sdk-java/2.29.52 Linux/6.1 OpenJDK_64-Bit_Server_VM/21 Java/21 vendor/Eclipse_Adoptium io/sync http/Apache cfg/retry-mode/standard",
			"x-amz-content-sha256", "UNSIGNED-PAYLOAD",
		),
		ContentSHA256: "UNSIGNED-PAYLOAD",
	}
	ctx := context.Background()
	if _, err := s.Sign(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
