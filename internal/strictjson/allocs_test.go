//go:build !race

// Allocation counts are not meaningful under the race detector.

package strictjson

import "testing"

func TestCheckAllocs(t *testing.T) {
	data := []byte(`{"region":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":{"A":["1","2"]},"x":[1,{"y":null}]}`)
	if n := testing.AllocsPerRun(100, func() { _ = Check(data, Options{MaxValues: 100}) }); n != 0 {
		t.Fatalf("Check allocates %v times without UniqueNames", n)
	}
}
