//go:build !race

// Allocation counts are not meaningful under the race detector, so these
// tests are built only without it; make unit runs them in a second,
// race-free pass.

package remotesign

import "testing"

func TestDecodeAllocs(t *testing.T) {
	body := []byte(readFixture(t, "java_get.json"))
	var d Decoder
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(body, Limits{}); err != nil {
			t.Fatal(err)
		}
	})
	// The string arena, the Request's box (its headers and values inside),
	// the properties map's header and buckets.
	if allocs > 4 {
		t.Errorf("Decode allocates %.0f times per call, want at most 4", allocs)
	}
	// Without properties, as the Java client sends a read: the arena and
	// the box.
	body = []byte(`{"region":"us-east-1","uri":"http://localhost:7070/lake/a","method":"GET",` +
		`"headers":{"amz-sdk-invocation-id":["7b1c3a44"],"amz-sdk-request":["attempt=1; max=4"],"Range":["bytes=-8192"],"User-Agent":["aws-sdk-java/2.29.52"]}}`)
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(body, Limits{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("Decode of a read allocates %.0f times per call, want at most 2", allocs)
	}
}
