package audit

import (
	"strings"
	"testing"
)

// isHexDigestLoop is the byte-by-byte definition isHexDigest must match.
func isHexDigestLoop(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TestIsHexDigest puts every byte value at every position of a valid
// digest (each of the 16 digits as the background) and compares with the
// byte loop; then lengths around 64.
func TestIsHexDigest(t *testing.T) {
	accepted := 0
	for _, bg := range "0123456789abcdef" {
		base := []byte(strings.Repeat(string(bg), 64))
		for pos := range 64 {
			for c := range 256 {
				b := append([]byte(nil), base...)
				b[pos] = byte(c)
				s := string(b)
				got, want := isHexDigest(s), isHexDigestLoop(s)
				if got != want {
					t.Fatalf("isHexDigest(%q) = %v, want %v (byte %#x at %d)", s, got, want, c, pos)
				}
				if got {
					accepted++
				}
			}
		}
	}
	if want := 16 * 64 * 16; accepted != want {
		t.Fatalf("accepted %d strings, want %d (16 digits at each position of each background)", accepted, want)
	}
	for _, n := range []int{0, 1, 63, 65, 128} {
		if isHexDigest(strings.Repeat("a", n)) {
			t.Errorf("isHexDigest accepts %d hex digits", n)
		}
	}
	for _, s := range []string{strings.Repeat("A", 64), strings.Repeat("g", 64), strings.Repeat("/", 64), strings.Repeat(":", 64), strings.Repeat("`", 64), strings.Repeat("\xb0", 64)} {
		if isHexDigest(s) {
			t.Errorf("isHexDigest accepts %q", s)
		}
	}
}

// BenchmarkValidateSigned is validate on an allowed, signed record (the
// signed request's record): its two signing digests dominate.
func BenchmarkValidateSigned(b *testing.B) {
	r := signedRecord(42)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.validate(false); err != nil {
			b.Fatal(err)
		}
	}
}
