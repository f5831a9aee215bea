package remotesign

// Word-at-a-time byte tests ("SIMD within a register"). The hot loops of
// this package look at every byte of every string: syntax checking, control
// character checks and JSON escaping. Testing eight bytes per step makes
// the long plain-ASCII runs that URIs, User-Agents and signatures consist
// of several times cheaper; the per-byte code then handles whatever made a
// word fail the test.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// less is non-zero iff some byte of x is below n (n <= 0x80). Bytes >= 0x80
// never count. A borrow can only set bits above a byte that really is below
// n, so the result is exact as a boolean.
func less(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) &^ x & msb }

// equal is non-zero iff some byte of x equals c.
func equal(x uint64, c byte) uint64 { return less(x^(lsb*uint64(c)), 1) }

// load64 reads eight bytes of s at i, little-endian; the compiler turns it
// into one load.
func load64[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}
