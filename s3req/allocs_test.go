//go:build !race

// Allocation counts are not meaningful under the race detector.

package s3req

import (
	"testing"

	"github.com/countersign/countersign/remotesign"
)

// TestClassifyAllocs: a scan's read classifies into its Request and
// nothing else (the one target lives in the Request, the key's encoding is
// checked without building it); a key with an escape adds its decoded
// copy; a copy adds its two targets' own array and its source's.
func TestClassifyAllocs(t *testing.T) {
	c := testClassifier(t)
	headers := remotesign.Headers{
		{Name: "amz-sdk-request", Values: []string{"attempt=1; max=4"}},
		{Name: "Range", Values: []string{"bytes=-8192"}},
	}
	for _, tc := range []struct {
		uri     string
		headers remotesign.Headers
		want    float64
	}{
		{"http://localhost:7070/lake/wh/db/t3/data/00042-17-7f3c9a1e-00001.parquet", headers, 1},
		{"http://localhost:7070/lake/wh/db/t3/data/day%3D2026-11-30/00042-17-7f3c9a1e-00001.parquet", headers, 2},
		{"http://localhost:7070/lake/wh/db/t3/data/b.parquet", remotesign.Headers{{Name: "x-amz-copy-source", Values: []string{"/lake/wh/db/t3/data/a.parquet"}}}, 3},
	} {
		in := &remotesign.Request{Method: "GET", Region: "us-east-1", URI: tc.uri, Headers: tc.headers}
		if tc.headers[0].Name == "x-amz-copy-source" {
			in.Method = "PUT"
		}
		got := testing.AllocsPerRun(100, func() {
			r, err := c.Classify(in)
			if err != nil {
				t.Fatal(err)
			}
			if r.Targets[0].Key == "" {
				t.Fatal("no key")
			}
		})
		if got > tc.want {
			t.Errorf("%s %s: %.0f allocations, want at most %.0f", in.Method, tc.uri, got, tc.want)
		}
		var r Request
		got = testing.AllocsPerRun(100, func() {
			if err := c.ClassifyInto(&r, in); err != nil {
				t.Fatal(err)
			}
		})
		if got > tc.want-1 {
			t.Errorf("%s %s into the caller's Request: %.0f allocations, want at most %.0f", in.Method, tc.uri, got, tc.want-1)
		}
	}
}
