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

// HasControl agrees with a byte-by-byte reading for every byte value at
// every position of strings up to 24 bytes, with and without a tab allowed.
func TestHasControl(t *testing.T) {
	slow := func(s []byte, allowTab bool) bool {
		for _, c := range s {
			if (c < 0x20 && !(allowTab && c == '\t')) || c == 0x7f {
				return true
			}
		}
		return false
	}
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := make([]byte, n)
				for i := range b {
					b[i] = 'a' + byte(i%26)
				}
				b[pos] = byte(c)
				for _, tab := range []bool{false, true} {
					want := slow(b, tab)
					if got := HasControl(b, tab); got != want {
						t.Fatalf("HasControl(%q, %v) = %v, want %v", b, tab, got, want)
					}
					if got := HasControl(string(b), tab); got != want {
						t.Fatalf("HasControl(string %q, %v) = %v, want %v", b, tab, got, want)
					}
				}
			}
		}
	}
}
