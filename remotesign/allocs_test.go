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
	// Request, its string arena, header slice, values slice, properties map.
	if allocs > 6 {
		t.Errorf("Decode allocates %.0f times per call, want at most 6", allocs)
	}
}
