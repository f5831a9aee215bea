package swar

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
					x := Load64(w[:], 0)
					for _, n := range []byte{1, 0x20, 0x80} {
						want := false
						for _, c := range w {
							want = want || c < n
						}
						if got := Less(x, n) != 0; got != want {
							t.Fatalf("Less(% x, %#x) = %v, want %v", w, n, got, want)
						}
					}
					for _, c := range []byte{'"', '\\', 0x7f} {
						want := false
						for _, v := range w {
							want = want || v == c
						}
						if got := Equal(x, c) != 0; got != want {
							t.Fatalf("Equal(% x, %q) = %v, want %v", w, c, got, want)
						}
					}
				}
			}
		}
	}
}
