//go:build !race

// Allocation counts are not meaningful under the race detector, so these
// tests are built only without it; make unit runs them in a second,
// race-free pass.

package jsonstr

import (
	"strings"
	"testing"
)

func TestAppendAllocs(t *testing.T) {
	s := "key/with \"quotes\", a\ttab, \xff, \u2028 and é " + strings.Repeat("plain ", 20)
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], s) }); n != 0 {
		t.Fatalf("Append allocates %v times into a large enough buffer", n)
	}
}
