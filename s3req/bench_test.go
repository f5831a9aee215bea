package s3req

import (
	"testing"

	"github.com/countersign/countersign/remotesign"
)

// BenchmarkClassify is the classify stage on a scan's footer read (the
// Java client's headers, an Iceberg data file key).
func BenchmarkClassify(b *testing.B) {
	c := testClassifier(b)
	in := &remotesign.Request{
		Method: "GET",
		Region: "us-east-1",
		URI:    "http://localhost:7070/lake/wh/db/t3/data/day%3D2026-11-30/00042-17-7f3c9a1e-5b2d-4c8e-9f01-23456789abcd-00001.parquet",
		Headers: remotesign.Headers{
			{Name: "amz-sdk-invocation-id", Values: []string{"7b1c3a44-5d6e-4f10-9a2b-3c4d5e6f7a8b"}},
			{Name: "amz-sdk-request", Values: []string{"attempt=1; max=4"}},
			{Name: "Range", Values: []string{"bytes=-8192"}},
			{Name: "User-Agent", Values: []string{"aws-sdk-java/2.29.52 Linux/6.1 OpenJDK_64-Bit_Server_VM/17"}},
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Classify(in)
		if err != nil || len(r.Targets) != 1 {
			b.Fatal(err)
		}
	}
}
