package remotesign

import (
	"strings"
	"sync"
	"testing"
)

// BenchmarkDecode decodes the request the Java S3V4RestSignerClient sends
// for a ranged Parquet read, the most common call of a table scan.
func BenchmarkDecode(b *testing.B) {
	body := []byte(readFixture(b, "java_get.json"))
	var d Decoder
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(body, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeParallel(b *testing.B) {
	body := []byte(readFixture(b, "java_get.json"))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	// A Decoder per request from a pool, as server's Handler takes them.
	pool := sync.Pool{New: func() any { return new(Decoder) }}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d := pool.Get().(*Decoder)
			_, err := d.Decode(body, Limits{})
			pool.Put(d)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// signedResult is a realistic response to java_get.json: the echoed headers
// plus SigV4's, with a session token.
func signedResult() (string, Headers) {
	uri := "https://lake-prod.s3.us-west-2.amazonaws.com/warehouse/sales.db/orders/data/00042-17-8e4f2b6a-3c1d-4e0f-9a7b-5d6c2e1f0a9b-00001.parquet"
	return uri, Headers{
		{Name: "amz-sdk-invocation-id", Values: []string{"5d0b5b6e-97c4-1f0e-a8a1-3b2f1c9d4e77"}},
		{Name: "amz-sdk-request", Values: []string{"attempt=1; max=4"}},
		{Name: "Range", Values: []string{"bytes=4-1048579"}},
		{Name: "User-Agent", Values: []string{"aws-sdk-java/2.29.52 Linux/6.8.0 Java/17.0.13 vendor/Eclipse_Adoptium io/sync http/Apache cfg/retry-mode/legacy"}},
		{Name: "x-amz-content-sha256", Values: []string{"UNSIGNED-PAYLOAD"}},
		{Name: "X-Amz-Date", Values: []string{"20260115T093012Z"}},
		{Name: "X-Amz-Security-Token", Values: []string{strings.Repeat("IQoJb3JpZ2luX2VjEPr//////////wEaCXVzLXdlc3QtMiJHMEUCIQ", 5)}},
		{Name: "Authorization", Values: []string{"AWS4-HMAC-SHA256 Credential=ASIAQEXAMPLEEXAMPLE7/20260115/us-west-2/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"}},
	}
}

func BenchmarkAppendResult(b *testing.B) {
	uri, headers := signedResult()
	buf := AppendResult(nil, uri, headers)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResult(buf[:0], uri, headers)
	}
}

func TestBenchmarkSizes(t *testing.T) {
	// Keep the inputs the sizes a scan sends: Java's GET sign request and a
	// signed answer of about 1 KB.
	if n := len(readFixture(t, "java_get.json")); n < 500 || n > 600 {
		t.Errorf("java_get.json is %d bytes, want about 540", n)
	}
	uri, headers := signedResult()
	if n := len(AppendResult(nil, uri, headers)); n < 900 || n > 1100 {
		t.Errorf("benchmark response is %d bytes, want about 1 KB", n)
	}
}
