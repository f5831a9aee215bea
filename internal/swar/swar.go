// Package swar tests eight bytes at a time ("SIMD within a register").
//
// The hot loops that look at every byte of every string (remotesign's
// syntax and control character checks, internal/jsonstr's escaping) test
// a whole word first: the long plain-ASCII runs that URIs, User-Agents,
// keys and signatures consist of then cost a fraction of a byte-by-byte
// loop, and the per-byte code handles only the words that failed the test.
// The functions are small enough to be inlined into their callers.
package swar

const (
	lsb = 0x0101010101010101
	// MSB has the high bit of every byte set: x&MSB == 0 iff all eight
	// bytes of x are ASCII.
	MSB = 0x8080808080808080
)

// Less is non-zero iff some byte of x is below n (n <= 0x80). Bytes >= 0x80
// never count. A borrow can only set bits above a byte that really is below
// n, so the result is exact as a boolean.
func Less(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) &^ x & MSB }

// Equal is non-zero iff some byte of x equals c.
func Equal(x uint64, c byte) uint64 { return Less(x^(lsb*uint64(c)), 1) }

// Load64 reads eight bytes of s at i, little-endian; the compiler turns it
// into one load.
func Load64[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// HasControl reports whether s has a control character: a byte below 0x20
// (but a tab when allowTab) or DEL. It tests a word at a time, and the
// bytes one by one only in a word that has one of them.
func HasControl[T string | []byte](s T, allowTab bool) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if x := Load64(s, i); Less(x, 0x20)|Equal(x, 0x7f) != 0 && hasControlSlow(s[i:i+8], allowTab) {
			return true
		}
	}
	return hasControlSlow(s[i:], allowTab)
}

func hasControlSlow[T string | []byte](s T, allowTab bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			if c == '\t' && allowTab {
				continue
			}
			return true
		}
	}
	return false
}
