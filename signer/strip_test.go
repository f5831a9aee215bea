package signer

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// stripReference is appendStripped as it was, a byte at a time.
func stripReference(s string, trim bool) []byte {
	var b []byte
	j := len(s) - 1
	for j >= 0 && s[j] == ' ' {
		j--
	}
	k := 0
	for k < j && s[k] == ' ' {
		k++
	}
	s = s[k : j+1]
	spaces := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if spaces == 0 {
				b = append(b, ' ')
			}
			spaces++
			continue
		}
		spaces = 0
		b = append(b, s[i])
	}
	if trim {
		b = bytes.TrimSpace(b)
	}
	return b
}

// TestAppendStrippedFastPath: the one-copy path for values without a run
// of spaces gives exactly the byte-at-a-time result.
func TestAppendStrippedFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		var sb strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			sb.WriteByte(" \tab="[rng.IntN(5)])
		}
		s := sb.String()
		for _, trim := range []bool{false, true} {
			got := appendStripped([]byte("prefix:"), s, trim)
			if want := append([]byte("prefix:"), stripReference(s, trim)...); !bytes.Equal(got, want) {
				t.Fatalf("appendStripped(%q, %v) = %q, want %q", s, trim, got, want)
			}
		}
	}
}

// BenchmarkAppendStrippedToken: a session token's value (2,400 bytes, as
// SeaweedFS's with a session policy): 8.9-23 µs a byte at a time before
// the one-copy path, 0.39-0.50 µs with it (-count 3 each, on the loaded
// 2-core machine).
func BenchmarkAppendStrippedToken(b *testing.B) {
	tok := strings.Repeat("eyJhbGciOiJIUzI1NiJ9", 120)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendStripped(buf[:0], tok, true)
	}
}
