package remotesign

import "testing"

// The word-at-a-time tests must agree with a byte-by-byte reading for every
// byte value at every position, next to every other byte value (borrows
// propagate between neighbours).
func TestSWAR(t *testing.T) {
	for _, fill := range []byte{0x00, 0x41, 0x7f, 0x80, 0xff} {
		for pos := 0; pos < 7; pos++ {
			for a := 0; a < 256; a++ {
				for b := 0; b < 256; b++ {
					var w [8]byte
					for i := range w {
						w[i] = fill
					}
					w[pos], w[pos+1] = byte(a), byte(b)
					x := load64(w[:], 0)
					for _, n := range []byte{1, 0x20, 0x80} {
						want := false
						for _, c := range w {
							want = want || c < n
						}
						if got := less(x, n) != 0; got != want {
							t.Fatalf("less(% x, %#x) = %v, want %v", w, n, got, want)
						}
					}
					for _, c := range []byte{'"', '\\', 0x7f} {
						want := false
						for _, v := range w {
							want = want || v == c
						}
						if got := equal(x, c) != 0; got != want {
							t.Fatalf("equal(% x, %q) = %v, want %v", w, c, got, want)
						}
					}
				}
			}
		}
	}
}

func TestHasControl(t *testing.T) {
	for _, tc := range []struct {
		s             string
		strict, field bool // hasControl(s, false), hasControl(s, true)
	}{
		{"", false, false},
		{"plain ascii text longer than one word", false, false},
		{"tab\there", true, false},
		{"0123456\t", true, false},
		{"01234567\t", true, false},
		{"0123456789abcdef\x00", true, true},
		{"01234567\x7f", true, true},
		{"\x1f", true, true},
		{"naïve 日本語 éééééééé", false, false},
		{"\x80\x9f\xff\xfe\xc2\x85xxxx", false, false}, // C1 controls as bytes are not ASCII controls
	} {
		if got := hasControl([]byte(tc.s), false); got != tc.strict {
			t.Errorf("hasControl(%q, false) = %v", tc.s, got)
		}
		if got := hasControl([]byte(tc.s), true); got != tc.field {
			t.Errorf("hasControl(%q, true) = %v", tc.s, got)
		}
	}
}
